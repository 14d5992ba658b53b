import jdk.jfr.consumer.*;
import java.nio.file.*;
import java.util.*;
/**
 * A JFR recording of the proxy, by phase of the request path: each event-loop sample (jdk.ExecutionSample), or
 * each allocation sample's weight (jdk.ObjectAllocationSample), goes to the phase of the deepest frame that names
 * one (Jackson under ResponseObserver is the observer, Micrometer under ProxyMetrics the metrics, ...).
 *
 *   java examples/bench/profile/Phases.java REC.jfr cpu|alloc [PER_REQUEST [TOP_LEAVES]]
 *
 * PER_REQUEST (optional): a per-request figure of the whole (µs, bytes) to spread over the phases by share;
 * TOP_LEAVES: the leaf frames (for alloc: the class and the first non-JDK frame) listed under each phase.
 * A recording with 1 ms execution samples and 20000 allocation samples a second:
 *   sed -e 's/java-interval">10 ms/java-interval">1 ms/' -e 's/allocation-profiling">300\/s/allocation-profiling">20000\/s/' \
 *     $JAVA_HOME/lib/jfr/profile.jfc > hot.jfc
 */
public class Phases {
  static final String[][] RULES = {
    {"ResponseObserver.", "observer (answer parse)"},
    {"AnswerLearning.", "answer learning (continuation key + insert)"},
    {"RoutingKeys.continuationKey", "answer learning (continuation key + insert)"},
    {"ProxyMetrics.", "metrics"},
    {"DecisionLog.", "decision line"},
    {"BatchedConsoleAppender.", "decision line"},
    {"ch.qos.logback", "decision line"},
    {"RoutingKeys.extract", "decision: extract"},
    {"PromptExtractor.extract", "decision: extract"},
    {"Router.choose", "decision: choose"},
    {"ProxyListener.choose", "decision: choose"},
    {"Router.", "router bookkeeping (lease/record)"},
    {"Lease.", "router bookkeeping (lease/record)"},
    {"ProxyCore.prepare", "decision: prepare other"},
    {"ProxyCore.plan", "head: plan"},
    {"ProxyCore.finished", "end: finished other"},
    {"Forwarder$Exchange.answered", "answer head: answered"},
    {"Forwarder$Exchange.next", "decision: forwarder next other"},
    {"NettyFront$Connection$Call.relayHead", "answer head: relay"},
    {"NettyFront$Connection$Call.write", "upstream request build"},
    {"NettyFront$Connection.head", "head: request head"},
    {"Relay.", "relay other"},
    {"ScheduledFutureTask", "timers"},
    {"AbstractScheduledEventExecutor", "timers"},
    {"HttpObjectDecoder.", "netty: http decode"},
    {"HttpObjectEncoder.", "netty: http encode"},
    {"doWrite", "netty: socket write"},
    {"flush0", "netty: socket write"},
    {"doReadBytes", "netty: socket read"},
    {"NettyUpstream", "upstream pool"},
    {"DefaultPromise.", "netty: promises"},
    {"NettyFront", "front other"},
    {"epollInReady", "netty: read other"},
    {"EpollIoHandler", "netty: loop"},
    {"SingleThreadEventExecutor", "netty: tasks"},
  };
  public static void main(String[] a) throws Exception {
    boolean alloc = a[1].equals("alloc");
    Map<String, Long> cat = new TreeMap<>(); long total = 0;
    Map<String, Map<String, Long>> leafs = new HashMap<>();
    for (RecordedEvent e : RecordingFile.readAllEvents(Path.of(a[0]))) {
      String n = e.getEventType().getName();
      if (alloc ? !n.equals("jdk.ObjectAllocationSample") : !n.equals("jdk.ExecutionSample")) continue;
      RecordedThread t = alloc ? e.getThread("eventThread") : e.getThread("sampledThread");
      String tn = t == null || t.getJavaName() == null ? "?" : t.getJavaName();
      long w = alloc ? e.getLong("weight") : 1;
      RecordedStackTrace st = e.getStackTrace();
      String c = "other thread " + tn.replaceAll("\\d+", "N");
      if (st != null && tn.contains("EventLoop")) {
        c = "loop: unmatched";
        List<RecordedFrame> fr = st.getFrames();
        outer:
        for (RecordedFrame f : fr) { // leaf first
          String m = f.getMethod().getType().getName() + "." + f.getMethod().getName();
          for (String[] r : RULES) if (m.contains(r[0])) { c = r[1]; break outer; }
        }
        if (st.getFrames().size() > 0) {
          RecordedFrame f = st.getFrames().get(0);
          String leaf = f.getMethod().getType().getName().replaceAll("^.*\\.", "") + "." + f.getMethod().getName() + (alloc ? " <" + e.getClass("objectClass").getName() + ">" : "");
          if (alloc) { // the first non-JDK frame too
            for (RecordedFrame g : fr(st)) { String tt = g.getMethod().getType().getName(); if (!tt.startsWith("java.")) { leaf += " @" + tt.replaceAll("^.*\\.", "") + "." + g.getMethod().getName() + ":" + g.getLineNumber(); break; } }
          }
          leafs.computeIfAbsent(c, k -> new HashMap<>()).merge(leaf, w, Long::sum);
        }
      }
      cat.merge(c, w, Long::sum); total += w;
    }
    double scale = a.length > 2 ? Double.parseDouble(a[2]) : 0; // per-request figure of the whole (us or bytes)
    final long T = total;
    System.out.printf("total %d%s%n", total, alloc ? " bytes (sampled weight)" : " samples");
    cat.entrySet().stream().sorted((x, y) -> Long.compare(y.getValue(), x.getValue())).forEach(x -> {
      System.out.printf("%6.2f%%  %8.2f  %s%n", 100.0 * x.getValue() / T, scale * x.getValue() / T, x.getKey());
      if (a.length > 3) leafs.getOrDefault(x.getKey(), Map.of()).entrySet().stream().sorted((p, q) -> Long.compare(q.getValue(), p.getValue())).limit(Integer.parseInt(a[3])).forEach(p -> System.out.printf("            %5.2f%% %s%n", 100.0 * p.getValue() / T, p.getKey()));
    });
  }
  static List<RecordedFrame> fr(RecordedStackTrace st) { return st.getFrames(); }
}
