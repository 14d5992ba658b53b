package dev.cart.jmh.flow;

import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.PromptKey;
import dev.cart.core.ReplicaSpec;
import dev.cart.core.RouteDecision;
import dev.cart.core.RouteRequest;
import dev.cart.core.Router;
import dev.cart.core.spi.Scheduler;
import dev.cart.flow.FlowConfig;
import dev.cart.flow.FlowControl;
import dev.cart.flow.FlowRequest;
import dev.cart.flow.FlowResult;
import dev.cart.flow.FlowTicket;
import dev.cart.policy.Policies;
import java.time.Duration;
import java.util.SplittableRandom;

/**
 * The three ways a request is admitted, each set up once and run as one operation: {@link #choose} (the
 * router alone: {@code Router.choose} and the lease's close), {@link #atOnce} (through an enabled flow
 * control whose queue is empty: the same plus its look for room), and {@link #queued} (a full pool of one
 * slot: the request is queued, then the lease holding the slot closes and hands it to the request: an
 * enqueue, a hand-out and the same routing). 8 replicas (1 for {@code queued}), the cache-aware policy,
 * 256 keys of 2,048 characters in a 64-block tree. Timers go to a scheduler that drops them (no deadline
 * is reached in a run).
 */
final class FlowSetup {

    private static final int KEYS = 256;

    private final RouteRequest[] requests = new RouteRequest[KEYS];
    private final FlowRequest flowRequest = new FlowRequest(1, "t-0123456789abcdef", 0, 1000);
    private final Router wide;
    private final FlowControl wideFlow;
    private final Router narrow;
    private final FlowControl narrowFlow;
    private RouteDecision holding;
    private int i;

    /** A scheduler that never runs anything: the timers of a queue nobody waits in long. */
    static final Scheduler NEVER = (task, delay) -> () -> {};

    FlowSetup() {
        SplittableRandom rnd = new SplittableRandom(42);
        for (int k = 0; k < KEYS; k++) {
            StringBuilder sb = new StringBuilder(2048);
            sb.append("key ").append(k).append(' ');
            while (sb.length() < 2048) {
                sb.append((char) ('a' + rnd.nextInt(26)));
            }
            requests[k] = RouteRequest.of(PromptKey.ofText(sb.toString(), 64));
        }
        ManagedReplicaSet.Builder wb = ManagedReplicaSet.builder();
        for (int r = 0; r < 8; r++) {
            wb.add(new ReplicaSpec("replica-" + r, 1_000_000, 0));
        }
        wide = Router.builder()
                .replicas(wb.build())
                .policy(Policies.cacheAware())
                .evictionInterval(Duration.ZERO)
                .build();
        wideFlow = FlowControl.builder(wide)
                .config(FlowConfig.enabledDefaults())
                .scheduler(NEVER)
                .build();
        narrow = Router.builder()
                .replicas(ManagedReplicaSet.builder()
                        .add(new ReplicaSpec("only", 1, 0))
                        .build())
                .policy(Policies.cacheAware())
                .evictionInterval(Duration.ZERO)
                .build();
        narrowFlow = FlowControl.builder(narrow)
                // the slot is held across other benchmarks' rounds: no deadline may shed the queued request
                .config(FlowConfig.enabledDefaults().withMaxWait(Duration.ofMinutes(10)))
                .scheduler(NEVER)
                .build();
        holding = narrow.choose(requests[0]);
        for (int k = 0; k < KEYS; k++) { // every key learned: decisions are hits
            choose();
            atOnce();
        }
    }

    private RouteRequest next() {
        RouteRequest r = requests[i];
        i = (i + 1) & (KEYS - 1);
        return r;
    }

    /** Router.choose and close: the baseline. */
    long choose() {
        RouteDecision d = wide.choose(next());
        d.lease().close();
        return d.matchedLength();
    }

    /** Through flow control, admitted at once. */
    long atOnce() {
        FlowResult r = wideFlow.submit(next(), flowRequest).join();
        r.decision().lease().close();
        return r.decision().matchedLength();
    }

    /** Queued on a full pool, then handed the slot the previous request gives back. */
    long queued() {
        FlowTicket t = narrowFlow.submit(next(), flowRequest);
        holding.lease().close(); // frees the slot: handed to t on this thread
        FlowResult r = t.join();
        if (!r.admitted()) {
            throw new IllegalStateException("the queued request was not handed the slot: " + r);
        }
        holding = r.decision();
        return holding.matchedLength();
    }

    void close() {
        holding.lease().close();
        wideFlow.close();
        narrowFlow.close();
        wide.close();
        narrow.close();
    }
}
