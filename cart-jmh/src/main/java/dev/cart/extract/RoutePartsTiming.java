package dev.cart.extract;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import dev.cart.core.PromptKey;
import dev.cart.core.RouteDecision;
import dev.cart.core.RouteRequest;
import dev.cart.core.Router;
import dev.cart.core.TreeOps;
import dev.cart.core.TreeWorkload;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * The end-to-end route of {@link RouteBenchmark} split into its parts, in thread CPU time (as
 * {@link CpuTiming}), the parts interleaved in each round so that all of them see the same load:
 *
 * <ul>
 *   <li>Jackson on its own: creating and closing a parser over the body; reading every token of the body
 *       without asking for any string's text (Jackson skips each string byte by byte: the floor any
 *       extraction on Jackson's tokenizer pays); the same asking for every string's text (Jackson decoding
 *       the text into its own buffer, against which the extraction's own decoding compares);</li>
 *   <li>the extraction by parts: its set-up (sections, cursor, dialect), the parse into sections, the model
 *       marker, the key built from the parsed sections, the whole extraction;</li>
 *   <li>the router: a tree {@code match} of the body's key on a tree of the same content as the router's
 *       (the {@link TreeWorkload} and the key), a refreshing {@code insert} of it, {@code choose} with the
 *       lease closed, and the whole route.</li>
 * </ul>
 * Uses package-private classes of cart-extract, so it runs against this build's jar only. Run: {@code java
 * -Xms2g -Xmx2g -cp cart-jmh/target/benchmarks.jar dev.cart.extract.RoutePartsTiming realistic 4096 41}.
 */
public final class RoutePartsTiming {

    private interface Op {
        void run() throws Exception;
    }

    private static volatile Object sink;
    private static long consumed;

    private RoutePartsTiming() {}

    public static void main(String[] args) throws Exception {
        String kind = args.length > 0 ? args[0] : "realistic";
        int size = args.length > 1 ? Integer.parseInt(args[1]) : 4096;
        int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 41;
        byte[] body = kind.equals("plain") ? Bodies.plain(size) : Bodies.realistic(size);
        ExtractOptions opts = ExtractOptions.defaults();
        PromptExtractor extractor = new PromptExtractor(opts);
        ToolsCache tools = new ToolsCache();
        ModelMarkers markers = new ModelMarkers();
        Extraction parsed = new Extraction(extractor.factory(), opts, Endpoint.CHAT_COMPLETIONS, body, tools, markers);
        parsed.parse();
        char[] model = "llama-3.1-8b-instruct".toCharArray();
        PromptKey key = extractor.extract(Endpoint.CHAT_COMPLETIONS, body).key();

        TreeWorkload w = new TreeWorkload(42);
        Router router = WorkloadRouter.build(w);
        TreeOps tree = new TreeOps(w, key);

        String[] names = {
            "Jackson: create + close a parser",
            "Jackson: every token, no string read",
            "Jackson: every token, every string read",
            "extraction: set-up (sections, cursor)",
            "extraction: parse into sections",
            "extraction: model marker, made",
            "extraction: model marker, from the cache",
            "extraction: key from the sections",
            "extraction: whole",
            "tree: match",
            "tree: refreshing insert",
            "router: choose + lease close",
            "route: whole"
        };
        Op[] ops = {
            () -> {
                JsonParser p = extractor.factory().createParser(body);
                p.close();
                sink = p;
            },
            () -> {
                try (JsonParser p = extractor.factory().createParser(body)) {
                    int n = 0;
                    while (p.nextToken() != null) {
                        n++;
                    }
                    consumed += n;
                }
            },
            () -> {
                try (JsonParser p = extractor.factory().createParser(body)) {
                    JsonToken t;
                    int n = 0;
                    while ((t = p.nextToken()) != null) {
                        if (t == JsonToken.VALUE_STRING) {
                            n += p.getTextLength();
                        }
                    }
                    consumed += n;
                }
            },
            () -> sink = new Extraction(extractor.factory(), opts, Endpoint.CHAT_COMPLETIONS, body, tools, markers),
            () -> {
                Extraction x =
                        new Extraction(extractor.factory(), opts, Endpoint.CHAT_COMPLETIONS, body, tools, markers);
                x.parse();
                sink = x;
            },
            () -> sink = Extraction.modelMarker("llama-3.1-8b-instruct"),
            () -> sink = markers.marker(new String(model), null, null),
            () -> sink = parsed.result(),
            () -> sink = extractor.extract(Endpoint.CHAT_COMPLETIONS, body),
            () -> consumed += tree.match(),
            () -> consumed += tree.refresh() ? 1 : 0,
            () -> {
                RouteDecision d = router.choose(RouteRequest.of(key));
                d.lease().close();
                sink = d;
            },
            () -> {
                PromptKey k = extractor.extract(Endpoint.CHAT_COMPLETIONS, body).key();
                RouteDecision d = router.choose(RouteRequest.of(k));
                d.lease().close();
                sink = d;
            }
        };
        boolean[] run = new boolean[ops.length];
        for (String part : (args.length > 3 ? args[3] : "all").split(",")) {
            if (part.equals("all")) {
                Arrays.fill(run, true);
            } else {
                run[Integer.parseInt(part)] = true;
            }
        }
        int reps = Math.max(20, 800_000 / size);
        double[][] us = new double[ops.length][rounds];
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        for (int pass = 0; pass < 4; pass++) { // warm-up: each part about as often as PairedCpuTiming warms a build up
            for (int k = 0; k < ops.length; k++) {
                for (int i = 0; run[k] && i < 40_000_000 / size; i++) {
                    ops[k].run();
                }
            }
        }
        for (int r = -5; r < rounds; r++) { // and five rounds more
            for (int k = 0; k < ops.length; k++) {
                if (!run[k]) {
                    continue;
                }
                long start = mx.getCurrentThreadCpuTime();
                for (int i = 0; i < reps; i++) {
                    ops[k].run();
                }
                long end = mx.getCurrentThreadCpuTime();
                if (r >= 0) {
                    us[k][r] = (end - start) / 1e3 / reps;
                }
            }
        }
        String load = Files.readString(Path.of("/proc/loadavg")).split(" ")[0];
        System.out.printf(
                "%s %d (%d B, key %d units), %d rounds, load %s; CPU us per operation%n",
                kind, size, body.length, key.length(), rounds, load);
        for (int k = 0; k < ops.length; k++) {
            if (!run[k]) {
                continue;
            }
            double[] v = us[k].clone();
            Arrays.sort(v);
            System.out.printf("  %-42s min %7.3f  median %7.3f%n", names[k], v[0], v[v.length / 2]);
        }
        router.close();
        if (consumed == 42) {
            System.out.println();
        }
    }
}
