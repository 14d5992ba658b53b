package dev.cart.proxy.observe;

import dev.cart.core.CacheFeedback;
import dev.cart.core.Lease;
import dev.cart.core.RouteDecision;
import dev.cart.core.ServedUsage;
import dev.cart.core.spi.LeaseCompletion;
import java.util.Arrays;

/**
 * What one request did that the request path's meters count ({@link RequestMeters}): its routing decisions, its
 * upstream attempts' ends, its answer's first byte, the replica's usage report, the answer's learning and the
 * request's end. The request's thread keeps each event as a field here (references to what it already has and a
 * few numbers: no meter looked up, nothing formatted, nothing allocated but on a retry), and the request's end
 * hands the whole record to the {@link DecisionWriter} as one queue entry; the writer's thread counts it
 * ({@link #count}). A {@link DecisionLog} is such a record that also carries the request's decision line.
 *
 * <p>The router's events: the router reports an attempt's end ({@link LeaseCompletion}) and its verdict on the
 * replica's usage ({@link CacheFeedback}) to its listener, which knows nothing of the request. The proxy closes a
 * request's lease through {@link #close} and reports its usage through {@link #succeeded}, which make this record
 * the thread's current one for the call ({@link #current}); {@link ProxyMetrics} puts the listener's event into
 * the current record when it is about one of the record's decisions.
 *
 * <p>An event that finds no record to go into (a lease closed on another thread or by the router itself, a lease
 * of the admission queue closed after the client had gone, any event after the record was handed over) is handed
 * to the writer on its own by {@link ProxyMetrics}: every event is counted once, by the writer's thread, or by the
 * caller's when the writer's queue is full.
 *
 * <p>Not thread-safe: filled in by the thread handling the request (one at a time, handed on as the request
 * moves between threads); once handed over ({@link #handOver}) the record belongs to the writer, and the methods
 * that record an event refuse it (they return false) rather than change it.
 */
public class RequestEvents {

    /** The record whose lease the thread is closing or whose usage it is reporting, else null. */
    private static final ThreadLocal<RequestEvents> CURRENT = new ThreadLocal<>();

    private boolean handedOver;
    /** The meters that count this record, set at the request's end; null: nothing to count (a bare line). */
    private RequestMeters meters;
    /** True for a request not routed by prompt (the same for all of its decisions). */
    private boolean passThrough;
    /** The first decision and the first attempt's end; a retry's are kept in {@link #more}, in their order. */
    private RouteDecision decision;

    private LeaseCompletion completion;
    private Object[] more;
    private int moreCount;

    private String firstByteReplica;
    private long firstByteNanos = -1;
    private RouteDecision feedbackDecision;
    private CacheFeedback feedback;
    private String learned;

    private boolean finished;
    private String path;
    private int status;
    private String replica;
    private long nanos;

    /** Not for subclassing outside this package. */
    RequestEvents() {}

    /** The thread's current record (see {@link #close}), or null. */
    static RequestEvents current() {
        return CURRENT.get();
    }

    /**
     * Closes {@code lease}, one of this request's, with this record as the thread's current one: the router's
     * report of the attempt's end comes into it.
     */
    public void close(Lease lease) {
        RequestEvents outer = CURRENT.get();
        CURRENT.set(this);
        try {
            lease.close();
        } finally {
            CURRENT.set(outer);
        }
    }

    /**
     * {@link Lease#succeeded(ServedUsage)} with this record as the thread's current one: the router's verdict on
     * the usage comes into it.
     */
    public CacheFeedback succeeded(Lease lease, ServedUsage usage) {
        RequestEvents outer = CURRENT.get();
        CURRENT.set(this);
        try {
            return lease.succeeded(usage);
        } finally {
            CURRENT.set(outer);
        }
    }

    /** True once the record was handed to the writer: it takes no more events. */
    boolean handedOver() {
        return handedOver;
    }

    /** The record goes to the writer: from now on it is not changed. */
    void handOver() {
        handedOver = true;
    }

    /** True when the record carries a decision line (a {@link DecisionLog} with its line on). */
    boolean hasLine() {
        return false;
    }

    /** A routing decision for the request; false (nothing kept) once handed over. */
    boolean decided(RouteDecision d, boolean passThrough) {
        if (handedOver) {
            return false;
        }
        this.passThrough = passThrough;
        if (decision == null) {
            decision = d;
        } else {
            keep(d);
        }
        return true;
    }

    /** An attempt ended; false (nothing kept) once handed over or when it is not one of this request's decisions. */
    boolean completed(LeaseCompletion c) {
        if (handedOver || !owns(c.decision())) {
            return false;
        }
        if (completion == null) {
            completion = c;
        } else {
            keep(c);
        }
        return true;
    }

    /** The answer's first byte; false once handed over or when one was kept already. */
    boolean firstByte(String replica, long nanos) {
        if (handedOver || firstByteNanos >= 0) {
            return false;
        }
        this.firstByteReplica = replica;
        this.firstByteNanos = Math.max(0, nanos);
        return true;
    }

    /** The router's verdict on the usage; false once handed over, when one was kept, or for another's decision. */
    boolean feedback(RouteDecision d, CacheFeedback f) {
        if (handedOver || feedback != null || !owns(d)) {
            return false;
        }
        this.feedbackDecision = d;
        this.feedback = f;
        return true;
    }

    /** What answer learning made of the answer; false once handed over or when one was kept. */
    boolean learned(String result) {
        if (handedOver || learned != null) {
            return false;
        }
        this.learned = result;
        return true;
    }

    /** The request's end, counted by {@code meters}; the caller hands the record over next. */
    void finished(RequestMeters meters, String path, int status, String replica, long nanos) {
        this.meters = meters;
        this.finished = true;
        this.path = path;
        this.status = status;
        this.replica = replica;
        this.nanos = nanos;
    }

    /** Counts the record's events in its meters (none without); the writer's thread, or a caller's when it is full. */
    void count() {
        RequestMeters m = meters;
        if (m == null) {
            return;
        }
        if (decision != null) {
            m.decision(decision, passThrough);
        }
        if (completion != null) {
            m.leaseCompleted(completion);
        }
        for (int i = 0; i < moreCount; i++) {
            if (more[i] instanceof RouteDecision d) {
                m.decision(d, passThrough);
            } else {
                m.leaseCompleted((LeaseCompletion) more[i]);
            }
        }
        if (firstByteNanos >= 0) {
            m.firstByte(firstByteReplica, firstByteNanos);
        }
        if (feedback != null) {
            m.cacheFeedback(feedbackDecision, feedback);
        }
        if (learned != null) {
            m.answerLearned(learned);
        }
        if (finished) {
            m.request(path, status, replica, nanos);
        }
    }

    /** True when {@code d} is one of the decisions this record keeps (by identity: a decision is one object). */
    @SuppressWarnings("ReferenceEquality")
    private boolean owns(RouteDecision d) {
        if (d == decision) {
            return true;
        }
        for (int i = 0; i < moreCount; i++) {
            if (more[i] == d) {
                return true;
            }
        }
        return false;
    }

    /** A retry's decision or end, after the first ones. */
    private void keep(Object event) {
        if (more == null) {
            more = new Object[4];
        } else if (moreCount == more.length) {
            more = Arrays.copyOf(more, moreCount * 2);
        }
        more[moreCount++] = event;
    }
}
