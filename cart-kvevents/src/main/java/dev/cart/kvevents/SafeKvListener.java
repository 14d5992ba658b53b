package dev.cart.kvevents;

import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Calls the host's listener and drops what it throws (logged once): a metrics bug never stops a stream. */
final class SafeKvListener implements KvEventsListener {

    private static final Logger LOG = LoggerFactory.getLogger(SafeKvListener.class);
    private final KvEventsListener delegate;
    private volatile boolean logged;

    SafeKvListener(KvEventsListener delegate) {
        this.delegate = delegate;
    }

    private void failed(RuntimeException e) {
        if (!logged) {
            logged = true;
            LOG.error("KV-events listener failed (logged once; events go on)", e);
        }
    }

    @Override
    public void onBatchApplied(String replica, int rank, int stored, int removed, long lagNanos) {
        try {
            delegate.onBatchApplied(replica, rank, stored, removed, lagNanos);
        } catch (RuntimeException e) {
            failed(e);
        }
    }

    @Override
    public void onGap(String replica, int rank, long expected, long received) {
        try {
            delegate.onGap(replica, rank, expected, received);
        } catch (RuntimeException e) {
            failed(e);
        }
    }

    @Override
    public void onReplayRequested(String replica, int rank, long fromSeq, String reason) {
        try {
            delegate.onReplayRequested(replica, rank, fromSeq, reason);
        } catch (RuntimeException e) {
            failed(e);
        }
    }

    @Override
    public void onReplayEnded(String replica, int rank, int batches, boolean complete) {
        try {
            delegate.onReplayEnded(replica, rank, batches, complete);
        } catch (RuntimeException e) {
            failed(e);
        }
    }

    @Override
    public void onReset(String replica, int rank, String cause) {
        try {
            delegate.onReset(replica, rank, cause);
        } catch (RuntimeException e) {
            failed(e);
        }
    }

    @Override
    public void onOrphans(String replica, int rank, int blocks) {
        try {
            delegate.onOrphans(replica, rank, blocks);
        } catch (RuntimeException e) {
            failed(e);
        }
    }

    @Override
    public void onSkipped(String replica, int rank, int fields, int tags) {
        try {
            delegate.onSkipped(replica, rank, fields, tags);
        } catch (RuntimeException e) {
            failed(e);
        }
    }

    @Override
    public void onMalformed(String replica, int rank, String what, int count) {
        try {
            delegate.onMalformed(replica, rank, what, count);
        } catch (RuntimeException e) {
            failed(e);
        }
    }

    @Override
    public void onCapEvicted(String replica, int rank, int blocks) {
        try {
            delegate.onCapEvicted(replica, rank, blocks);
        } catch (RuntimeException e) {
            failed(e);
        }
    }

    @Override
    public void onModeChanged(String replica, ReplicaMode from, ReplicaMode to, String reason) {
        try {
            delegate.onModeChanged(replica, from, to, reason);
        } catch (RuntimeException e) {
            failed(e);
        }
    }

    @Override
    public void onTokenized(String replica, boolean ok, long nanos, @Nullable String reason) {
        try {
            delegate.onTokenized(replica, ok, nanos, reason);
        } catch (RuntimeException e) {
            failed(e);
        }
    }
}
