package dev.cart.proxy.observe;

import dev.cart.core.RouteDecision;
import dev.cart.policy.PredictedTtftPolicy;
import java.util.Locale;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One structured line per proxied request on the logger {@code cart.decision}, in a stable
 * {@code key=value} format (documented in docs/configuration.md):
 *
 * <pre>
 * decision endpoint=/v1/chat/completions method=POST model=llama-3 stream=true reason=cache_hit
 *   replica=http://node1:8000 matched=4096 key_len=5000 ratio=0.819 decision_us=3 status=200
 *   prompt_tokens=1250 cached=1024 upstream_ms=812 retries=0 result=ok total_ms=815 predicted_ms=-
 *   runner_up=- runner_up_ms=- queued_ms=- band=- tenant=-
 * </pre>
 *
 * In precise mode ({@link #preciseKeys}) the line goes on with {@code mode=precise confirmed_tokens=1024
 * held_tokens=1024 tokenize_ms=3 precise=on precise_reason=-}.
 *
 * Keys always appear in this order; a value that does not apply is {@code -}. Values never contain
 * spaces. The line never carries prompt text, header values or credentials: the model name is the only
 * request field logged, reduced to a safe character set.
 *
 * <p>How: the thread handling the request fills in the fields (a few writes each, no formatting, no copy: even
 * the values made safe are made so when the line is written). The record is also the request's {@link
 * RequestEvents}: its metric events ride with the line. The request's end ({@link ProxyMetrics#finished}, or
 * {@link #emit()} for a line alone) takes the end time and hands the record to the process's one {@link
 * DecisionWriter}, whose thread counts its events, formats the line ({@link #line()}) and logs it, in the order
 * the requests finished. When the writer's queue is full the line is dropped and counted ({@code
 * cart_decision_lines_dropped_total}) rather than the request's thread kept waiting (its events are counted on
 * that thread). {@link #flush} writes what is queued (the proxy calls it on close).
 *
 * <p>Not thread-safe: one record per request, filled in by the thread handling it; once handed over the record
 * belongs to the writer and is not changed again.
 */
public final class DecisionLog extends RequestEvents {

    static final Logger LOG = LoggerFactory.getLogger("cart.decision");

    /** The process's writer of decision lines, started with the first line or the first look at its count. */
    private static final class Shared {
        static final DecisionWriter WRITER = new DecisionWriter(DecisionWriter.CAPACITY, LOG::info, r -> {
            Thread t = new Thread(r, "cart-decision-log");
            t.setDaemon(true);
            return t;
        });
    }

    /** Room for a whole line at once (a routed line is about 330 characters), so the builder never grows. */
    private static final int LINE_CAPACITY = 512;

    /** Each thread's builder, reused line after line: a line then allocates only its String. */
    private static final ThreadLocal<StringBuilder> BUILDER =
            ThreadLocal.withInitial(() -> new StringBuilder(LINE_CAPACITY));

    /** True when the line is written: the decision log is on and its logger takes info. */
    private final boolean lineOn;

    private final String endpoint;
    private final String method;
    private final long startNanos = System.nanoTime();
    /** When {@link #emit()} handed the line over: the end of {@code total_ms} and {@code upstream_ms}. */
    private long endNanos;

    private boolean ended;
    private String model = "-";
    private String stream = "-";
    private RouteDecision decision;
    private boolean passThrough;
    private int status;
    private long promptTokens = -1;
    private long cachedTokens = -1;
    private long upstreamNanos = -1;
    private int retries;
    private String result = "-";
    /** Time in the admission queue ({@code flow.*}); -1 when the request did not go through it. */
    private long queuedNanos = -1;

    private int band = -1;
    private String tenant = "-";
    /** True in a proxy in precise mode: the line ends with the precise keys. */
    private boolean preciseKeys;

    private String mode = "-";
    private long confirmedTokens = -1;
    private long heldTokens = -1;
    private long tokenizeNanos = -1;
    private String precise = "-";
    private String preciseReason = "-";

    /**
     * A request's record.
     *
     * @param enabled  whether the request's line is written ({@code proxy.decision_log}); its events are counted
     *                 either way
     * @param endpoint the request's endpoint or path, made safe when written
     * @param method   the request's method
     */
    public DecisionLog(boolean enabled, String endpoint, String method) {
        this.lineOn = enabled && LOG.isInfoEnabled();
        this.endpoint = endpoint;
        this.method = method;
    }

    public void request(String modelName, boolean streamed) {
        this.model = modelName == null ? "-" : modelName;
        this.stream = Boolean.toString(streamed);
    }

    /** The last attempt's decision; {@code passThrough} for a request not routed by prompt. */
    public void decision(RouteDecision d, boolean passThrough) {
        this.decision = d;
        this.passThrough = passThrough;
    }

    /** Id of the replica of the last attempt, or null when no replica was chosen. */
    public String replica() {
        return decision == null || decision.replica() == null
                ? null
                : decision.replica().id();
    }

    public void retries(int n) {
        this.retries = n;
    }

    public void upstreamStarted() {
        if (upstreamNanos < 0) {
            upstreamNanos = System.nanoTime();
        }
    }

    public void status(int s) {
        this.status = s;
    }

    /** What the replica reported about its prompt cache (each figure -1 when it did not report it). */
    public void usage(dev.cart.core.ServedUsage usage) {
        this.promptTokens = usage.promptTokens();
        this.cachedTokens = usage.cachedTokens();
    }

    public void result(String r) {
        this.result = r;
    }

    /**
     * What the admission queue made of the request: its time waiting, its band and its tenant (a digest
     * such as {@code t-1f2e3d4c5b6a7980}, never a key).
     */
    public void flow(long queuedNanos, int band, String tenant) {
        this.queuedNanos = Math.max(0, queuedNanos);
        this.band = band;
        this.tenant = tenant;
    }

    /**
     * The proxy runs in precise mode (some worker has {@code kv_events}): the line ends with {@code mode},
     * {@code confirmed_tokens}, {@code held_tokens}, {@code tokenize_ms}, {@code precise} and
     * {@code precise_reason}, {@code -} until {@link #precise} fills them.
     */
    public void preciseKeys() {
        this.preciseKeys = true;
    }

    /**
     * What precise mode made of the request, for the last attempt's decision: {@code mode} the chosen replica's
     * (null when none was chosen), its confirmed and held engine tokens (-1 when not looked up).
     */
    public void precise(
            dev.cart.proxy.precise.PreciseLookup lookup,
            dev.cart.kvevents.ReplicaMode chosenMode,
            int confirmed,
            int held) {
        this.preciseKeys = true;
        this.mode = chosenMode == null ? "-" : MODES[chosenMode.ordinal()];
        this.confirmedTokens = confirmed;
        this.heldTokens = held;
        this.tokenizeNanos = lookup.tokenizeNanos();
        this.precise = lookup.on() ? "on" : "off";
        this.preciseReason = lookup.on() ? "-" : lookup.off();
    }

    /** {@link dev.cart.kvevents.ReplicaMode}'s values as the line writes them, by ordinal. */
    private static final String[] MODES = java.util.Arrays.stream(dev.cart.kvevents.ReplicaMode.values())
            .map(m -> m.name().toLowerCase(Locale.ROOT))
            .toArray(String[]::new);

    /**
     * The decision line: {@code total_ms} and {@code upstream_ms} end when {@link #emit()} was called, or now
     * when it was not.
     */
    public String line() {
        long end = ended ? endNanos : System.nanoTime();
        StringBuilder b = BUILDER.get();
        b.setLength(0);
        b.append("decision endpoint=")
                .append(safe(endpoint, 200))
                .append(" method=")
                .append(safe(method, 16))
                .append(" model=")
                .append(safe(model, 100))
                .append(" stream=")
                .append(stream);
        if (decision != null) {
            b.append(" reason=")
                    .append(
                            passThrough && decision.routed()
                                    ? Labels.PASS_THROUGH
                                    : decision.reason().code())
                    .append(" replica=")
                    .append(
                            decision.replica() == null
                                    ? "-"
                                    : decision.replica().id())
                    .append(" matched=")
                    .append(decision.matchedLength())
                    .append(" key_len=")
                    .append(decision.keyLength())
                    .append(" ratio=");
            ratio(b, decision.matchedRatio());
            b.append(" decision_us=").append(decision.decisionNanos() / 1000);
        } else {
            b.append(" reason=- replica=- matched=- key_len=- ratio=- decision_us=-");
        }
        b.append(" status=");
        if (status == 0) {
            b.append('-');
        } else {
            b.append(status);
        }
        b.append(" prompt_tokens=");
        orDash(b, promptTokens);
        b.append(" cached=");
        orDash(b, cachedTokens);
        b.append(" upstream_ms=");
        orDash(b, upstreamNanos < 0 ? -1 : (end - upstreamNanos) / 1_000_000);
        b.append(" retries=")
                .append(retries)
                .append(" result=")
                .append(result)
                .append(" total_ms=")
                .append((end - startNanos) / 1_000_000);
        estimates(b);
        b.append(" queued_ms=");
        orDash(b, queuedNanos < 0 ? -1 : queuedNanos / 1_000_000);
        b.append(" band=");
        orDash(b, band);
        b.append(" tenant=").append(safe(tenant, 64));
        if (preciseKeys) {
            b.append(" mode=").append(mode).append(" confirmed_tokens=");
            orDash(b, confirmedTokens);
            b.append(" held_tokens=");
            orDash(b, heldTokens);
            b.append(" tokenize_ms=");
            orDash(b, tokenizeNanos < 0 ? -1 : tokenizeNanos / 1_000_000);
            b.append(" precise=").append(precise).append(" precise_reason=").append(preciseReason);
        }
        String line = b.toString();
        if (b.capacity() > 4 * LINE_CAPACITY) {
            BUILDER.remove(); // a line made long (a long runner-up id) does not keep its size on the thread
        }
        return line;
    }

    /**
     * {@code predicted_ttft}'s estimates for the last attempt: the winner's predicted TTFT and the
     * runner-up's (its replica and prediction), {@code -} for another policy or without a runner-up.
     */
    private void estimates(StringBuilder b) {
        PredictedTtftPolicy.Estimate e =
                decision != null && decision.detail() instanceof PredictedTtftPolicy.Estimate x ? x : null;
        PredictedTtftPolicy.ReplicaEstimate second = e == null ? null : e.runnerUp();
        b.append(" predicted_ms=")
                .append(e == null ? "-" : millis(e.chosen().predictedMillis()))
                .append(" runner_up=")
                .append(second == null ? "-" : safe(second.replica(), 200))
                .append(" runner_up_ms=")
                .append(second == null ? "-" : millis(second.predictedMillis()));
    }

    /** {@code v}, or {@code -} when negative (not reported). */
    private static void orDash(StringBuilder b, long v) {
        if (v < 0) {
            b.append('-');
        } else {
            b.append(v);
        }
    }

    /** {@code r} with three decimals, as {@code %.3f} writes it (without a Formatter: one line per request). */
    static String ratio(double r) {
        StringBuilder b = new StringBuilder(8);
        ratio(b, r);
        return b.toString();
    }

    /** Appends {@link #ratio(double)} to {@code b}. */
    private static void ratio(StringBuilder b, double r) {
        double scaled = r * 1000;
        if (!(r >= 0 && r < 1e9) || Math.abs(scaled - Math.floor(scaled) - 0.5) < 1e-6) {
            b.append(String.format(Locale.ROOT, "%.3f", r)); // a tie (or not a ratio) is rounded as Formatter does
            return;
        }
        long m = Math.round(scaled);
        long frac = m % 1000;
        b.append(m / 1000).append(frac < 10 ? ".00" : frac < 100 ? ".0" : ".").append(frac);
    }

    private static String millis(double ms) {
        return Double.isFinite(ms) ? String.format(Locale.ROOT, "%.1f", ms) : "-";
    }

    /**
     * Hands the line alone (no metric events) to the process's writer (when the line is on), which formats and
     * logs it on its own thread; never blocks (a full queue drops the line and counts it). Called once, when the
     * request is over, in place of {@link ProxyMetrics#finished}.
     */
    public void emit() {
        if (lineOn) {
            end();
        }
    }

    /** The request is over: the line's end time is taken and the record handed to the writer. */
    void end() {
        if (lineOn) {
            endNanos = System.nanoTime();
            ended = true;
        }
        Shared.WRITER.submit(this);
    }

    @Override
    boolean hasLine() {
        return lineOn;
    }

    /**
     * Waits until the lines emitted so far are logged, at most {@code timeout}: the proxy calls it when it closes,
     * before the logger is stopped.
     *
     * @return false when the timeout passed first (or the thread was interrupted)
     */
    public static boolean flush(java.time.Duration timeout) {
        return Shared.WRITER.flush(timeout);
    }

    /** The process's writer thread: {@link ProxyMetrics} defers its request-path events to it. */
    static DecisionWriter writer() {
        return Shared.WRITER;
    }

    /** Decision lines dropped because the writer's queue was full, since the process started. */
    static long droppedLines() {
        return Shared.WRITER.dropped();
    }

    /**
     * Keeps a value to letters, digits and {@code ._:/-+@%}, at most {@code max} characters: the value itself
     * when it already is (no copy: endpoint, method and model are, on nearly every request).
     */
    public static String safe(String s, int max) {
        if (s == null || s.isEmpty()) {
            return "-";
        }
        int n = Math.min(s.length(), max);
        int i = 0;
        while (i < n && safe(s.charAt(i))) {
            i++;
        }
        if (i == s.length()) {
            return s;
        }
        StringBuilder b = new StringBuilder(n).append(s, 0, i);
        for (; i < n; i++) {
            char c = s.charAt(i);
            b.append(safe(c) ? c : '?');
        }
        return b.toString();
    }

    private static boolean safe(char c) {
        return (c >= 'a' && c <= 'z')
                || (c >= 'A' && c <= 'Z')
                || (c >= '0' && c <= '9')
                || c == '.'
                || c == '_'
                || c == ':'
                || c == '/'
                || c == '-'
                || c == '+'
                || c == '@'
                || c == '%';
    }
}
