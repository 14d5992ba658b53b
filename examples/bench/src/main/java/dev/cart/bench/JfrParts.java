package dev.cart.bench;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedStackTrace;
import jdk.jfr.consumer.RecordedThread;
import jdk.jfr.consumer.RecordingFile;

/**
 * The proxy's event-loop CPU (or allocation) by part of the request path, from a JFR recording: each execution
 * sample of an event-loop thread ({@code jdk.ExecutionSample}), or each allocation sample's weight
 * ({@code jdk.ObjectAllocationSample}), goes to the part named by the deepest frame that matches one of
 * {@link #PARTS} (leaf first: Jackson under the answer reader is the answer reader, Micrometer under
 * {@code ProxyMetrics} the metrics). Samples of other threads are grouped by thread name.
 *
 * <pre>
 * java -cp examples/bench/target/cart-bench.jar dev.cart.bench.JfrParts REC.jfr cpu|alloc [PER_REQUEST [TOP_LEAVES]]
 * </pre>
 *
 * <p>{@code PER_REQUEST}: a per-request figure of the whole (µs of the loops' CPU, or bytes) to spread over the
 * parts by their share; {@code TOP_LEAVES}: how many leaf frames to list under each part. A recording with 1 ms
 * execution samples: {@code sed 's/java-interval">10 ms/java-interval">1 ms/' $JAVA_HOME/lib/jfr/profile.jfc >
 * hot.jfc}, then the proxy's JVM with {@code -XX:StartFlightRecording=settings=hot.jfc,filename=REC.jfr}
 * (cart-bench's {@code --proxy-opts}).
 */
public final class JfrParts {

    /** Frame-name fragment → part, tried in this order on each frame from the leaf up. */
    static final String[][] PARTS = {
        {"dev.cart.extract.answer.", "answer reading (usage, text)"},
        {"AnswerLearning.", "answer learning"},
        {"RoutingKeys.continuationKey", "answer learning"},
        {"ProxyMetrics.", "metrics"},
        {"KvMetrics.", "metrics"},
        {"FlowMetrics.", "metrics"},
        {"DecisionLog.", "decision line"},
        {"DecisionWindow.", "decision line"},
        {"BatchedConsoleAppender.", "decision line"},
        {"ch.qos.logback", "decision line"},
        {"DecisionWriter.", "decision line"},
        {"dev.cart.proxy.observe.", "metrics"
        }, // the metrics' classes other than ProxyMetrics (Labels, RequestMeters...)
        {"RoutingKeys.extract", "extraction"},
        {"dev.cart.extract.", "extraction"},
        {"PreciseMode.", "precise lookup"},
        {"ProxyFlow.", "admission queue"},
        {"dev.cart.flow.", "admission queue"},
        {"PromptKey", "key: building and hashing"}, // the key's blocks, whoever builds it (extraction, learning)
        {"Router.choose", "route: choose"},
        {"ProxyListener.choose", "route: choose"},
        {"dev.cart.core.", "route: lease and bookkeeping"},
        {"ProxyCore.prepare", "front: prepare other"},
        {"RoutedRequests.", "front: prepare other"},
        {"ProxyCore.plan", "front: plan"},
        {"ProxyCore.finished", "front: finished other"},
        {"Forwarder$Exchange.", "upstream: forwarder"},
        {"AnswerRelay.head", "relay: answer head"},
        {"UpstreamCall.write", "upstream: request build"},
        {"Relay.", "relay other"},
        {"UpstreamCall", "relay other"},
        {"AnswerRelay", "relay other"},
        {"ClientExchange.head", "front: request head"},
        {"BodyIntake.", "front: body intake"},
        {"RequestBody.", "front: body intake"},
        {"ConnectionDeadlines", "timers"},
        {"ScheduledFutureTask", "timers"},
        {"AbstractScheduledEventExecutor", "timers"},
        {"HttpObjectDecoder.", "netty: http decode"},
        {"HttpObjectEncoder.", "netty: http encode"},
        {"doWrite", "netty: socket write"},
        {"flush0", "netty: socket write"},
        {"doReadBytes", "netty: socket read"},
        {"NettyUpstream", "upstream pool"},
        {"DefaultPromise.", "netty: promises"},
        {"ClientExchange", "front other"},
        {"NettyFront", "front other"},
        {"epollInReady", "netty: read other"},
        {"EpollIoHandler", "netty: loop"},
        {"NioIoHandler", "netty: loop"},
        {"SingleThreadEventExecutor", "netty: tasks"},
    };

    private JfrParts() {}

