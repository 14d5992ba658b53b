package dev.cart.jmh.core;

import dev.cart.core.Lease;
import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.PromptKey;
import dev.cart.core.ReplicaSpec;
import dev.cart.core.RouteDecision;
import dev.cart.core.RouteRequest;
import dev.cart.core.Router;
import dev.cart.core.ServedUsage;
import dev.cart.core.Tokenization;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.ToLongFunction;

/**
 * The router's work for one request as the proxy does it at small prompts, for two builds in one JVM (as
 * {@link PairedRouterTiming}, whose class loading and alternating A B, B A rounds it shares; this class is
 * new, so each build's loader links it against that build's {@code cart-core}). One operation is the
 * proxy's request ({@code RouteRequest.of(key).withTokenization(..).withModel(..)}), {@code Router.choose}
 * with the {@code cache_aware} policy over 2 replicas serving the model, then at once that request's
 * {@code Lease.firstToken()}, {@code succeeded(usage)} with the cached tokens predicted, and {@code close()}.
 * Keys: 4,096 prompts of about 1 KB (shared instructions, one of 64 documents, a question). Prints each
 * build's minimum and median nanoseconds per operation and the per-round ratio B/A. Run: {@code java
 * -Xms2g -Xmx2g -cp B.jar dev.cart.jmh.core.PairedLeaseTiming A.jar B.jar [rounds]}.
 */
public final class PairedLeaseTiming {

    private static final int PER_ROUND = 50_000;

    private PairedLeaseTiming() {}

    @SuppressWarnings({"unchecked", "rawtypes"}) // an array of a generic interface
    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: PairedLeaseTiming A.jar B.jar [rounds]");
            System.exit(2);
        }
        int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 60;
        URL own = PairedLeaseTiming.class.getProtectionDomain().getCodeSource().getLocation();
        ToLongFunction<Integer>[] ops = new ToLongFunction[2];
        for (int j = 0; j < 2; j++) {
            URLClassLoader loader = new URLClassLoader(
                    new URL[] {Path.of(args[j]).toUri().toURL(), own}, ClassLoader.getPlatformClassLoader());
            ops[j] = (ToLongFunction<Integer>)
                    loader.loadClass(Ops.class.getName()).getConstructor().newInstance();
        }
        for (int w = 0; w < 10; w++) { // warm-up, not counted
            long unused = ops[0].applyAsLong(PER_ROUND) + ops[1].applyAsLong(PER_ROUND);
        }
        double[][] t = new double[2][rounds];
        double[] ratio = new double[rounds];
        double[][] byOrder = new double[2][(rounds + 1) / 2];
        for (int r = 0; r < rounds; r++) {
            for (int k = 0; k < 2; k++) {
                int j = (r & 1) == 0 ? k : 1 - k;
                t[j][r] = (double) ops[j].applyAsLong(PER_ROUND) / PER_ROUND;
            }
            ratio[r] = t[1][r] / t[0][r];
            byOrder[r & 1][r / 2] = ratio[r];
        }
        for (double[] x : t) {
            Arrays.sort(x);
        }
        System.out.printf(
                "A min / median %.0f / %.0f ns, B min / median %.0f / %.0f ns per operation; load %s%n",
                t[0][0],
                t[0][rounds / 2],
                t[1][0],
                t[1][rounds / 2],
                Files.readString(Path.of("/proc/loadavg")).split(" ")[0]);
        print("B/A all rounds", ratio);
        print("B/A rounds A first", Arrays.copyOf(byOrder[0], (rounds + 1) / 2));
        print("B/A rounds B first", Arrays.copyOf(byOrder[1], rounds / 2));
    }

    private static void print(String label, double[] ratio) {
        Arrays.sort(ratio);
        int n = ratio.length;
        System.out.printf(
                "%s (%d): median %.3f, IQR %.3f-%.3f, range %.3f-%.3f%n",
                label, n, ratio[n / 2], ratio[n / 4], ratio[3 * n / 4], ratio[0], ratio[n - 1]);
    }

    /** One build's router and keys, made inside that build's class loader. */
    public static final class Ops implements ToLongFunction<Integer> {
        private static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();
        private static final String MODEL = "model-a";

        private final Router router;
        private final PromptKey[] keys = new PromptKey[4096];
        private int next;
        /** Keeps the feedback verdicts alive. */
        public long sink;

        public Ops() {
            ManagedReplicaSet.Builder b = ManagedReplicaSet.builder();
            for (int r = 0; r < 2; r++) {
                b.add(new ReplicaSpec("http://replica-" + r + ":8000", 256, 0, List.of(MODEL)));
            }
            router = Router.builder()
                    .replicas(b.build())
                    .policy("cache_aware")
                    .evictionInterval(Duration.ZERO)
                    .firstTokenReports(true)
                    .build();
            SplittableRandom rnd = new SplittableRandom(7);
            String instructions = "You answer from the documents below and cite the section. ".repeat(4);
            for (int k = 0; k < keys.length; k++) {
                int doc = (int) Math.min(63, Math.abs(rnd.nextGaussian()) * 20);
                StringBuilder sb = new StringBuilder(instructions);
                SplittableRandom d = new SplittableRandom(doc * 31L + 1);
                for (int c = 0; c < 600; c++) {
                    sb.append((char) ('a' + d.nextInt(26)));
                }
                sb.append(" question ").append(k % 97).append(' ');
                for (int c = 0; c < 150; c++) {
                    sb.append((char) ('a' + rnd.nextInt(26)));
                }
                keys[k] = PromptKey.ofText(sb.toString(), 64);
            }
        }

        @Override
        public long applyAsLong(Integer count) {
            long t0 = MX.getCurrentThreadCpuTime();
            for (int k = 0; k < count; k++) {
                RouteRequest request = RouteRequest.of(keys[next++ & (keys.length - 1)])
                        .withTokenization(Tokenization.CHARACTER_MODE)
                        .withModel(MODEL);
                RouteDecision d = router.choose(request);
                Lease lease = d.lease();
                lease.firstToken();
                sink += lease.succeeded(new ServedUsage(d.keyLength() / 4, d.matchedLength() / 4))
                        .verdict()
                        .ordinal();
                lease.close();
            }
            return MX.getCurrentThreadCpuTime() - t0;
        }
    }
}
