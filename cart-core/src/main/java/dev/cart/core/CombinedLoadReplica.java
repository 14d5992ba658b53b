package dev.cart.core;

import dev.cart.core.spi.Replica;
import dev.cart.core.sync.RemoteLoad;
import org.jspecify.annotations.Nullable;

/**
 * A candidate as a policy sees it when other instances share the pool ({@link RemoteLoad}): this
 * instance's live counts plus the others' figures as they were when the decision began. Everything else
 * is the replica's own; its pending prefill is read through the context
 * ({@link RouterContext#pendingPrefill}), this router's count plus {@link #remotePendingPrefill()}. Made per decision by the router and never handed out of it: the router unwraps
 * the policy's choice before taking a slot, and the decision names the replica itself.
 */
final class CombinedLoadReplica implements Replica {

    final Replica local;
    private final long remoteInFlight;
    private final long remotePending;

    CombinedLoadReplica(Replica local, long remoteInFlight, long remotePending) {
        this.local = local;
        this.remoteInFlight = Math.max(0, remoteInFlight);
        this.remotePending = Math.max(0, remotePending);
    }

    /** The replica behind {@code r} when it is a combined view, else {@code r}. */
    static Replica unwrap(Replica r) {
        return r instanceof CombinedLoadReplica c ? c.local : r;
    }

    @Override
    public String id() {
        return local.id();
    }

    @Override
    public int inFlight() {
        return (int) Math.min(Integer.MAX_VALUE, local.inFlight() + remoteInFlight);
    }

    @Override
    public int maxLoad() {
        return local.maxLoad();
    }

    @Override
    public int loadPenalty() {
        return local.loadPenalty();
    }

    @Override
    public boolean isAvailable() {
        return local.isAvailable();
    }

    @Override
    public @Nullable Admission tryAcquire() {
        return local.tryAcquire();
    }

    /** The other instances' pending prefill on the replica when the decision began. */
    long remotePendingPrefill() {
        return remotePending;
    }

    @Override
    public boolean serves(String model) {
        return local.serves(model);
    }

    @Override
    public String toString() {
        return local + "+remote(" + remoteInFlight + ")";
    }
}
