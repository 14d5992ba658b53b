package dev.cart.flow;

import java.util.concurrent.CompletableFuture;
import org.jspecify.annotations.Nullable;

/**
 * A request's place in flow control: a future completed once with its {@link FlowResult}, possibly at once
 * (admitted, or shed) or later, when a slot frees, its deadline passes or it is displaced. Completed only
 * by flow control: {@link #complete} and {@link #obtrudeValue} throw.
 *
 * <p>{@link #cancel} (for a client that went away) takes a waiting request out of the queue at once; it
 * then holds nothing and never gets a lease. A request being handed a slot at that moment cannot be
 * cancelled: {@code cancel} answers false and the ticket completes admitted, so the host closes the lease
 * (as for any ticket whose {@code cancel} answers false). Cancelling a completed ticket does nothing.
 *
 * <p>Dependent actions run on the thread that completes the ticket: the submitting thread, a thread
 * closing a lease, or the scheduler's. A host on an event loop hands them over with
 * {@code whenCompleteAsync(action, eventLoop)}.
 */
public final class FlowTicket extends CompletableFuture<FlowResult> {

    private volatile @Nullable ModelQueue queue;
    private volatile @Nullable Waiting waiting;

    FlowTicket() {}

    static FlowTicket completed(FlowResult result) {
        FlowTicket t = new FlowTicket();
        t.settle(result);
        return t;
    }

    void queued(ModelQueue queue, Waiting waiting) {
        this.waiting = waiting;
        this.queue = queue;
    }

    /** Completes the ticket; false if it was already done (cancelled meanwhile). */
    boolean settle(FlowResult result) {
        return super.complete(result);
    }

    /**
     * Takes the request out of the queue if it is still waiting, and completes the ticket with a
     * {@link java.util.concurrent.CancellationException}.
     *
     * @return true if the ticket is cancelled now (by this call or an earlier one); false if it was
     *     completed otherwise, or is being handed a slot and will complete admitted
     */
    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
        ModelQueue q = queue;
        Waiting w = waiting;
        if (q != null && w != null && !q.withdraw(w)) {
            return false; // being handed a slot: it completes admitted, and the host closes its lease
        }
        return super.cancel(mayInterruptIfRunning);
    }

    /**
     * Completing exceptionally from outside withdraws the request like {@link #cancel}; a request being
     * handed a slot then has its lease closed unused when the router answers.
     */
    @Override
    public boolean completeExceptionally(Throwable ex) {
        boolean done = super.completeExceptionally(ex);
        if (done) {
            withdraw();
        }
        return done;
    }

    /** Completes the ticket exceptionally from inside flow control (a router that threw). */
    void fail(Throwable e) {
        super.completeExceptionally(e);
    }

    private void withdraw() {
        ModelQueue q = queue;
        Waiting w = waiting;
        if (q != null && w != null) {
            q.withdraw(w);
        }
    }

    /**
     * Not for hosts: flow control completes the ticket.
     *
     * @throws UnsupportedOperationException always
     */
    @Override
    public boolean complete(FlowResult value) {
        throw new UnsupportedOperationException("a flow ticket is completed by flow control only; cancel() it");
    }

    /**
     * Not for hosts: flow control completes the ticket.
     *
     * @throws UnsupportedOperationException always
     */
    @Override
    public void obtrudeValue(FlowResult value) {
        throw new UnsupportedOperationException("a flow ticket is completed by flow control only");
    }
}
