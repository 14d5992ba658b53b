package dev.cart.bench;

import dev.cart.core.CacheFeedback;
import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.PromptKey;
import dev.cart.core.ReplicaSpec;
import dev.cart.core.RouteDecision;
import dev.cart.core.RouteRequest;
import dev.cart.core.Router;
import dev.cart.core.ServedUsage;
import dev.cart.core.spi.LeaseCompletion;
import dev.cart.core.spi.RoutingListener;
import dev.cart.policy.Policies;
import dev.cart.proxy.observe.DecisionLog;
import dev.cart.proxy.observe.DecisionWindow;
import dev.cart.proxy.observe.ProxyMetrics;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.time.Duration;
import java.util.Arrays;

/**
 * The CPU the proxy's {@code cart-decision-log} thread spends per request record, apart from the rest of the
 * proxy: each round builds {@code records} records of a routed chat request as the request path fills them (a
 * decision of the cache-aware policy, its lease closed with a usage report, a first byte, an answer learned, the
 * decision line on), hands them all to the writer ({@link ProxyMetrics#finished}) and waits until it has counted
 * them and logged their lines; the round's figure is the writer thread's CPU time over the records. The lines go
 * through the proxy's own logback configuration (its batched console appender): run with standard output sent
 * to {@code /dev/null}. Prints the minimum, median and maximum microseconds per record over the rounds, after
 * {@code -Dcart.writer.warmup} rounds (150 unless set). One build per JVM: run builds' jars in turn, several
 * times, and compare their medians. Usage: {@code java -Xms512m -Xmx512m -XX:+AlwaysPreTouch -cp
 * cart-bench.jar:cart-proxy.jar dev.cart.bench.WriterCpuTiming [records] [rounds] > /dev/null} (4,000 and 40
 * unless given; at most the writer's queue, 16,384).
 */
public final class WriterCpuTiming {

    private WriterCpuTiming() {}

    public static void main(String[] args) {
        int records = args.length > 0 ? Integer.parseInt(args[0]) : 4_000;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 40;
        int warmup = Integer.getInteger("cart.writer.warmup", 150);
        try (ProxyMetrics metrics = new ProxyMetrics(() -> null, 64, new DecisionWindow())) {
            Rounds r = new Rounds(metrics, records);
            for (int i = 0; i < warmup; i++) {
                r.round();
            }
            double[] us = new double[rounds];
            for (int i = 0; i < rounds; i++) {
                us[i] = r.round() / 1000.0 / records;
            }
            Arrays.sort(us);
            if (!metrics.scrape().contains("cart_decision_lines_dropped_total 0.0")) {
                throw new IllegalStateException("lines were dropped: the figures do not count them");
            }
            System.err.printf(
                    "writer CPU per record (us), %d rounds of %d: min %.3f median %.3f max %.3f%n",
                    rounds, records, us[0], us[rounds / 2], us[rounds - 1]);
        }
    }

    /** The records of a round, built on this thread, and the writer thread's clock. */
    private static final class Rounds {
        private final ProxyMetrics metrics;
        private final Router router;
        private final RouteRequest[] prompts = new RouteRequest[64];
        private final DecisionLog[] pending;
        private final ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        private long writerId = -1;

        Rounds(ProxyMetrics metrics, int records) {
            this.metrics = metrics;
            this.pending = new DecisionLog[records];
            this.router = Router.builder()
                    .replicas(ManagedReplicaSet.builder()
                            .add(new ReplicaSpec("http://127.0.0.1:8001", 64, 0))
                            .add(new ReplicaSpec("http://127.0.0.1:8002", 64, 0))
                            .add(new ReplicaSpec("http://127.0.0.1:8003", 64, 0))
                            .build())
                    .policy(Policies.cacheAware())
                    .listener(new RoutingListener() {
                        @Override
                        public void onLeaseCompleted(LeaseCompletion c) {
                            metrics.leaseCompleted(c);
                        }

                        @Override
                        public void onCacheFeedback(RouteDecision d, CacheFeedback f) {
                            metrics.cacheFeedback(d, f);
                        }
                    })
                    .build();
            for (int i = 0; i < prompts.length; i++) {
                String system = ("System prompt " + (i % 8) + " for an agent. ").repeat(40);
                prompts[i] = RouteRequest.of(PromptKey.ofText(system + "user turn " + i, 64));
            }
        }

        /** One round: the writer thread's CPU nanoseconds for counting and logging the round's records. */
        long round() {
            for (int i = 0; i < pending.length; i++) {
                DecisionLog r = new DecisionLog(true, "/v1/chat/completions", "POST");
                r.request("llama-3.1-8b-instruct", false);
                RouteDecision d = router.choose(prompts[i & 63]);
                metrics.decision(r, d, false);
                r.decision(d, false);
                r.upstreamStarted();
                metrics.firstByte(r, d.replica().id(), 2_000_000 + i);
                d.lease().status(200);
                r.status(200);
                ServedUsage usage = new ServedUsage(250, 192);
                r.usage(usage);
                r.succeeded(d.lease(), usage);
                r.close(d.lease());
                metrics.answerLearned(r, "learned");
                r.result("ok");
                pending[i] = r;
            }
            await(); // the building's own events (none expected) are not the round's
            long writer = writerThread();
            long before = threads.getThreadCpuTime(writer);
            for (int i = 0; i < pending.length; i++) {
                metrics.finished(pending[i], "/v1/chat/completions", 200, 5_000_000 + i);
                pending[i] = null;
            }
            await();
            return threads.getThreadCpuTime(writer) - before;
        }

        private static void await() {
            if (!DecisionLog.flush(Duration.ofSeconds(30))) {
                throw new IllegalStateException("the writer did not catch up in 30 s");
            }
        }

        private long writerThread() {
            if (writerId < 0) {
                for (Thread t : Thread.getAllStackTraces().keySet()) {
                    if (t.getName().equals("cart-decision-log")) {
                        writerId = t.getId();
                    }
                }
                if (writerId < 0) {
                    throw new IllegalStateException("no cart-decision-log thread");
                }
            }
            return writerId;
        }
    }
}
