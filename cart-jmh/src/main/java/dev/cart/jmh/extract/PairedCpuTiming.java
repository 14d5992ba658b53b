package dev.cart.jmh.extract;

import dev.cart.core.PromptKey;
import dev.cart.core.RouteDecision;
import dev.cart.core.RouteRequest;
import dev.cart.core.Router;
import dev.cart.core.internal.KeyAccess;
import dev.cart.extract.Endpoint;
import dev.cart.extract.ExtractOptions;
import dev.cart.extract.ExtractedRequest;
import dev.cart.extract.ExtractionException;
import dev.cart.extract.PromptExtractor;
import dev.cart.jmh.core.TreeWorkload;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.LongSupplier;

/**
 * Two builds timed against each other in one JVM, for a shared, loaded machine where two separate runs
 * are not comparable: each build's {@code benchmarks.jar} is loaded by a class loader of its own, and
 * their rounds alternate (A B, B A, ...), each timed by the thread's CPU time. Prints, per build, the
 * minimum, median and maximum CPU microseconds per operation, and the median and range of the per-round
 * ratio B/A (each ratio from two rounds run back to back, so both saw the same load), and the bytes
 * each build allocates per operation (one round's worth, before the timed rounds). Operations:
 * {@code key} (a key of that many random ASCII characters from their bytes, the path extraction takes:
 * {@code appendCesu8} since the key's byte form is CESU-8, {@code appendLatin1} in builds before it),
 * {@code plain} or {@code realistic} (extraction of a {@link Bodies} chat body of about that size),
 * {@code distinct} (realistic bodies whose tool lists differ from one request to the next: 64 of them in
 * turn, as from many agents, so that no tool list is read from the extractor's cache), {@code bench} (64
 * bodies in turn of the proxy benchmark's shape, {@link Bodies#bench}: 2 MB, more than a core's L2, so
 * that each body is read from memory as a proxy's freshly received body is), {@code continuation}
 * ({@link PromptExtractor#continuationKey} alone: a realistic body of that size extracted once, then the key of
 * it followed by a reply of {@code -Dcart.paired.reply} characters, 1,300 unless set, {@link
 * ContinuationBenchmark}'s sentence repeated, as one {@code String}: what answer learning builds; A an older
 * build's jar without its own {@code Op}, as for {@code distinct}), and
 * with {@code route} the end-to-end route of {@link CpuTiming}. Uses only the public API and
 * {@link Bodies}, so an older build's jar serves as A (for {@code distinct}, an older build's jar without
 * its own {@code Op} and {@code Bodies} classes, so that both builds use these; the same for {@code
 * bench}). Run with a fixed,
 * pre-touched heap: {@code java -Xms1g -Xmx1g -XX:+AlwaysPreTouch -cp cart-jmh/target/benchmarks.jar
 * dev.cart.jmh.extract.PairedCpuTiming A.jar B.jar realistic 32768 [route] [rounds]}. Without it, the heap
 * grows after the routers are built and every allocation in fresh eden pages first takes a page fault,
 * which the thread's CPU time counts: a 4 KB route measured 30-45 us instead of 4-7 until the first
 * collection over the grown eden, which can fall inside the measured rounds. With {@code
 * -Dcart.paired.threads=2} a second thread runs the same operation of the same build (one extractor, as the
 * proxy's two event loops share one) at the same time, and a round's time is both threads' CPU time per
 * call: what the threads' shared state (the parser's buffer pool, the extractor's caches) costs when they
 * meet. The warm-up and the allocation figure stay on one thread.
 */
public final class PairedCpuTiming {

