package dev.cart.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The event loops' CPU per request by part of the request path, for the proxy targets of cart-bench's overhead
 * mode ({@code --parts}): the harness's answer to "which part of CART costs what, per request, on the thread
 * that serves it".
 *
 * <p>How: for each closed-loop phase of a proxy target ({@code cart}, {@code cart-base}) and of {@code ref-netty}
 * (recorded alike, so that an excess over it does not include the recording's own cost), a JFR recording with 1
 * ms Java execution samples runs in the proxy's JVM from before the phase's warm-up (started with {@code jcmd},
 * so that the compilation a recording's start causes falls in the warm-up) to the phase's end, and only the
 * samples taken during the phase count; the Netty event loops' user and system ticks are read from
 * {@code /proc} at the phase's two ends. Execution
 * samples see Java code only, so the loops' <em>user</em> time per request is spread over the parts
 * ({@link JfrParts#PARTS}) by their share of the loops' samples, and the loops' <em>system</em> time (the socket
 * reads and writes in the kernel) is its own row. Sampling stops each thread briefly every millisecond and JFR's
 * own threads take CPU: a phase with {@code --parts} costs a little more than one without, so compare parts
 * within a run and take whole-proxy figures from runs without it.
 *
 * <p>Not thread-safe: the benchmark's main thread drives it, one phase at a time.
 */
final class PhaseParts {

    /** Netty's event-loop threads as {@code /proc} names them (15 characters at most). */
    private static final String[] LOOP_NAMES = {"multiThreadIo", "epollEventLoop", "nioEventLoop"};

    private static final String SYSTEM_ROW = "kernel: socket reads and writes (loops' system time)";

    private final String jcmd;
    private final Path settings;
    private final Path dir;
    /** Phase label (target, size, streaming) → part → µs of loop CPU per request. */
    private final Map<String, Map<String, Double>> phases = new LinkedHashMap<>();

    private long pid;
    private Instant from = Instant.MIN;
    private ThreadCpu.Sample before = ThreadCpu.Sample.NONE;

    private PhaseParts(String jcmd, Path settings, Path dir) {
        this.jcmd = jcmd;
        this.settings = settings;
        this.dir = dir;
    }

    /**
     * Writes the recording settings (the JDK's {@code profile.jfc} of {@code proxyJava}'s home with Java
     * samples every millisecond) into {@code out}.
     */
    static PhaseParts create(String proxyJava, Path out) throws IOException {
        Path home = Path.of(proxyJava).toAbsolutePath().getParent().getParent();
        String profile = Files.readString(home.resolve("lib/jfr/profile.jfc"));
        String hot = profile.replace("java-interval\">10 ms<", "java-interval\">1 ms<");
        if (hot.equals(profile)) {
            throw new IOException(
                    "no 10 ms Java sampling interval to shorten in " + home.resolve("lib/jfr/profile.jfc"));
        }
        Path settings = out.resolve("parts.jfc");
        Files.writeString(settings, hot);
        return new PhaseParts(home.resolve("bin/jcmd").toString(), settings, out);
    }

    /**
     * Starts recording process {@code pid}, before the phase's warm-up: starting a recording makes the JVM compile
     * and instrument its event classes, work that belongs in the warm-up, not in the measured phase.
     */
    void arm(long pid) throws IOException, InterruptedException {
        this.pid = pid;
        String answer =
                Children.run(List.of(jcmd, Long.toString(pid), "JFR.start", "name=cart-parts", "settings=" + settings));
        if (!answer.contains("Started recording")) {
            throw new IOException("JFR.start in " + pid + ": " + answer.strip());
        }
    }

    /** The measured phase begins: samples count from now, and the loops' CPU is read; {@link #stop} ends it. */
    void start() {
        from = Instant.now();
        before = ThreadCpu.read(pid);
    }

    /**
     * Stops the recording {@link #start} began and spreads the loops' CPU over the parts of {@code phase}'s
     * requests; returns the lines to print.
     */
    List<String> stop(ProxyBench.Phase phase) throws IOException, InterruptedException {
        long[] userSystem = ThreadCpu.userSystem(before, ThreadCpu.read(pid), PhaseParts::isLoop);
        Instant to = Instant.now();
        Path rec = dir.resolve(
                "parts-" + phase.target() + "-" + phase.size() + "-" + (phase.stream() ? "sse" : "json") + ".jfr");
        String answer =
                Children.run(List.of(jcmd, Long.toString(pid), "JFR.stop", "name=cart-parts", "filename=" + rec));
        if (!Files.isRegularFile(rec)) {
            throw new IOException("JFR.stop in " + pid + ": " + answer.strip());
        }
        Map<String, Long> samples = JfrParts.loopParts(rec, from, to);
        Map<String, Double> perRequest = spread(samples, ThreadCpu.Split.perRequest(userSystem[0], phase.ok()));
        perRequest.put(SYSTEM_ROW, ThreadCpu.Split.perRequest(userSystem[1], phase.ok()));
        String label = unique(phases.keySet(), label(phase));
        phases.put(label, perRequest);
        long total = samples.values().stream().mapToLong(Long::longValue).sum();
        List<String> lines = new ArrayList<>();
        lines.add(String.format(
                Locale.ROOT,
                "   %s: event loops %.1f user + %.1f sys us/req, %d samples",
                label,
                ThreadCpu.Split.perRequest(userSystem[0], phase.ok()),
                ThreadCpu.Split.perRequest(userSystem[1], phase.ok()),
                total));
        perRequest.forEach((part, us) -> lines.add(String.format(Locale.ROOT, "     %8.2f  %s", us, part)));
        return lines;
    }

    /** {@code userMicros} spread over the parts by their share of {@code samples}, largest first. */
    static Map<String, Double> spread(Map<String, Long> samples, double userMicros) {
        long total = samples.values().stream().mapToLong(Long::longValue).sum();
        Map<String, Double> out = new LinkedHashMap<>();
        if (total == 0) {
            return out;
        }
        samples.entrySet().stream()
                .sorted((x, y) -> Long.compare(y.getValue(), x.getValue()))
                .forEach(e -> out.put(e.getKey(), userMicros * e.getValue() / total));
        return out;
    }

    static boolean isLoop(String threadName) {
        for (String prefix : LOOP_NAMES) {
            if (threadName.startsWith(prefix)) {
                return true;
            }
        }
        return false;
    }

    /**
     * {@code label}, or with the first free {@code " #2"}, {@code " #3"}... after it when {@code taken} has it: a
     * target measured twice in a run (an A B B A order) keeps both columns.
     */
    static String unique(Set<String> taken, String label) {
        if (!taken.contains(label)) {
            return label;
        }
        int n = 2;
        while (taken.contains(label + " #" + n)) {
            n++;
        }
        return label + " #" + n;
    }

    private static String label(ProxyBench.Phase p) {
        return p.target() + " " + p.size() + " B " + (p.stream() ? "sse" : "json");
    }

    /** The phases recorded so far as one Markdown table: a row per part, a column per phase. */
    String table() {
        if (phases.isEmpty()) {
            return "";
        }
        Set<String> parts = new LinkedHashSet<>();
        phases.values().forEach(m -> parts.addAll(m.keySet()));
        StringBuilder sb = new StringBuilder("\n## Event-loop CPU by part (closed loop, --parts)\n\n");
        sb.append("µs of the event loops' CPU per request: user time spread by JFR's Java samples of the loops, ")
                .append("system time its own row.\n\n| part |");
        phases.keySet().forEach(l -> sb.append(' ').append(l).append(" |"));
        sb.append("\n|---|");
        phases.keySet().forEach(l -> sb.append("---:|"));
        sb.append('\n');
        for (String part : parts) {
            sb.append("| ").append(part).append(" |");
            for (Map<String, Double> m : phases.values()) {
                Double v = m.get(part);
                sb.append(' ')
                        .append(v == null ? "" : String.format(Locale.ROOT, "%.2f", v))
                        .append(" |");
            }
            sb.append('\n');
        }
        return sb.toString();
    }
}
