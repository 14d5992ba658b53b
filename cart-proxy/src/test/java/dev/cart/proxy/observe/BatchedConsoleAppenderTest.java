package dev.cart.proxy.observe;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.encoder.PatternLayoutEncoder;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.util.LogbackMDCAdapter;
import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The decision lines' appender: lines reach the console in batches, on time, and all of them on stop. */
class BatchedConsoleAppenderTest {

    /** The console, as the appender sees it: what reached it, and how many writes it took. */
    private static final class Console extends OutputStream {
        final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        final AtomicInteger writes = new AtomicInteger();
        final String awaited;
        final CountDownLatch seen = new CountDownLatch(1);

        Console(String awaited) {
            this.awaited = awaited;
        }

        @Override
        public synchronized void write(int b) {
            writes.incrementAndGet();
            bytes.write(b);
            check();
        }

        @Override
        public synchronized void write(byte[] b, int off, int len) {
            writes.incrementAndGet();
            bytes.write(b, off, len);
            check();
        }

        private void check() {
            if (awaited != null && text().contains(awaited)) {
                seen.countDown();
            }
        }

        synchronized String text() {
            return bytes.toString(StandardCharsets.UTF_8);
        }
    }

    private static Logger logger(
            LoggerContext context, BatchedConsoleAppender<ILoggingEvent> appender, long flushMillis) {
        context.setMDCAdapter(
                new LogbackMDCAdapter()); // a context of the test's own, as logback's configurator makes one
        PatternLayoutEncoder encoder = new PatternLayoutEncoder();
        encoder.setContext(context);
        encoder.setPattern("%msg%n");
        encoder.start();
        appender.setContext(context);
        appender.setName("DECISIONS");
        appender.setEncoder(encoder);
        appender.setFlushMillis(flushMillis);
        appender.start();
        assertTrue(appender.isStarted());
        Logger log = context.getLogger("cart.decision");
        log.setAdditive(false);
        log.setLevel(Level.INFO);
        log.addAppender(appender);
        return log;
    }

    /** A line logged once, with nothing logged after it, still reaches the console (by the flusher, in time). */
    @Test
    void aLoneLineReachesTheConsole() throws Exception {
        LoggerContext context = new LoggerContext();
        Console console = new Console("decision id=1 replica=r0");
        BatchedConsoleAppender<ILoggingEvent> appender = new BatchedConsoleAppender<>();
        appender.setTarget(console);
        Logger log = logger(context, appender, 20);
        try {
            log.info("decision id=1 replica=r0");
            assertTrue(console.seen.await(60, TimeUnit.SECONDS), "the line never reached the console");
        } finally {
            context.stop();
        }
    }

    /**
     * Lines are not written one by one: 500 lines logged while no flush is due reach the console in a few writes
     * when the appender stops (as the proxy's shutdown stops it), every line whole and in order.
     */
    @Test
    void linesAreWrittenInBatchesAndStopWritesTheRest() {
        LoggerContext context = new LoggerContext();
        Console console = new Console(null);
        BatchedConsoleAppender<ILoggingEvent> appender = new BatchedConsoleAppender<>();
        appender.setTarget(console);
        appender.setBufferBytes(64 * 1024);
        Logger log = logger(context, appender, TimeUnit.HOURS.toMillis(1)); // no flush is due during the test
        StringBuilder expected = new StringBuilder();
        for (int i = 0; i < 500; i++) {
            String line = "decision id=" + i + " endpoint=/v1/chat/completions result=ok";
            log.info(line);
            expected.append(line).append('\n');
        }
        int beforeStop = console.writes.get();
        // 500 lines of about 55 bytes are 27 KB: within one buffer, so nothing is written before the stop
        assertEquals(0, beforeStop, "lines were written before a flush was due");
        context.stop();
        assertEquals(expected.toString(), console.text());
        assertTrue(console.writes.get() <= 2, "writes: " + console.writes.get());
    }

    /** A full buffer is written at once, without waiting for the flusher; nothing is lost or cut. */
    @Test
    void aFullBufferIsWrittenAtOnce() {
        LoggerContext context = new LoggerContext();
        Console console = new Console(null);
        BatchedConsoleAppender<ILoggingEvent> appender = new BatchedConsoleAppender<>();
        appender.setTarget(console);
        appender.setBufferBytes(1024);
        Logger log = logger(context, appender, TimeUnit.HOURS.toMillis(1));
        StringBuilder expected = new StringBuilder();
        for (int i = 0; i < 200; i++) {
            String line = "decision id=" + i + " result=ok";
            log.info(line);
            expected.append(line).append('\n');
        }
        assertTrue(console.writes.get() > 0, "a full buffer waited for a flush");
        assertTrue(console.writes.get() < 200 / 4, "writes: " + console.writes.get());
        context.stop();
        assertEquals(expected.toString(), console.text());
    }
}
