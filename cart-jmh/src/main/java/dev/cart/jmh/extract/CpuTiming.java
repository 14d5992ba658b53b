package dev.cart.jmh.extract;

import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.PromptKey;
import dev.cart.core.ReplicaSpec;
import dev.cart.core.RouteDecision;
import dev.cart.core.RouteRequest;
import dev.cart.core.Router;
import dev.cart.core.internal.KeyAccess;
import dev.cart.extract.Endpoint;
import dev.cart.extract.ExtractOptions;
import dev.cart.extract.PromptExtractor;
import dev.cart.jmh.core.TreeWorkload;
import dev.cart.policy.Policies;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.time.Duration;
import java.util.Arrays;

/**
 * A companion to {@link ExtractBenchmark} and {@link RouteBenchmark} for a shared, loaded machine: the same
 * operations timed by the thread's CPU time ({@code ThreadMXBean.getCurrentThreadCpuTime}) instead of the
 * wall clock, so that time the thread spends waiting for a core does not count. What it cannot remove is
 * the slowdown of sharing caches and cores with other work. Prints, per body, the minimum and median of 15
 * rounds (after a warm-up of 20,000 operations); then, as {@link ContinuationBenchmark}, what answer
 * learning costs: extraction plus {@code continuationKey} against extracting the body and the next
 * turn's body. Uses only the public API, so the same class runs against an older build's jar (which has no
 * {@code continuationKey}: the second table is then skipped). Run:
 * {@code java -cp cart-jmh/target/benchmarks.jar dev.cart.jmh.extract.CpuTiming}.
 */
public final class CpuTiming {

    private interface Op {
        void run() throws Exception;
    }

    private CpuTiming() {}

    public static void main(String[] args) throws Exception {
        keys();
        TreeWorkload w = new TreeWorkload(42);
        System.out.println("body       bytes   extract min/median (us)   route min/median (us)");
        for (String kind : new String[] {"plain", "realistic"}) {
            for (int size : new int[] {4096, 32768}) {
                byte[] body = kind.equals("plain") ? Bodies.plain(size) : Bodies.realistic(size);
                PromptExtractor x = new PromptExtractor(ExtractOptions.defaults());
                ManagedReplicaSet.Builder b = ManagedReplicaSet.builder();
                for (int i = 0; i < TreeWorkload.REPLICAS; i++) {
                    b.add(new ReplicaSpec("http://replica-" + i + ":8000", 1 << 20, 0));
                }
                ManagedReplicaSet set = b.build();
                try (Router router = Router.builder()
                        .replicas(set)
                        .policy(Policies.cacheAware())
                        .keyFormat(PromptKey.Unit.CHARS, PromptKey.DEFAULT_BLOCK_CHARS)
                        .evictionInterval(Duration.ZERO)
                        .build()) {
                    for (int k = 0; k < TreeWorkload.KEYS; k++) {
                        router.record(w.keys[k], set.replicas().get(k % TreeWorkload.REPLICAS));
                    }
                    int reps = size > 10_000 ? 300 : 2_000;
                    double[] e = time(reps, () -> x.extract(Endpoint.CHAT_COMPLETIONS, body));
                    double[] r = time(reps, () -> {
                        RouteDecision d = router.choose(RouteRequest.of(
                                x.extract(Endpoint.CHAT_COMPLETIONS, body).key()));
                        d.lease().close();
                    });
                    System.out.printf(
                            "%-9s %6d   %7.1f / %7.1f          %7.1f / %7.1f%n",
                            kind, body.length, e[0], e[1], r[0], r[1]);
                }
            }
        }
        try {
            continuation();
        } catch (LinkageError e) {
            System.out.println("(no continuationKey in this build)");
        }
    }

    /**
     * Building a key of 4,096 and 32,768 ASCII characters (64-character blocks), as {@code KeyBenchmark}.
     * The table is measured twice and printed the second time: the first pass is also the JIT's warm-up
     * of the key builder, which the operations measured first would otherwise pay for.
     */
    private static void keys() throws Exception {
        keys(false);
        keys(true);
    }

    private static void keys(boolean print) throws Exception {
        if (print) {
            System.out.println(
                    "key of     chars   from a String (us)        from Latin-1 bytes (us)   from CESU-8 bytes (us)");
        }
        for (int n : new int[] {4096, 32768}) {
            String text = TreeWorkload.randomText(new java.util.SplittableRandom(1), n);
            byte[] bytes = text.getBytes(java.nio.charset.StandardCharsets.ISO_8859_1);
            double[] s = time(2_000, () -> PromptKey.ofText(text, PromptKey.DEFAULT_BLOCK_CHARS));
            String b;
            try {
                double[] t = time(
                        2_000,
                        () -> KeyAccess.appendLatin1(
                                        PromptKey.textBuilder(PromptKey.DEFAULT_BLOCK_CHARS), bytes, 0, bytes.length)
                                .build());
                b = String.format("%7.2f / %7.2f", t[0], t[1]);
            } catch (LinkageError e) {
                b = "(not in this build)";
            }
            double[] c = time(
                    2_000,
                    () -> KeyAccess.appendCesu8(
                                    PromptKey.textBuilder(PromptKey.DEFAULT_BLOCK_CHARS),
                                    bytes,
                                    0,
                                    bytes.length,
                                    bytes.length)
                            .build());
            if (print) {
                System.out.printf(
                        "          %6d   %7.2f / %7.2f         %s         %7.2f / %7.2f%n",
                        n, s[0], s[1], b, c[0], c[1]);
            }
        }
    }

    private static void continuation() throws Exception {
        System.out.println("realistic  bytes   extract + continuationKey (us)   extract twice (us)");
        for (int size : new int[] {4096, 32768}) {
            ContinuationBenchmark c = new ContinuationBenchmark();
            c.bytes = size;
            c.setUp();
            int reps = size > 10_000 ? 300 : 2_000;
            double[] cont = time(reps, c::extractAndContinue);
            double[] twice = time(reps, c::extractTwice);
            System.out.printf(
                    "          %6d   %7.1f / %7.1f                  %7.1f / %7.1f%n",
                    c.body.length, cont[0], cont[1], twice[0], twice[1]);
        }
    }

    /** Minimum and median CPU microseconds per operation over 15 rounds of {@code reps}. */
    private static double[] time(int reps, Op op) throws Exception {
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        for (int i = 0; i < 20_000; i++) {
            op.run();
        }
        long[] t = new long[15];
        for (int round = 0; round < t.length; round++) {
            long t0 = mx.getCurrentThreadCpuTime();
            for (int i = 0; i < reps; i++) {
                op.run();
            }
            t[round] = (mx.getCurrentThreadCpuTime() - t0) / reps;
        }
        Arrays.sort(t);
        return new double[] {t[0] / 1000.0, t[t.length / 2] / 1000.0};
    }
}
