package dev.cart.redis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.lettuce.core.resource.Delay;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/** One log line per outage and one per recovery, and a reconnect delay that never exceeds 2 s. */
class OutageTest {

    private final Logger log = (Logger) LoggerFactory.getLogger("outage-test");
    private final ListAppender<ILoggingEvent> lines = new ListAppender<>();
    private final AtomicLong now = new AtomicLong(1_000_000_000L);

    OutageTest() {
        lines.start();
        log.addAppender(lines);
        log.setAdditive(false);
    }

    private List<String> messages() {
        return lines.list.stream()
                .map(e -> e.getLevel() + " " + e.getFormattedMessage())
                .toList();
    }

    @Test
    void anOutageSeenByEveryPartAndEveryRetryIsOneLineEachWay() {
        Outage o = new Outage(log, "route sync", "127.0.0.1:6379", 2, now::get);
        o.up(0);
        o.up(1);
        assertEquals(List.of("INFO route sync connected to Redis at 127.0.0.1:6379"), messages());
        lines.list.clear();
        for (int retry = 0; retry < 28; retry++) { // both threads fail again and again while Redis is away
            o.down(0, "publisher: RedisConnectionException");
            o.down(1, "tailer: RedisConnectionException");
            now.addAndGet(1_600_000_000L);
        }
        assertTrue(o.isDown());
        o.up(0);
        assertTrue(o.isDown(), "the tailer is still without Redis");
        o.up(1);
        assertFalse(o.isDown());
        assertEquals(
                List.of(
                        "WARN route sync lost Redis at 127.0.0.1:6379 (publisher: RedisConnectionException);"
                                + " routing goes on locally, reconnecting every 2 s at most",
                        "INFO route sync reached Redis at 127.0.0.1:6379 again after 44.8 s without it"),
                messages());
        assertEquals(1, o.outages());
    }

    @Test
    void aStartWithoutRedisIsAnOutageToo() {
        Outage o = new Outage(log, "load view", "redis:6379", 1, now::get);
        o.down(0, "RedisConnectionException");
        now.addAndGet(2_500_000_000L);
        o.down(0, "RedisConnectionException");
        o.up(0);
        o.up(0);
        assertEquals(
                List.of(
                        "WARN load view cannot reach Redis at redis:6379 (RedisConnectionException);"
                                + " routing goes on locally, reconnecting every 2 s at most",
                        "INFO load view reached Redis at redis:6379 again after 2.5 s without it"),
                messages());
    }

    @Test
    void reconnectAttemptsWaitFrom50MillisecondsUpTo2SecondsWhateverTheOutageLength() {
        Delay delay = RedisEndpoint.reconnectDelay();
        Duration longest = Duration.ZERO;
        for (long attempt = 1; attempt <= 64; attempt++) {
            Duration d = delay.createDelay(attempt);
            assertTrue(d.compareTo(Duration.ofMillis(50)) >= 0, "attempt " + attempt + " waits " + d);
            assertTrue(d.compareTo(Duration.ofSeconds(2)) <= 0, "attempt " + attempt + " waits " + d);
            longest = d.compareTo(longest) > 0 ? d : longest;
        }
        assertEquals(Duration.ofSeconds(2), longest, "long outages retry every 2 s");
    }
}
