package dev.cart.jmh.extract;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonFactoryBuilder;
import com.fasterxml.jackson.core.StreamReadFeature;
import dev.cart.core.PromptKey;
import dev.cart.core.internal.KeyAccess;
import dev.cart.extract.Endpoint;
import dev.cart.extract.ExtractOptions;
import dev.cart.extract.PromptExtractor;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;
import java.util.Locale;

/**
 * {@link FloorBenchmark}'s three operations (extraction, Jackson's bare token pass, Jackson reading every string's
 * text) and a fourth, the <em>floor</em> (Jackson's token pass, then the key's block hash over as many bytes of the
 * body as the extracted key has units, in blocks of {@link PromptKey#DEFAULT_BLOCK_CHARS}: what any extraction does
 * at the least, taking Jackson as the parser and the key's hash as it is, for a body whose text has no escape and
 * is ASCII, and a little less otherwise) timed against each other in one JVM and one thread, their rounds
 * interleaved, by the thread's CPU time.
 *
 * <p>Why: {@link FloorRatio} runs each operation in forks of its own, minutes apart, and on a shared virtual
 * machine the ratio of two such forks moved by 2-3x between runs of the same code (docs/benchmarks.md). Here a
 * round times the three operations back to back (in a rotating order), so each ratio compares figures taken
 * within milliseconds of each other, under the same load, cache and JIT state; the medians and ranges of the
 * per-round ratios are what it prints. The operations share Jackson's classes in this JVM, as the proxy's
 * extraction and answer reading do. Run: {@code java -Xms1g -Xmx1g -XX:+AlwaysPreTouch -cp
 * cart-jmh/target/benchmarks.jar dev.cart.jmh.extract.FloorCpuTiming [rounds]} (101 unless given).
 */
public final class FloorCpuTiming {

    private static final String[] BODIES = {
        "plain-1024", "plain-4096", "plain-32768", "realistic-4096", "realistic-32768"
    };

    /** About this many bytes of body per timed operation batch, so that a round is a few milliseconds. */
    private static final long BYTES_PER_BATCH = 4L << 20;

    private interface Op {
        int run() throws Exception;
    }

    private FloorCpuTiming() {}

    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 101;
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        JsonFactory factory = new JsonFactoryBuilder()
                .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
                .disable(JsonFactory.Feature.INTERN_FIELD_NAMES)
                .build();
        System.out.println(
                "| body | extract, µs (median, min–max) | Jackson's token pass | Jackson reading every string's"
                        + " text | floor: token pass + the key's hash | extract / token pass: median (IQR; range)"
                        + " | extract / text pass | extract / floor |");
        System.out.println("|---|---|---|---|---|---|---|---|");
        int sink = 0;
        for (String name : BODIES) {
            byte[] body = FloorBenchmark.body(name);
            PromptExtractor x = new PromptExtractor(ExtractOptions.defaults());
            int units = Math.min(
                    body.length,
                    x.extract(Endpoint.CHAT_COMPLETIONS, body).key().length());
            Op[] ops = {
                () -> x.extract(Endpoint.CHAT_COMPLETIONS, body).key().length(),
                () -> FloorBenchmark.tokens(factory, body),
                () -> FloorBenchmark.textPass(factory, body),
                () -> FloorBenchmark.tokens(factory, body) + (int) hashBlocks(body, units)
            };
            int batch = (int) Math.max(1, BYTES_PER_BATCH / body.length);
            for (int w = 0; w < 40; w++) { // warm-up: the three compiled as the rounds will run them
                for (Op op : ops) {
                    for (int i = 0; i < batch; i++) {
                        sink += op.run();
                    }
                }
            }
            double[][] perOp = new double[ops.length][rounds];
            for (int r = 0; r < rounds; r++) {
                for (int k = 0; k < ops.length; k++) {
                    int o = (r + k) % ops.length; // the order rotates, so no operation always runs first
                    long t0 = mx.getCurrentThreadCpuTime();
                    for (int i = 0; i < batch; i++) {
                        sink += ops[o].run();
                    }
                    perOp[o][r] = (mx.getCurrentThreadCpuTime() - t0) / 1e3 / batch;
                }
            }
            double[] toBare = new double[rounds];
            double[] toText = new double[rounds];
            double[] toFloor = new double[rounds];
            for (int r = 0; r < rounds; r++) {
                toBare[r] = perOp[0][r] / perOp[1][r];
                toText[r] = perOp[0][r] / perOp[2][r];
                toFloor[r] = perOp[0][r] / perOp[3][r];
            }
            System.out.printf(
                    Locale.ROOT,
                    "| %s | %s | %s | %s | %s | %s | %s | %s |%n",
                    name,
                    figure(perOp[0]),
                    figure(perOp[1]),
                    figure(perOp[2]),
                    figure(perOp[3]),
                    ratio(toBare),
                    ratio(toText),
                    ratio(toFloor));
        }
        System.out.println("(" + rounds + " rounds per body; checksum " + (sink & 1) + ")");
    }

    /**
     * The key's block hashes over the first {@code n} bytes of {@code body}, chained as a key's are; the last hash
     * (so that the work is not dead code).
     */
    static long hashBlocks(byte[] body, int n) {
        KeyAccess.Secrets key = KeyAccess.secrets();
        long h = 0;
        int block = PromptKey.DEFAULT_BLOCK_CHARS;
        for (int i = 0; i + block <= n; i += block) {
            h = key.hashBytes(body, i, block, h);
        }
        return h;
    }

    private static String figure(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return String.format(Locale.ROOT, "%.2f (%.2f–%.2f)", at(s, 0.5), s[0], s[s.length - 1]);
    }

    private static String ratio(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return String.format(
                Locale.ROOT,
                "**%.2f** (%.2f–%.2f; %.2f–%.2f)",
                at(s, 0.5),
                at(s, 0.25),
                at(s, 0.75),
                s[0],
                s[s.length - 1]);
    }

    private static double at(double[] sorted, double q) {
        return sorted[(int) Math.round(q * (sorted.length - 1))];
    }
}
