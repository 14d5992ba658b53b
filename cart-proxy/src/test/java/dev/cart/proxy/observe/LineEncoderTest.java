package dev.cart.proxy.observe;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.encoder.PatternLayoutEncoder;
import ch.qos.logback.classic.spi.LoggingEvent;
import ch.qos.logback.classic.util.LogbackMDCAdapter;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.TimeZone;
import org.junit.jupiter.api.Test;

/** The decision lines' encoder writes, byte for byte, what a pattern encoder of the same pattern writes. */
class LineEncoderTest {

    private static final List<Long> TIMES = List.of(
            0L,
            999L,
            1_000L,
            1_764_689_999_999L, // the last millisecond of a second, then the first of the next
            1_764_690_000_000L,
            1_764_690_000_007L,
            1_764_690_000_070L,
            -1L, // before the epoch
            253_402_300_799_999L, // 9999-12-31T23:59:59.999Z
            1_711_846_799_500L, // around a summer-time change in Europe
            1_711_846_800_500L);

    private static final List<String> MESSAGES = List.of(
            "decision endpoint=/v1/chat/completions method=POST model=llama-3 stream=true reason=cache_hit",
            "",
            "prompt caf\u00e9 \u6f22\u5b57 \ud83d\ude00 end",
            "x".repeat(2000));

    private static final List<String> LOGGERS =
            List.of("cart.decision", "cart.replicas", "dev.cart.proxy.SomeRatherLongClassNameForTheLogger", "a");

    private static LoggerContext context() {
        LoggerContext context = new LoggerContext();
        context.setMDCAdapter(new LogbackMDCAdapter());
        return context;
    }

    private static void compare(Charset charset) {
        LoggerContext context = context();
        PatternLayoutEncoder pattern = new PatternLayoutEncoder();
        pattern.setContext(context);
        pattern.setPattern(LineEncoder.PATTERN);
        pattern.setCharset(charset);
        pattern.start();
        LineEncoder fast = new LineEncoder();
        fast.setContext(context);
        fast.setCharset(charset);
        fast.start();
        int compared = 0;
        int into = 0;
        for (String name : LOGGERS) {
            Logger logger = context.getLogger(name);
            for (Level level : List.of(Level.INFO, Level.WARN, Level.ERROR, Level.DEBUG, Level.TRACE)) {
                for (String message : MESSAGES) {
                    for (long t : TIMES) {
                        LoggingEvent e = new LoggingEvent("fqcn", logger, level, message, null, null);
                        e.setTimeStamp(t);
                        String expected = new String(pattern.encode(e), charset);
                        String got = new String(fast.encode(e), charset);
                        assertEquals(expected, got, name + " " + level + " at " + t);
                        byte[] buf = new byte[1024];
                        int n = fast.encodeInto(e, buf);
                        if (n >= 0) {
                            assertEquals(expected, new String(buf, 0, n, charset), "into: " + name + " " + level);
                            into++;
                        }
                        compared++;
                    }
                }
            }
        }
        LoggingEvent withThrowable = new LoggingEvent(
                "fqcn", context.getLogger("cart.decision"), Level.WARN, "failed", new IllegalStateException("x"), null);
        withThrowable.setTimeStamp(1_764_690_000_007L);
        String expected = new String(pattern.encode(withThrowable), charset);
        assertTrue(expected.contains("IllegalStateException"), expected);
        assertEquals(expected, new String(fast.encode(withThrowable), charset));
        assertEquals(LOGGERS.size() * 5 * MESSAGES.size() * TIMES.size(), compared);
        assertEquals(-1, fast.encodeInto(withThrowable, new byte[1024]));
        if (charset != StandardCharsets.UTF_16) {
            // the messages short enough (each logger's name is known by then: encode ran first)
            assertEquals(LOGGERS.size() * 5 * 3 * TIMES.size(), into);
        }
    }

    @Test
    void writesWhatThePatternWrites() {
        compare(StandardCharsets.UTF_8);
        compare(StandardCharsets.ISO_8859_1);
        compare(StandardCharsets.UTF_16); // no ASCII prefix: through the pattern layout itself
    }

    /** Through the batching appender (which lets the encoder write into an array of its own): the same bytes. */
    @Test
    void theAppenderWritesWhatThePatternWrites() {
        LoggerContext context = context();
        PatternLayoutEncoder pattern = new PatternLayoutEncoder();
        pattern.setContext(context);
        pattern.setPattern(LineEncoder.PATTERN);
        pattern.start();
        LineEncoder fast = new LineEncoder();
        fast.setContext(context);
        fast.start();
        BatchedConsoleAppender<ch.qos.logback.classic.spi.ILoggingEvent> appender = new BatchedConsoleAppender<>();
        java.io.ByteArrayOutputStream console = new java.io.ByteArrayOutputStream();
        appender.setTarget(console);
        appender.setContext(context);
        appender.setEncoder(fast);
        appender.start();
        java.io.ByteArrayOutputStream expected = new java.io.ByteArrayOutputStream();
        Logger logger = context.getLogger("cart.decision");
        for (String message : List.of("first", "decision a=1 b=2", "caf\u00e9", "y".repeat(5000), "last")) {
            for (long t : TIMES) {
                LoggingEvent e = new LoggingEvent("fqcn", logger, Level.INFO, message, null, null);
                e.setTimeStamp(t);
                expected.writeBytes(pattern.encode(e));
                appender.doAppend(e);
            }
        }
        appender.stop();
        assertEquals(expected.toString(StandardCharsets.UTF_8), console.toString(StandardCharsets.UTF_8));
    }

    @Test
    void writesWhatThePatternWritesInAnotherZone() {
        TimeZone before = TimeZone.getDefault();
        try {
            for (String zone : List.of("UTC", "Europe/Paris", "America/St_Johns", "Asia/Kolkata")) {
                TimeZone.setDefault(TimeZone.getTimeZone(zone));
                compare(StandardCharsets.UTF_8);
            }
        } finally {
            TimeZone.setDefault(before);
        }
    }
}
