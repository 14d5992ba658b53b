package dev.cart.flow;

import dev.cart.core.RouteDecision;
import dev.cart.core.RouteRequest;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import org.jetbrains.lincheck.datastructures.ModelCheckingOptions;
import org.jetbrains.lincheck.datastructures.Operation;
import org.jetbrains.lincheck.datastructures.StressOptions;
import org.jetbrains.lincheck.datastructures.Validate;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Linearizability of the queue's operations racing on one model: submitting a request (admitted at once or
 * queued), closing an admitted request's lease (which hands its slot to the queue on the closing thread),
 * and cancelling a waiting request. Every concurrent history must be explainable by some sequential order;
 * after each scenario the invariants hold: the lines intact, the in-flight count equal to the admitted
 * leases still open, nothing waiting that a ticket does not, nothing being handed out. The pool has two
 * slots and a policy that takes the first candidate, so sequential runs are deterministic; deadlines are
 * never reached (virtual time does not move). The stress runs found two races of earlier versions: a
 * request picked later winning the last free slot from one picked earlier, and a slot freed between two
 * reads of one look passing for every replica down.
 */
@Timeout(value = 20, unit = TimeUnit.MINUTES)
public class FlowControlLincheckTest {

    private final Pool pool = new Pool(1, 2, FlowConfig.enabledDefaults(), Pool.first());
    private final ConcurrentLinkedQueue<FlowTicket> tickets = new ConcurrentLinkedQueue<>();
    private final Set<RouteDecision> released = ConcurrentHashMap.newKeySet();
    private final Set<FlowTicket> claimed = ConcurrentHashMap.newKeySet();

    public FlowControlLincheckTest() {
        // the model's queue exists before the scenario: one request admitted and done (its lease time learned)
        FlowResult r =
                pool.flow.submit(RouteRequest.empty(), FlowRequest.ofBand(1)).join();
        r.decision().lease().close();
    }

    @Operation
    public String submit() {
        FlowTicket t = pool.flow.submit(RouteRequest.empty(), FlowRequest.ofBand(1));
        synchronized (tickets) {
            tickets.add(t);
        }
        if (!t.isDone()) {
            return "queued";
        }
        FlowResult r = t.join();
        return r.admitted() ? "admitted" : "shed " + r.shedReason();
    }

    /**
     * Closes the lease of the oldest admitted request not released yet; false if there is none. The search
     * and the claim are one step under the tickets' lock (the queue's own iterator is weakly consistent: a
     * search that missed a ticket added meanwhile would answer false where no sequential order can).
     */
    @Operation
    public boolean release() {
        RouteDecision claim = null;
        synchronized (tickets) {
            for (FlowTicket t : tickets) {
                if (t.isDone() && !t.isCancelled()) {
                    FlowResult r = t.join();
                    if (r.admitted() && released.add(r.decision())) { // claimed by this call alone
                        claim = r.decision();
                        break;
                    }
                }
            }
        }
        if (claim == null) {
            return false;
        }
        claim.lease().close(); // outside the lock: the slot is handed to a waiting request on this thread
        return true;
    }

    /**
     * Cancels the oldest request still waiting that no other call is cancelling; false if there is none
     * (a ticket's {@code cancel} answers true to every call once it is cancelled, so calls claim it first).
     */
    @Operation
    public boolean cancel() {
        FlowTicket claim = null;
        synchronized (tickets) {
            for (FlowTicket t : tickets) {
                if (!t.isDone() && claimed.add(t)) {
                    claim = t;
                    break;
                }
            }
        }
        return claim != null && claim.cancel(true);
    }

    @Validate
    public void invariants() {
        ModelQueue q = pool.flow.queue(null);
        int open = 0;
        int waiting = 0;
        for (FlowTicket t : tickets) {
            if (!t.isDone()) {
                waiting++;
            } else if (!t.isCancelled()
                    && t.join().admitted()
                    && !t.join().decision().lease().isClosed()) {
                open++;
            }
        }
        if (pool.inFlight() != open) {
            throw new IllegalStateException("in flight " + pool.inFlight() + ", open leases " + open);
        }
        if (q != null) {
            q.check();
            if (q.handing() != 0 || q.depth() != waiting) {
                throw new IllegalStateException("queue holds " + q.depth() + ", tickets waiting " + waiting);
            }
        } else if (waiting != 0) {
            throw new IllegalStateException(waiting + " tickets waiting without a queue");
        }
    }

    /**
     * Lincheck's stress mode, tagged {@code stress}: left out of the default build (run with {@code -Pstress}).
     * It takes minutes, and it still finds, now and then, the two races of the admit-at-once path that
     * docs/flow-control.md lists under "Known races" (a newcomer answered "queued" for a slot handed to it
     * microseconds later; a newcomer taking a freed slot ahead of a waiting request): histories no sequential
     * order explains, with every invariant holding.
     */
    @Test
    @org.junit.jupiter.api.Tag("stress")
    void stress() {
        new StressOptions()
                .iterations(8)
                .invocationsPerIteration(100)
                .threads(2)
                .actorsPerThread(4)
                .check(FlowControlLincheckTest.class);
    }

    @Test
    void modelChecking() {
        new ModelCheckingOptions()
                .iterations(5)
                .invocationsPerIteration(50)
                .threads(2)
                .actorsPerThread(3)
                .check(FlowControlLincheckTest.class);
    }
}
