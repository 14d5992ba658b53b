package dev.cart.extract.answer;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The SSE line cutter hands over the same payloads however the stream is cut, and finds every newline. */
class SseLinesTest {

    /** What the cutter reported: the payloads in order, and "skipped" for each line too long to read. */
    private static List<String> feed(byte[] stream, int[] cuts) {
        List<String> got = new ArrayList<>();
        SseLines lines = new SseLines(new SseLines.Consumer() {
            @Override
            public void data(byte[] b, int off, int len) {
                got.add(new String(b, off, len, StandardCharsets.UTF_8));
            }

            @Override
            public void lineSkipped() {
                got.add("skipped");
            }
        });
        int from = 0;
        for (int cut : cuts) {
            lines.accept(stream, from, cut - from);
            from = cut;
        }
        lines.accept(stream, from, stream.length - from);
        lines.finish();
        return got;
    }

    /** The payloads read the plain way: the whole stream split at each newline. */
    private static List<String> expected(String stream) {
        List<String> want = new ArrayList<>();
        String[] all = stream.split("\n", -1);
        for (String l : all) {
            if (l.endsWith("\r")) {
                l = l.substring(0, l.length() - 1);
            }
            if (l.getBytes(StandardCharsets.UTF_8).length > SseLines.MAX_LINE_BYTES) {
                want.add("skipped");
            } else if (l.startsWith("data: {")) {
                want.add(l.substring(6));
            } else if (l.startsWith("data:{")) {
                want.add(l.substring(5));
            }
        }
        return want;
    }

    private static String randomStream(SplittableRandom rnd) {
        StringBuilder sb = new StringBuilder();
        int events = rnd.nextInt(1, 30);
        for (int e = 0; e < events; e++) {
            switch (rnd.nextInt(6)) {
                case 0 -> sb.append("event: delta\n");
                case 1 -> sb.append(": a comment\r\n");
                case 2 -> sb.append("data: [DONE]\n");
                default -> {
                    sb.append(rnd.nextBoolean() ? "data: {" : "data:{");
                    int n = rnd.nextInt(0, 40); // payload lengths around the eight-byte steps of the search
                    for (int i = 0; i < n; i++) {
                        sb.append((char) ('a' + rnd.nextInt(26)));
                    }
                    sb.append(rnd.nextBoolean() ? "é\"}" : "}");
                    sb.append(rnd.nextBoolean() ? "\r\n" : "\n");
                }
            }
            if (rnd.nextBoolean()) {
                sb.append('\n'); // the blank line that ends an event
            }
        }
        return sb.toString();
    }

    @Test
    void thePayloadsAreTheSameCutAnywhere() {
        SplittableRandom rnd = new SplittableRandom(15);
        for (int run = 0; run < 2_000; run++) {
            String text = randomStream(rnd);
            byte[] stream = text.getBytes(StandardCharsets.UTF_8);
            List<String> want = expected(text);
            assertEquals(want, feed(stream, new int[0]), text);
            int[] cuts =
                    rnd.ints(rnd.nextInt(0, 12), 0, stream.length + 1).sorted().toArray();
            assertEquals(want, feed(stream, cuts), text + " cut at " + Arrays.toString(cuts));
            int[] everyByte = new int[stream.length];
            for (int i = 0; i < everyByte.length; i++) {
                everyByte[i] = i;
            }
            assertEquals(want, feed(stream, everyByte), text + " cut at every byte");
        }
    }

    @Test
    void everyNewlineIsFoundWhereverItIs() {
        byte[] b = new byte[40];
        Arrays.fill(b, (byte) 'x');
        for (int at = 0; at < b.length; at++) {
            b[at] = '\n';
            for (int from = 0; from < b.length; from++) {
                for (int to = from; to <= b.length; to++) {
                    int want = at >= from && at < to ? at : -1;
                    assertEquals(want, SseLines.newline(b, from, to), "at " + at + " in [" + from + ", " + to + ")");
                }
            }
            b[at] = (byte) (at % 2 == 0 ? 0x8a : 0x0b); // bytes next to '\n' (0x0a) in value, never a newline
        }
    }

    /** The same search for any byte, among bytes that differ from it by one bit or by the sign bit. */
    @Test
    void everyByteIsFoundWhereverItIs() {
        for (int x : new int[] {'u', 0x00, 0x7f, 0x80, 0xff}) {
            byte[] b = new byte[24];
            for (int i = 0; i < b.length; i++) {
                b[i] = (byte) (x ^ (i % 3 == 0 ? 0x80 : 1 << (i % 7))); // never x
            }
            for (int at = 0; at < b.length; at++) {
                byte was = b[at];
                b[at] = (byte) x;
                for (int from = 0; from < b.length; from++) {
                    for (int to = from; to <= b.length; to++) {
                        int want = at >= from && at < to ? at : -1;
                        assertEquals(
                                want,
                                SseLines.indexOf(b, from, to, (byte) x),
                                x + " at " + at + " in [" + from + ", " + to + ")");
                    }
                }
                b[at] = was;
            }
        }
    }

    /** A line longer than the limit is skipped and reported once, whether it comes whole or in pieces. */
    @Test
    void aTooLongLineIsSkippedOnceAndTheNextIsRead() throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write("data: {\"a\":1}\n".getBytes(StandardCharsets.UTF_8));
        out.write("data: {\"".getBytes(StandardCharsets.UTF_8));
        out.write("y".repeat(SseLines.MAX_LINE_BYTES).getBytes(StandardCharsets.UTF_8));
        out.write("\"}\ndata: {\"b\":2}\n".getBytes(StandardCharsets.UTF_8));
        byte[] stream = out.toByteArray();
        List<String> want = List.of("{\"a\":1}", "skipped", "{\"b\":2}");
        assertEquals(want, feed(stream, new int[0]));
        assertEquals(want, feed(stream, new int[] {20, 1000, 600_000}));
    }
}
