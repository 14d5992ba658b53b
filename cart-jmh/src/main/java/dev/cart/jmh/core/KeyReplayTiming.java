package dev.cart.jmh.core;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.cart.core.PromptKey;
import dev.cart.core.internal.KeyAccess;
import dev.cart.jmh.extract.Bodies;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;
import java.util.Locale;

/**
 * What building a key costs for text that is not ASCII, against ASCII text of the same number of bytes: the key
 * builder's CESU-8 entry point (what extraction replays a message's text through) over the messages' text of a
 * 40 KB {@link Bodies#realistic} body (words, escapes' characters, accented and CJK characters, emoji) and over
 * ASCII letters, by the thread's CPU time, rounds interleaved. For the non-ASCII text it also times its two steps
 * per block apart: finding where a block of 64 units ends ({@code PromptKey.skipUnits}, package-private, reached
 * through a private lookup) and hashing the block ({@code PromptKey.hashBlock}).
 *
 * <p>Why: an ASCII block's end is its 64th byte and its hash a straight-line function of 64 bytes; a block with
 * two- and three-byte characters needs its units counted to find its end, and its hash runs the general loop.
 * Run: {@code java -Xms1g -Xmx1g -cp cart-jmh/target/benchmarks.jar dev.cart.jmh.core.KeyReplayTiming [rounds]}
 * (31 unless given).
 */
public final class KeyReplayTiming {

    private static final int CALLS = 200;

    private KeyReplayTiming() {}

    public static void main(String[] args) throws Throwable {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 31;
        String text = messagesText(Bodies.realistic(40 * 1024));
        byte[] mixed = cesu8(text);
        int units = text.length();
        byte[] ascii = new byte[mixed.length];
        for (int i = 0; i < ascii.length; i++) {
            ascii[i] = (byte) ('a' + i % 26);
        }
        MethodHandles.Lookup in = MethodHandles.privateLookupIn(PromptKey.class, MethodHandles.lookup());
        MethodHandle skip = in.findStatic(
                PromptKey.class,
                "skipUnits",
                MethodType.methodType(int.class, byte[].class, int.class, int.class, int.class));
        MethodHandle hash = in.findStatic(
                PromptKey.class,
                "hashBlock",
                MethodType.methodType(long.class, byte[].class, int.class, int.class, int.class, long.class));
        int[] ends = blockEnds(skip, mixed);

        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        double[][] t = new double[4][rounds];
        long sink = 0;
        for (int r = -10; r < rounds; r++) { // the first ten rounds warm up
            long t0 = mx.getCurrentThreadCpuTime();
            for (int i = 0; i < CALLS; i++) {
                sink += key(mixed, units).blockCount();
            }
            long t1 = mx.getCurrentThreadCpuTime();
            for (int i = 0; i < CALLS; i++) {
                sink += key(ascii, ascii.length).blockCount();
            }
            long t2 = mx.getCurrentThreadCpuTime();
            for (int i = 0; i < CALLS; i++) {
                int p = 0;
                for (int k = 0; k < ends.length; k++) {
                    p = (int) skip.invokeExact(mixed, p, mixed.length, PromptKey.DEFAULT_BLOCK_CHARS);
                }
                sink += p;
            }
            long t3 = mx.getCurrentThreadCpuTime();
            for (int i = 0; i < CALLS; i++) {
                int p = 0;
                long h = 0;
                for (int end : ends) {
                    h = (long) hash.invokeExact(mixed, p, end - p, PromptKey.DEFAULT_BLOCK_CHARS, h);
                    p = end;
                }
                sink += h;
            }
            long t4 = mx.getCurrentThreadCpuTime();
            if (r >= 0) {
                t[0][r] = (t1 - t0) / 1e3 / CALLS;
                t[1][r] = (t2 - t1) / 1e3 / CALLS;
                t[2][r] = (t3 - t2) / 1e3 / CALLS;
                t[3][r] = (t4 - t3) / 1e3 / CALLS;
            }
        }
        double[] ratio = new double[rounds];
        for (int r = 0; r < rounds; r++) {
            ratio[r] = t[0][r] / t[1][r];
        }
        System.out.printf(
                Locale.ROOT,
                "text: %d bytes, %d units (%d blocks of %d units); ASCII: %d bytes%n",
                mixed.length,
                units,
                ends.length,
                PromptKey.DEFAULT_BLOCK_CHARS,
                ascii.length);
        System.out.printf(Locale.ROOT, "key of the text:        %s µs%n", figure(t[0]));
        System.out.printf(Locale.ROOT, "key of ASCII:           %s µs%n", figure(t[1]));
        System.out.printf(Locale.ROOT, "text / ASCII, by round: %s%n", figure(ratio));
        System.out.printf(Locale.ROOT, "the text's block ends:  %s µs%n", figure(t[2]));
        System.out.printf(Locale.ROOT, "the text's block hashes: %s µs%n", figure(t[3]));
        System.out.println("(medians and ranges over " + rounds + " rounds; checksum " + (sink & 1) + ")");
    }

    private static PromptKey key(byte[] bytes, int units) {
        PromptKey.Builder b = PromptKey.textBuilder(PromptKey.DEFAULT_BLOCK_CHARS, PromptKey.DEFAULT_ANCHOR_LIMIT);
        KeyAccess.appendCesu8(b, bytes, 0, bytes.length, units);
        return b.build();
    }

    /** Where each whole block of {@code b} ends. */
    private static int[] blockEnds(MethodHandle skip, byte[] b) throws Throwable {
        int[] ends = new int[b.length / PromptKey.DEFAULT_BLOCK_CHARS + 1];
        int n = 0;
        int p = 0;
        while (true) {
            int q = (int) skip.invokeExact(b, p, b.length, PromptKey.DEFAULT_BLOCK_CHARS);
            if (q >= b.length) {
                return Arrays.copyOf(ends, n);
            }
            ends[n++] = q;
            p = q;
        }
    }

    /** The messages' contents of a chat body, one after another: the text extraction replays into a key. */
    private static String messagesText(byte[] body) throws IOException {
        StringBuilder text = new StringBuilder();
        for (JsonNode m : new ObjectMapper().readTree(body).path("messages")) {
            text.append(m.path("content").asText(""));
        }
        return text.toString();
    }

    /**
     * UTF-16 units as CESU-8 (one to three bytes each, a surrogate as three): the JDK's modified UTF-8, which
     * differs from CESU-8 only in writing U+0000 as two bytes, less its two-byte length.
     */
    private static byte[] cesu8(String s) throws IOException {
        if (s.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("modified UTF-8 writes U+0000 as two bytes");
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream(s.length() * 2);
        new DataOutputStream(out).writeUTF(s);
        byte[] b = out.toByteArray();
        return Arrays.copyOfRange(b, 2, b.length);
    }

    private static String figure(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return String.format(Locale.ROOT, "%.2f (%.2f–%.2f)", s[s.length / 2], s[0], s[s.length - 1]);
    }
}
