package dev.cart.core;

import dev.cart.core.internal.PrefixTree;
import dev.cart.core.spi.Replica;
import dev.cart.core.spi.ReplicaSet;
import dev.cart.core.spi.RoutingListener;
import dev.cart.core.sync.RemoteApply;
import dev.cart.core.sync.RemoteApplyStats;
import dev.cart.core.sync.RouteEvent;
import java.util.List;
import java.util.concurrent.atomic.LongAdder;
import org.jspecify.annotations.Nullable;

/**
 * Applies other instances' {@link RouteEvent}s to this router's tree: resolves replica ids to this
 * instance's replicas (unknown ids are ignored and counted), refuses its own events and keys of another
 * format, and goes through the tree's ordinary paths: a learned route as an insert (lock-free refresh or
 * the writer mutex, skipped under maintenance like a local insert), a forgotten branch as
 * {@link PrefixTree#forgetBranches}, a removal and a reset as maintenance passes. Nothing here makes a
 * match wait. Thread-safe; meant to be called from one transport thread, but any number work.
 */
final class RemoteRoutes {

    private final PrefixTree tree;
    private final ReplicaSet replicas;
    private final PromptKey.Unit unit;
    private final int blockSize;
    private final String ownOrigin;
    private final boolean learning;
    private final RoutingListener listener;
    /** By {@link RemoteApply#ordinal()}. */
    private final LongAdder[] counts = new LongAdder[RemoteApply.values().length];

    RemoteRoutes(
            PrefixTree tree,
            ReplicaSet replicas,
            PromptKey.Unit unit,
            int blockSize,
            String ownOrigin,
            boolean learning,
            RoutingListener listener) {
        this.tree = tree;
        this.replicas = replicas;
        this.unit = unit;
        this.blockSize = blockSize;
        this.ownOrigin = ownOrigin;
        this.learning = learning;
        this.listener = listener;
        for (RemoteApply a : RemoteApply.values()) {
            counts[a.ordinal()] = new LongAdder();
        }
    }

    RemoteApply apply(RouteEvent event) {
        RemoteApply result = applyOnce(event);
        counts[result.ordinal()].increment();
        return result;
    }

    private RemoteApply applyOnce(RouteEvent event) {
        if (event.origin().equals(ownOrigin)) {
            return RemoteApply.OWN_EVENT;
        }
        if (!learning) {
            return RemoteApply.NOT_LEARNING;
        }
        if (event instanceof RouteEvent.Learned l) {
            if (l.unit() != unit || l.blockSize() != blockSize) {
                return RemoteApply.OTHER_KEY_FORMAT;
            }
            Replica r = resolve(l.replicaId());
            if (r == null) {
                return RemoteApply.UNKNOWN_REPLICA;
            }
            if (!tree.insertRemote(l.blocks(), r, l.timeMillis())) {
                listener.onInsertSkipped();
                return RemoteApply.SKIPPED;
            }
            return RemoteApply.APPLIED;
        }
        if (event instanceof RouteEvent.Forgotten f) {
            if (f.unit() != unit || f.blockSize() != blockSize) {
                return RemoteApply.OTHER_KEY_FORMAT;
            }
            Replica r = resolve(f.replicaId());
            if (r == null) {
                return RemoteApply.UNKNOWN_REPLICA;
            }
            PromptKey key = PromptKey.forBlocks(f.blocks(), blockSize);
            return tree.forgetBranches(key, r, f.keepBlocks() * blockSize) < 0
                    ? RemoteApply.SKIPPED
                    : RemoteApply.APPLIED;
        }
        if (event instanceof RouteEvent.ReplicaRemoved rr) {
            Replica r = resolve(rr.replicaId());
            if (r == null) {
                return RemoteApply.UNKNOWN_REPLICA;
            }
            tree.removeReplica(r);
            return RemoteApply.APPLIED;
        }
        RouteEvent.Reset reset = (RouteEvent.Reset) event;
        tree.dropUntil(reset.timeMillis());
        return RemoteApply.APPLIED;
    }

    /** This instance's replica with that id, or null. A scan of the pool: pools are small. */
    private @Nullable Replica resolve(String id) {
        List<? extends Replica> all = replicas.replicas();
        for (int i = 0; i < all.size(); i++) {
            Replica r = all.get(i);
            if (r.id().equals(id)) {
                return r;
            }
        }
        return null;
    }

    RemoteApplyStats stats() {
        return new RemoteApplyStats(
                counts[RemoteApply.APPLIED.ordinal()].sum(),
                counts[RemoteApply.SKIPPED.ordinal()].sum(),
                counts[RemoteApply.OWN_EVENT.ordinal()].sum(),
                counts[RemoteApply.UNKNOWN_REPLICA.ordinal()].sum(),
                counts[RemoteApply.OTHER_KEY_FORMAT.ordinal()].sum(),
                counts[RemoteApply.NOT_LEARNING.ordinal()].sum());
    }
}
