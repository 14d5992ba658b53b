package dev.cart.jmh.extract;

import dev.cart.core.ServedUsage;
import dev.cart.extract.Endpoint;
import dev.cart.extract.answer.AnswerReader;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.function.LongSupplier;

/**
 * Two builds' reading of a replica's JSON answer timed against each other in one JVM, as {@link PairedCpuTiming}
 * does for extraction: each build's {@code benchmarks.jar} is loaded by a class loader of its own, their rounds
 * alternate (A B, B A, ...), each timed by the thread's CPU time. The operation is what the proxy does per JSON
 * answer: an {@link AnswerReader} for a chat completion with answer learning on, the body handed over in one piece
 * (its declared length, at the start of the event loop's scratch array, as the proxy copies a direct buffer), then
 * {@code finish()}, the usage and the text. The body is the proxy benchmark's fake replica's answer
 * ({@code FakeReplica}: a 32-word text, usage 250/32/282). Prints, per build, the minimum, median and maximum CPU
 * microseconds per answer, the median and range of the per-round ratio B/A, each order (A first, B first) apart,
 * and the bytes each build allocates per answer. Run with a fixed, pre-touched heap: {@code java -Xms1g -Xmx1g
 * -XX:+AlwaysPreTouch -cp cart-jmh/target/benchmarks.jar dev.cart.jmh.extract.PairedAnswerTiming A.jar B.jar
 * [rounds]}; with {@code A.jar} alone (and {@code -Dcart.answer.seconds}) it runs only that build, for a profile.
 */
public final class PairedAnswerTiming {

    private PairedAnswerTiming() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: PairedAnswerTiming A.jar [B.jar] [rounds]");
            System.exit(2);
        }
        boolean paired = args.length > 1 && args[1].endsWith(".jar");
        int rounds = Integer.parseInt(args.length > (paired ? 2 : 1) ? args[paired ? 2 : 1] : "301");
        URL own = PairedAnswerTiming.class.getProtectionDomain().getCodeSource().getLocation();
        LongSupplier[] ops = new LongSupplier[paired ? 2 : 1];
        for (int j = 0; j < ops.length; j++) {
            // the build's own classes first; this class's Op from this jar when the build has none
            URLClassLoader loader = new URLClassLoader(
                    new URL[] {Path.of(args[j]).toUri().toURL(), own}, ClassLoader.getPlatformClassLoader());
            ops[j] = (LongSupplier)
                    loader.loadClass(Op.class.getName()).getConstructor().newInstance();
        }
        long sink = 0;
        if (!paired) {
            long until = System.nanoTime() + Long.getLong("cart.answer.seconds", 30) * 1_000_000_000L;
            while (System.nanoTime() < until) {
                for (int i = 0; i < 100_000; i++) {
                    sink += ops[0].getAsLong();
                }
            }
            System.out.println(sink == 42 ? " " : "done");
            return;
        }
        int reps = 20_000;
        for (int w = 0; w < 10; w++) {
            for (LongSupplier op : ops) {
                for (int i = 0; i < 100_000; i++) {
                    sink += op.getAsLong();
                }
            }
        }
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long[] allocated = PairedRounds.allocatedPerCall(ops, reps);
        double[][] t = new double[2][rounds];
        double[] ratio = new double[rounds];
        double[] ab = new double[(rounds + 1) / 2];
        double[] ba = new double[rounds / 2];
        for (int r = 0; r < rounds; r++) {
            for (int k = 0; k < 2; k++) {
                int j = (r & 1) == 0 ? k : 1 - k; // even rounds A then B, odd rounds B then A
                LongSupplier op = ops[j];
                long t0 = mx.getCurrentThreadCpuTime();
                for (int i = 0; i < reps; i++) {
                    sink += op.getAsLong();
                }
                t[j][r] = (mx.getCurrentThreadCpuTime() - t0) / 1000.0 / reps;
            }
            ratio[r] = t[1][r] / t[0][r];
            if ((r & 1) == 0) {
                ab[r / 2] = ratio[r];
            } else {
                ba[r / 2] = ratio[r];
            }
        }
        for (double[] x : t) {
            Arrays.sort(x);
        }
        Arrays.sort(ratio);
        Arrays.sort(ab);
        Arrays.sort(ba);
        String load = PairedRounds.load();
        System.out.printf(
                "json answer %d B: A %.3f / %.3f / %.3f us, B %.3f / %.3f / %.3f us (min / median / max), B/A median"
                        + " %.3f (rounds %.3f-%.3f); A first %.3f (%.3f-%.3f), B first %.3f (%.3f-%.3f); %d rounds,"
                        + " load %s; allocated A %d B, B %d B per answer%s%n",
                Op.BODY.length,
                t[0][0],
                t[0][rounds / 2],
                t[0][rounds - 1],
                t[1][0],
                t[1][rounds / 2],
                t[1][rounds - 1],
                ratio[rounds / 2],
                ratio[0],
                ratio[rounds - 1],
                ab[ab.length / 2],
                ab[0],
                ab[ab.length - 1],
                ba[ba.length / 2],
                ba[0],
                ba[ba.length - 1],
                rounds,
                load,
                allocated[0],
                allocated[1],
                sink == 42 ? " " : "");
    }

    /** One build's reading of one answer, made inside that build's class loader. */
    public static final class Op implements LongSupplier {
        /** The fake replica's JSON answer ({@code examples/bench}'s {@code FakeReplica}), byte for byte. */
        static final byte[] BODY = body();

        /** The event loop's scratch array the proxy copies a direct buffer's bytes into. */
        private final byte[] slice = new byte[8 * 1024];

        public Op() {
            System.arraycopy(BODY, 0, slice, 0, BODY.length);
        }

        static byte[] body() {
            String[] words = "the order was sent on the second of the month to the old address and it".split(" ");
            StringBuilder content = new StringBuilder();
            for (int i = 0; i < 32; i++) {
                content.append(words[i % words.length]).append(' ');
            }
            String usage = "\"usage\":{\"prompt_tokens\":250,\"completion_tokens\":32,\"total_tokens\":282}";
            return ("{\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion\","
                            + "\"created\":1700000000,\"model\":\"bench\",\"choices\":[{\"index\":0,\"message\":{\"role\":"
                            + "\"assistant\",\"content\":\"" + content
                            + "\"},\"logprobs\":null,\"finish_reason\":\"stop\"}],"
                            + usage + "}")
                    .getBytes(StandardCharsets.UTF_8);
        }

        @Override
        public long getAsLong() {
            AnswerReader reader =
                    AnswerReader.create(Endpoint.CHAT_COMPLETIONS, "application/json", null, true, BODY.length);
            reader.accept(slice, 0, BODY.length);
            ServedUsage usage = reader.finish();
            List<? extends CharSequence> text = reader.text();
            return usage.promptTokens() + (text == null ? -1 : text.get(0).length());
        }
    }
}