    /**
     * Prints the parts of a recording.
     *
     * @param args the recording, {@code cpu} or {@code alloc}, and optionally the per-request figure and the
     *     number of leaves per part
     * @throws IOException when the recording cannot be read
     */
    public static void main(String[] args) throws IOException {
        if (args.length < 2 || !(args[1].equals("cpu") || args[1].equals("alloc"))) {
            System.err.println("usage: JfrParts REC.jfr cpu|alloc [PER_REQUEST [TOP_LEAVES]]");
            System.exit(2);
            return;
        }
        boolean alloc = args[1].equals("alloc");
        double perRequest = args.length > 2 ? Double.parseDouble(args[2]) : 0;
        int leaves = args.length > 3 ? Integer.parseInt(args[3]) : 0;
        Map<String, Long> parts = new TreeMap<>();
        Map<String, Map<String, Long>> leavesByPart = new HashMap<>();
        long total = 0;
        for (RecordedEvent e : RecordingFile.readAllEvents(Path.of(args[0]))) {
            String type = e.getEventType().getName();
            if (!type.equals(alloc ? "jdk.ObjectAllocationSample" : "jdk.ExecutionSample")) {
                continue;
            }
            RecordedThread t = e.getThread(alloc ? "eventThread" : "sampledThread");
            String thread = t == null || t.getJavaName() == null ? "?" : t.getJavaName();
            long weight = alloc ? e.getLong("weight") : 1;
            RecordedStackTrace st = e.getStackTrace();
            String part = "other thread " + thread.replaceAll("\\d+", "N");
            if (st != null && isLoop(thread) && !st.getFrames().isEmpty()) {
                List<RecordedFrame> frames = st.getFrames();
                part = partOf(frames);
                leavesByPart
                        .computeIfAbsent(part, k -> new HashMap<>())
                        .merge(leaf(frames, alloc ? e.getClass("objectClass").getName() : null), weight, Long::sum);
            }
            parts.merge(part, weight, Long::sum);
            total += weight;
        }
        print(parts, leavesByPart, total, alloc, perRequest, leaves);
    }

    /**
     * The event loops' execution samples of a recording taken from {@code from} to {@code to}, counted by part
     * (threads other than the loops left out): what {@link PhaseParts} spreads a phase's loop CPU over.
     *
     * @throws IOException when the recording cannot be read
     */
    static Map<String, Long> loopParts(Path recording, java.time.Instant from, java.time.Instant to)
            throws IOException {
        Map<String, Long> parts = new TreeMap<>();
        try (RecordingFile file = new RecordingFile(recording)) {
            while (file.hasMoreEvents()) {
                RecordedEvent e = file.readEvent();
                if (!e.getEventType().getName().equals("jdk.ExecutionSample")
                        || e.getStartTime().isBefore(from)
                        || e.getStartTime().isAfter(to)) {
                    continue;
                }
                RecordedThread t = e.getThread("sampledThread");
                RecordedStackTrace st = e.getStackTrace();
                if (t == null
                        || t.getJavaName() == null
                        || !isLoop(t.getJavaName())
                        || st == null
                        || st.getFrames().isEmpty()) {
                    continue;
                }
                parts.merge(partOf(st.getFrames()), 1L, Long::sum);
            }
        }
        return parts;
    }

    private static boolean isLoop(String thread) {
        return thread.contains("EventLoop"); // Netty's default names: multiThreadIoEventLoopGroup-N-M
    }

    /** The part of the deepest frame that names one, else {@code loop: unmatched}. */
    static String partOf(List<RecordedFrame> frames) {
        for (RecordedFrame f : frames) { // leaf first
            String m = f.getMethod().getType().getName() + "." + f.getMethod().getName();
            for (String[] rule : PARTS) {
                if (m.contains(rule[0])) {
                    return rule[1];
                }
            }
        }
        return "loop: unmatched";
    }

    private static String leaf(List<RecordedFrame> frames, String allocatedClass) {
        RecordedFrame f = frames.get(0);
        String leaf =
                simple(f.getMethod().getType().getName()) + "." + f.getMethod().getName();
        if (allocatedClass == null) {
            return leaf;
        }
        leaf += " <" + allocatedClass + ">";
        for (RecordedFrame g : frames) { // the first frame outside the JDK
            String type = g.getMethod().getType().getName();
            if (!type.startsWith("java.")) {
                return leaf + " @" + simple(type) + "." + g.getMethod().getName() + ":" + g.getLineNumber();
            }
        }
        return leaf;
    }

    private static String simple(String type) {
        return type.substring(type.lastIndexOf('.') + 1);
    }

    private static void print(
            Map<String, Long> parts,
            Map<String, Map<String, Long>> leavesByPart,
            long total,
            boolean alloc,
            double perRequest,
            int leaves) {
        System.out.printf(Locale.ROOT, "total %d%s%n", total, alloc ? " bytes (sampled weight)" : " samples");
        if (total == 0) {
            return;
        }
        List<Map.Entry<String, Long>> sorted = new ArrayList<>(parts.entrySet());
        sorted.sort((x, y) -> Long.compare(y.getValue(), x.getValue()));
        for (Map.Entry<String, Long> p : sorted) {
            double share = (double) p.getValue() / total;
            System.out.printf(Locale.ROOT, "%6.2f%%  %8.2f  %s%n", 100 * share, perRequest * share, p.getKey());
            List<Map.Entry<String, Long>> top = new ArrayList<>(
                    leavesByPart.getOrDefault(p.getKey(), Map.of()).entrySet());
            top.sort((x, y) -> Long.compare(y.getValue(), x.getValue()));
            for (Map.Entry<String, Long> l : top.subList(0, Math.min(leaves, top.size()))) {
                System.out.printf(Locale.ROOT, "            %5.2f%% %s%n", 100.0 * l.getValue() / total, l.getKey());
            }
        }
    }
}