    private PairedCpuTiming() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 4) {
            System.err.println(
                    "usage: PairedCpuTiming A.jar B.jar key|plain|realistic|distinct|bench|continuation bytes [route]"
                            + " [rounds]");
            System.exit(2);
        }
        String kind = args[2];
        int size = Integer.parseInt(args[3]);
        boolean route = args.length > 4 && args[4].equals("route");
        int rounds = Integer.parseInt(args.length > 5 ? args[5] : args.length > 4 && !route ? args[4] : "301");
        URL own = PairedCpuTiming.class.getProtectionDomain().getCodeSource().getLocation();
        LongSupplier[] ops = new LongSupplier[2];
        for (int j = 0; j < 2; j++) {
            // the build's own classes first; this class's Op from this jar when the build has none
            URLClassLoader loader = new URLClassLoader(
                    new URL[] {Path.of(args[j]).toUri().toURL(), own}, ClassLoader.getPlatformClassLoader());
            ops[j] = (LongSupplier) loader.loadClass(Op.class.getName())
                    .getConstructor(String.class, int.class, boolean.class)
                    .newInstance(kind, size, route);
        }
        int reps = Math.max(10, 600_000 / size);
        long sink = 0;
        for (int w = 0; w < 4; w++) {
            for (LongSupplier op : ops) {
                for (int i = 0; i < 40_000_000 / size; i++) {
                    sink += op.getAsLong();
                }
            }
        }
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long[] allocated = PairedRounds.allocatedPerCall(ops, reps);
        double[][] t = new double[2][rounds];
        double[] ratio = new double[rounds];
        // with -Dcart.paired.threads=2, a second thread runs the same build's operation (one extractor) at the
        // same time, as the proxy's two event loops do; a round's time is then both threads' CPU time per call
        boolean two = Integer.getInteger("cart.paired.threads", 1) == 2;
        ExecutorService other = two ? Executors.newSingleThreadExecutor() : null;
        for (int r = 0; r < rounds; r++) {
            for (int k = 0; k < 2; k++) {
                int j = (r & 1) == 0 ? k : 1 - k;
                LongSupplier op = ops[j];
                Future<Long> peer = two
                        ? other.submit(() -> {
                            long c0 = mx.getCurrentThreadCpuTime();
                            long x = 0;
                            for (int i = 0; i < reps; i++) {
                                x += op.getAsLong();
                            }
                            return mx.getCurrentThreadCpuTime() - c0 + (x == 42 ? 1 : 0);
                        })
                        : null;
                long t0 = mx.getCurrentThreadCpuTime();
                for (int i = 0; i < reps; i++) {
                    sink += op.getAsLong();
                }
                long cpu = mx.getCurrentThreadCpuTime() - t0;
                t[j][r] = peer == null ? cpu / 1000.0 / reps : (cpu + peer.get()) / 1000.0 / (2.0 * reps);
            }
            ratio[r] = t[1][r] / t[0][r];
        }
        if (other != null) {
            other.shutdown();
        }
        for (double[] x : t) {
            Arrays.sort(x);
        }
        Arrays.sort(ratio);
        String load = PairedRounds.load();
        System.out.printf(
                "%s %d%s%s: A %.2f / %.2f / %.2f us, B %.2f / %.2f / %.2f us (min / median / max), B/A median %.3f"
                        + " (rounds %.3f-%.3f), %d rounds, load %s; allocated A %d B, B %d B per operation%s%n",
                kind,
                size,
                route ? " route" : "",
                two ? ", two threads" : "",
                t[0][0],
                t[0][rounds / 2],
                t[0][rounds - 1],
                t[1][0],
                t[1][rounds / 2],
                t[1][rounds - 1],
                ratio[rounds / 2],
                ratio[0],
                ratio[rounds - 1],
                rounds,
                load,
                allocated[0],
                allocated[1],
                sink == 42 ? " " : "");
    }

    /** One operation of one build, made inside that build's class loader. */
    public static final class Op implements LongSupplier {
        private final PromptExtractor extractor = new PromptExtractor(ExtractOptions.defaults());
        private final byte[][] bodies;
        private final byte[] body;
        private int next;
        private final boolean key;
        private final Router router;
        /** For {@code continuation}: the request extracted once, and the reply. */
        private final ExtractedRequest routed;

        private final List<String> reply;

        public Op(String kind, int size, boolean route) {
            key = kind.equals("key");
            body = key
                    ? TreeWorkload.randomText(new SplittableRandom(1), size).getBytes(StandardCharsets.ISO_8859_1)
                    : kind.equals("plain") ? Bodies.plain(size) : Bodies.realistic(size);
            boolean bench = kind.equals("bench");
            bodies = new byte[kind.equals("distinct") || bench ? 64 : 1][];
            bodies[0] = body;
            for (int v = 1; v < bodies.length; v++) {
                bodies[v] = bench ? Bodies.bench(size, v) : Bodies.realistic(size, v);
            }
            if (bodies.length > 1) {
                bodies[0] = bench ? Bodies.bench(size, 0) : Bodies.realistic(size, 0);
            }
            router = route ? router() : null;
            if (kind.equals("continuation")) {
                try {
                    routed = extractor.extract(Endpoint.CHAT_COMPLETIONS, body);
                } catch (ExtractionException e) {
                    throw new IllegalStateException(e);
                }
                String sentence = "Your order A-1042 was shipped on Monday \u2014 it should arrive by Thursday. ";
                int n = Integer.getInteger("cart.paired.reply", 1300);
                reply = List.of(sentence.repeat(n / sentence.length() + 1).substring(0, n));
            } else {
                routed = null;
                reply = null;
            }
        }

        private static Router router() {
            return WorkloadRouter.build(new TreeWorkload(42));
        }

        @Override
        public long getAsLong() {
            if (routed != null) {
                return extractor.continuationKey(routed, reply).length();
            }
            if (key) {
                return KeyAccess.appendCesu8(
                                PromptKey.textBuilder(PromptKey.DEFAULT_BLOCK_CHARS), body, 0, body.length, body.length)
                        .build()
                        .blockCount();
            }
            try {
                byte[] b = bodies[next];
                next = next + 1 == bodies.length ? 0 : next + 1;
                PromptKey k = extractor.extract(Endpoint.CHAT_COMPLETIONS, b).key();
                if (router != null) {
                    RouteDecision d = router.choose(RouteRequest.of(k));
                    d.lease().close();
                }
                return k.length();
            } catch (ExtractionException e) {
                throw new IllegalStateException(e);
            }
        }
    }
}
