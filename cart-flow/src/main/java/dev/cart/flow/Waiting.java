package dev.cart.flow;

import dev.cart.core.RouteRequest;
import dev.cart.core.spi.Replica;
import dev.cart.core.spi.Scheduler;
import org.jspecify.annotations.Nullable;

/**
 * One request in a {@link ModelQueue}: what it asks, when it must be done, which replicas hold its prefix,
 * and its place in its tenant's line (an intrusive doubly linked list, so a cancellation unlinks it in
 * constant time). Every mutable field is guarded by the queue's lock.
 */
final class Waiting {

    static final int NEW = 0;
    static final int WAITING = 1;
    static final int HANDING = 2;
    static final int DONE = 3;

    final FlowTicket ticket;
    final RouteRequest request;
    final FlowRequest flow;
    final int band;
    final long submittedAt;
    final long deadlineAt;
    /**
     * The replicas holding the longest matched prefix (that serve the model); empty when none does. Looked
     * up at submission, and again when the queue has spread a prefix since ({@link #holdersAt}).
     */
    Replica[] holders;

    /** The queue's spread count when {@link #holders} was looked up. */
    long holdersAt;

    // guarded by the queue's lock (and holders above, once in line)
    int state = NEW;
    boolean withdrawn;
    long enqueuedAt;
    /** When the request stops waiting for a holder while another replica has room; -1 until first offered one. */
    long affinityUntil = -1;

    @Nullable
    Waiting prev;

    @Nullable
    Waiting next;

    FairLines.@Nullable Line line;
    Scheduler.@Nullable Task expiry;

    Waiting(
            FlowTicket ticket,
            RouteRequest request,
            FlowRequest flow,
            int band,
            long submittedAt,
            long deadlineAt,
            Replica[] holders) {
        this.ticket = ticket;
        this.request = request;
        this.flow = flow;
        this.band = band;
        this.submittedAt = submittedAt;
        this.deadlineAt = deadlineAt;
        this.holders = holders;
    }
}
