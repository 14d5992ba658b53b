package dev.cart.jmh.core;

import dev.cart.core.Lease;
import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.PromptKey;
import dev.cart.core.RouteDecision;
import dev.cart.core.RouteRequest;
import dev.cart.core.Router;
import dev.cart.core.ServedUsage;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.function.ToLongFunction;

/**
 * A routed request's work in the router, for two builds in one JVM (as {@link PairedTreeTiming}: each
 * build's {@code benchmarks.jar} in a class loader of its own with this jar behind it, rounds alternating
 * A B, B A, each timed by the thread's CPU time). One operation is {@code Router.choose} with the
 * {@code cache_aware} policy over 8 replicas, then, for the request routed 12 operations earlier,
 * {@code Lease.firstToken()}, {@code Lease.succeeded(usage)} with the cached tokens the router predicted,
 * and {@code close()}: so 12 leases are open at any time and the usage feedback runs without a shortfall.
 * Keys: 4,096 RAG-shaped prompts of about 3,700 characters (shared instructions, one of 256 documents drawn
 * with a skew, a question). Only public API, so any build's jar can be the older one. Prints each build's
 * minimum and median nanoseconds per operation and the per-round ratio B/A. Run: {@code java -Xms2g -Xmx2g
 * -cp cart-jmh/target/benchmarks.jar dev.cart.jmh.core.PairedRouterTiming A.jar B.jar [rounds] [feedback]}.
 */
public final class PairedRouterTiming {

    private static final int PER_ROUND = 20_000;

    private PairedRouterTiming() {}

    @SuppressWarnings({"unchecked", "rawtypes"}) // an array of a generic interface
    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: PairedRouterTiming A.jar B.jar [rounds] [feedback true|false]");
            System.exit(2);
        }
        int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 60;
        boolean feedback = args.length <= 3 || Boolean.parseBoolean(args[3]);
        URL own = PairedRouterTiming.class.getProtectionDomain().getCodeSource().getLocation();
        ToLongFunction<Integer>[] ops = new ToLongFunction[2];
        for (int j = 0; j < 2; j++) {
            URLClassLoader loader = new URLClassLoader(
                    new URL[] {Path.of(args[j]).toUri().toURL(), own}, ClassLoader.getPlatformClassLoader());
            ops[j] = (ToLongFunction<Integer>) loader.loadClass(Ops.class.getName())
                    .getConstructor(boolean.class)
                    .newInstance(feedback);
        }
        for (int w = 0; w < 10; w++) { // warm-up, not counted
            long unused = ops[0].applyAsLong(PER_ROUND) + ops[1].applyAsLong(PER_ROUND);
        }
        double[][] t = new double[2][rounds];
        double[] ratio = new double[rounds];
        for (int r = 0; r < rounds; r++) {
            for (int k = 0; k < 2; k++) {
                int j = (r & 1) == 0 ? k : 1 - k;
                t[j][r] = (double) ops[j].applyAsLong(PER_ROUND) / PER_ROUND;
            }
            ratio[r] = t[1][r] / t[0][r];
        }
        for (double[] x : t) {
            Arrays.sort(x);
        }
        Arrays.sort(ratio);
        System.out.printf(
                "A min / median %.0f / %.0f ns, B min / median %.0f / %.0f ns per operation; "
                        + "B/A median %.3f, IQR %.3f-%.3f, range %.3f-%.3f; load %s%n",
                t[0][0],
                t[0][rounds / 2],
                t[1][0],
                t[1][rounds / 2],
                ratio[rounds / 2],
                ratio[rounds / 4],
                ratio[3 * rounds / 4],
                ratio[0],
                ratio[rounds - 1],
                Files.readString(Path.of("/proc/loadavg")).split(" ")[0]);
    }

    /** One build's router and keys, made inside that build's class loader. */
    public static final class Ops implements ToLongFunction<Integer> {
        private static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();
        private static final int OPEN = 12;

        private final Router router;
        private final PromptKey[] keys = new PromptKey[4096];
        private final ArrayDeque<RouteDecision> open = new ArrayDeque<>();
        private int next;

        public Ops(boolean feedback) {
            ManagedReplicaSet.Builder b = ManagedReplicaSet.builder();
            for (int r = 0; r < 8; r++) {
                b.add("http://replica-" + r + ":8000");
            }
            router = Router.builder()
                    .replicas(b.build())
                    .policy("cache_aware")
                    .evictionInterval(Duration.ZERO)
                    .firstTokenReports(true)
                    .feedback(feedback)
                    .build();
            SplittableRandom rnd = new SplittableRandom(7);
            String instructions = "You answer from the documents below and cite the section. ".repeat(8);
            for (int k = 0; k < keys.length; k++) {
                int doc = (int) Math.min(255, Math.abs(rnd.nextGaussian()) * 60);
                StringBuilder sb = new StringBuilder(instructions);
                SplittableRandom d = new SplittableRandom(doc * 31L + 1);
                for (int c = 0; c < 3000; c++) {
                    sb.append((char) ('a' + d.nextInt(26)));
                }
                sb.append(" question ").append(k % 97).append(' ');
                for (int c = 0; c < 200; c++) {
                    sb.append((char) ('a' + rnd.nextInt(26)));
                }
                keys[k] = PromptKey.ofText(sb.toString(), 64);
            }
        }

        @Override
        public long applyAsLong(Integer count) {
            long t0 = MX.getCurrentThreadCpuTime();
            for (int k = 0; k < count; k++) {
                open.addLast(router.choose(RouteRequest.of(keys[next++ & (keys.length - 1)])));
                if (open.size() > OPEN) {
                    RouteDecision o = open.pollFirst();
                    Lease lease = o.lease();
                    lease.firstToken();
                    lease.succeeded(new ServedUsage(o.keyLength() / 4, o.matchedLength() / 4));
                    lease.close();
                }
            }
            return MX.getCurrentThreadCpuTime() - t0;
        }
    }
}
