package dev.cart.redis;

import dev.cart.core.sync.RouteEvent;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * What a {@link RedisRouteSync} would write to Redis for one instance's route events, counted without
 * Redis: the events are batched as its publisher batches them (the first event, then those published
 * within the batch delay after it, up to the batch size), repeats within the repeat interval are left
 * out, and each batch is encoded as the stream entry it would be and counted with the {@code XADD}
 * command around it (RESP framing, stream name and {@code MAXLEN ~} included). For sizing a deployment's
 * Redis traffic from a recorded or simulated event stream ({@code docs/scale-out.md} reports it for the
 * simulator's workloads). The publisher may gather more events while an {@code XADD} is on its way, so
 * real batches are at least as large and the count errs high. Not thread-safe.
 */
public final class RouteStreamMeter {

    private final String stream;
    private final long maxLen;
    private final int batchEvents;
    private final long batchDelayNanos;
    private final RouteEventCodec.Encoder encoder;
    private final RepeatFilter repeats;
    private final List<RouteEvent> batch = new ArrayList<>();
    private long batchStart;
    private long bytes;
    private long entries;
    private long events;

    /**
     * A meter with {@link RedisRouteSync.Builder}'s defaults: stream {@code cart:routes}, cap 100,000
     * entries, 256 events per entry, 5 ms batch delay, 1 s repeat interval.
     *
     * @param originId the publishing instance's origin id, written in every entry
     */
    public RouteStreamMeter(String originId) {
        this(originId, "cart:routes", 100_000, 256, Duration.ofMillis(5), Duration.ofSeconds(1));
    }

    /**
     * A meter with a sync's settings, as {@link RedisRouteSync.Builder} takes them.
     *
     * @param originId the publishing instance's origin id, written in every entry
     * @param stream the stream's key (its length counts in every {@code XADD})
     * @param maxLen the stream's approximate cap ({@link RedisRouteSync.Builder#maxLen}), written in every
     *     {@code XADD}
     * @param batchEvents most events per entry (1 to 256)
     * @param batchDelay how long a batch waits for more events after its first
     * @param repeatInterval how long before a learned route is written again (zero: every time)
     */
    public RouteStreamMeter(
            String originId,
            String stream,
            long maxLen,
            int batchEvents,
            Duration batchDelay,
            Duration repeatInterval) {
        this.stream = Objects.requireNonNull(stream, "stream");
        this.maxLen = maxLen;
        this.batchEvents = batchEvents;
        this.batchDelayNanos = batchDelay.toNanos();
        this.encoder = new RouteEventCodec.Encoder(Objects.requireNonNull(originId, "originId"));
        this.repeats = new RepeatFilter(repeatInterval.toMillis());
    }

    /**
     * Counts one event as the instance would publish it: batched with those before it, or left out as a
     * repeat.
     *
     * @param event the route event
     * @param nanos when it was published, on any monotonic clock; never less than the previous call's
     */
    public void publish(RouteEvent event, long nanos) {
        if (!batch.isEmpty() && (nanos - batchStart > batchDelayNanos || batch.size() >= batchEvents)) {
            flush();
        }
        if (batch.isEmpty()) {
            batchStart = nanos;
        }
        batch.add(event);
    }

    /** Writes the batch being gathered, if any (the end of the run). */
    public void flush() {
        repeats.keepNew(batch);
        if (!batch.isEmpty()) {
            bytes += xaddBytes(stream, maxLen, encoder.encode(batch).length);
            entries++;
            events += batch.size();
        }
        batch.clear();
    }

    /**
     * The bytes written so far.
     *
     * @return the bytes of the {@code XADD} commands of the entries flushed so far
     */
    public long bytes() {
        return bytes;
    }

    /**
     * The stream entries written so far.
     *
     * @return the entries flushed so far (one {@code XADD} each)
     */
    public long entries() {
        return entries;
    }

    /**
     * The events in those entries.
     *
     * @return the events of the entries flushed so far, repeats left out
     */
    public long events() {
        return events;
    }

    /** The bytes of {@code XADD <stream> MAXLEN ~ <maxLen> * b <payload>} in RESP, as the publisher sends it. */
    static long xaddBytes(String stream, long maxLen, int payload) {
        String[] args = {"XADD", stream, "MAXLEN", "~", Long.toString(maxLen), "*", RedisRouteSync.FIELD};
        long n = ("*" + (args.length + 1) + "\r\n").length();
        for (String a : args) {
            int len = a.getBytes(StandardCharsets.UTF_8).length;
            n += ("$" + len + "\r\n").length() + len + 2;
        }
        return n + ("$" + payload + "\r\n").length() + payload + 2;
    }
}
