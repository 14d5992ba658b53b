package dev.cart.extract;

import dev.cart.core.PromptKey;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;

/**
 * Where an extraction's time goes, by parts, in thread CPU time (as {@link CpuTiming}): parsing the body
 * into its sections (Jackson's tokens and the decoding of the text), the sections' own work of replaying
 * the messages (into a sink that does nothing), the same replay into a key builder, and the whole
 * extraction. The difference between the two replays is the key builder's work, which feeding the sections
 * to the builder as they are scanned would still have to do; the replay into nothing is the most such
 * streaming could save of the replay. Also counts what the messages' text is made of: the builder calls
 * the replay makes (ASCII runs and runs holding other characters), the escapes and non-ASCII characters
 * of the body, and the 64-character blocks that hold a character above U+00FF; and the bytes each part
 * allocates per operation. Uses package-private classes of cart-extract, so it runs against this build's
 * jar only. Run: {@code java -cp cart-jmh/target/benchmarks.jar
 * dev.cart.extract.ExtractPartsTiming realistic 32768 41} (kind plain, realistic or bench, body size, rounds).
 */
public final class ExtractPartsTiming {

    private interface Op {
        void run() throws Exception;
    }

    private static volatile Object sink;
    private static long consumed;

    private ExtractPartsTiming() {}

    public static void main(String[] args) throws Exception {
        String kind = args.length > 0 ? args[0] : "realistic";
        int size = args.length > 1 ? Integer.parseInt(args[1]) : 32_768;
        int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 41;
        byte[] body = switch (kind) {
            case "plain" -> Bodies.plain(size);
            case "bench" -> Bodies.bench(size, 0);
            default -> Bodies.realistic(size);
        };
        ExtractOptions opts = ExtractOptions.defaults();
        PromptExtractor extractor = new PromptExtractor(opts);
        ToolsCache tools = new ToolsCache();
        ModelMarkers markers = new ModelMarkers();
        Extraction parsed = new Extraction(extractor.factory(), opts, Endpoint.CHAT_COMPLETIONS, body, tools, markers);
        parsed.parse();
        Segment.Sink nothing = new Segment.Sink() {
            @Override
            public void appendCesu8(byte[] bytes, int off, int len, int units) {
                consumed += len + units + bytes[off];
            }

            @Override
            public void boundary() {
                consumed++;
            }
        };
        counts(body, parsed);
        String[] names = {
            "parse (Jackson + decoding into sections)",
            "replay of the messages into nothing",
            "replay of the messages into a key builder",
            "whole extraction (parse, replay, build)"
        };
        Op[] ops = {
            () -> {
                Extraction x =
                        new Extraction(extractor.factory(), opts, Endpoint.CHAT_COMPLETIONS, body, tools, markers);
                x.parse();
                sink = x;
            },
            () -> parsed.main.appendTo(nothing),
            () -> {
                PromptKey.Builder b = PromptKey.textBuilder(opts.blockChars(), opts.anchorLimit());
                parsed.main.appendTo(Segment.Sink.of(b));
                sink = b.build();
            },
            () -> sink = extractor.extract(Endpoint.CHAT_COMPLETIONS, body)
        };
        int reps = size > 10_000 ? 200 : 2_000;
        double[][] us = new double[ops.length][rounds];
        long[] allocated = new long[ops.length];
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        com.sun.management.ThreadMXBean sun =
                mx instanceof com.sun.management.ThreadMXBean s && s.isThreadAllocatedMemorySupported() ? s : null;
        for (int r = -10; r < rounds; r++) { // ten rounds of warm-up, the parts interleaved in each round
            for (int k = 0; k < ops.length; k++) {
                long a0 = sun == null ? 0 : sun.getCurrentThreadAllocatedBytes();
                long start = mx.getCurrentThreadCpuTime();
                for (int i = 0; i < reps; i++) {
                    ops[k].run();
                }
                long end = mx.getCurrentThreadCpuTime();
                if (r >= 0) {
                    us[k][r] = (end - start) / 1e3 / reps;
                }
                if (r == 0 && sun != null) {
                    allocated[k] = (sun.getCurrentThreadAllocatedBytes() - a0) / reps;
                }
            }
        }
        System.out.printf("%s %d (%d B), %d rounds; CPU us per operation%n", kind, size, body.length, rounds);
        for (int k = 0; k < ops.length; k++) {
            double[] v = us[k].clone();
            Arrays.sort(v);
            System.out.printf(
                    "  %-44s min %7.2f  median %7.2f  allocated %7d B%n",
                    names[k], v[0], v[v.length / 2], allocated[k]);
        }
        if (consumed == 42) {
            System.out.println();
        }
    }

    private static void counts(byte[] body, Extraction parsed) {
        int[] calls = new int[4]; // ASCII runs, mixed runs, units of mixed runs, boundaries
        parsed.main.appendTo(new Segment.Sink() {
            @Override
            public void appendCesu8(byte[] bytes, int off, int len, int units) {
                if (units == len) {
                    calls[0]++;
                } else {
                    calls[1]++;
                    calls[2] += units;
                }
            }

            @Override
            public void boundary() {
                calls[3]++;
            }
        });
        int escapes = 0;
        int nonAscii = 0;
        for (int i = 0; i < body.length; i++) {
            int c = body[i] & 0xFF;
            if (c == '\\') {
                escapes++;
                i++;
            } else if (c >= 0xC0) {
                nonAscii++;
            }
        }
        String key = parsed.keyText().replace(String.valueOf(Extraction.BOUNDARY_MARK), "");
        int blocks = key.length() / PromptKey.DEFAULT_BLOCK_CHARS;
        int wideBlocks = 0;
        for (int b = 0; b < blocks; b++) {
            for (int j = b * PromptKey.DEFAULT_BLOCK_CHARS; j < (b + 1) * PromptKey.DEFAULT_BLOCK_CHARS; j++) {
                if (key.charAt(j) > 0xFF) {
                    wideBlocks++;
                    break;
                }
            }
        }
        System.out.printf(
                "messages: %d units, replayed as %d ASCII runs and %d mixed runs (%d units) with %d boundaries;"
                        + " body: %d escapes, %d non-ASCII chars; key: %d full blocks, %d of them with a char"
                        + " above U+00FF%n",
                parsed.main.length(), calls[0], calls[1], calls[2], calls[3], escapes, nonAscii, blocks, wideBlocks);
    }
}
