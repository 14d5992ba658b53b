package dev.cart.proxy.observe;

import ch.qos.logback.classic.PatternLayout;
import ch.qos.logback.classic.pattern.TargetLengthBasedClassNameAbbreviator;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.CoreConstants;
import ch.qos.logback.core.encoder.EncoderBase;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.ZoneId;
import java.time.format.DateTimeFormatter;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A logback encoder that writes each event as the pattern {@value #PATTERN} does (the proxy's console format),
 * byte for byte, without a pattern layout: the proxy's decision lines (one per request) go through it.
 *
 * <p>How: the layout builds each line in a {@code StringBuilder} of its own (grown past its default size by a
 * decision line), formats the date through a cache of the last millisecond, pads the level and abbreviates the
 * logger through converters, then the encoder turns the whole line into bytes. Here the date's part down to the
 * second and its offset are formatted once a second and kept as bytes, the logger's abbreviated name once per
 * logger, and a line is one array: that prefix, the three digits of the milliseconds, the level, the name,
 * the message's bytes and the line separator. An event with a throwable (the layout appends its stack trace)
 * and a charset that does not write the prefix's ASCII as ASCII go through the pattern layout itself.
 *
 * <p>Concurrency: {@link #encode} is called by any logging thread at once, outside the appender's lock. The
 * second's cache is one immutable object behind a volatile field (a thread that finds another second formats
 * it and publishes it; a race formats it twice); the names' cache is a concurrent map.
 */
public final class LineEncoder extends EncoderBase<ILoggingEvent> {

    /** The pattern this encoder writes as. */
    static final String PATTERN = "%d{yyyy-MM-dd'T'HH:mm:ss.SSSXXX} %-5level %logger{24} - %msg%n";

    private static final int LOGGER_LENGTH = 24;
    private static final byte[] DASH = " - ".getBytes(StandardCharsets.US_ASCII);
    private static final String ASCII_PROBE = "0123456789-:.+TZ INFOWARNERRORDEBUGTRACE";

    private Charset charset;
    private Charset encoding;
    private boolean fast;
    private ZoneId zone;
    private DateTimeFormatter toSecond;
    private DateTimeFormatter offset;
    private PatternLayout layout;
    private byte[] separator;
    private final TargetLengthBasedClassNameAbbreviator abbreviator =
            new TargetLengthBasedClassNameAbbreviator(LOGGER_LENGTH);
    private final Map<String, byte[]> names = new ConcurrentHashMap<>();
    private volatile Second second = new Second(Long.MIN_VALUE, new byte[0], new byte[0]);

    /** The date down to the second ({@code yyyy-MM-dd'T'HH:mm:ss.}) and the offset of one epoch second. */
    private record Second(long epochSecond, byte[] head, byte[] offset) {}

    /** The charset lines are written in; the platform's default when not set (as a pattern's encoder). */
    public void setCharset(Charset charset) {
        this.charset = charset;
    }

    @Override
    public void start() {
        encoding = charset != null ? charset : Charset.defaultCharset();
        fast = Arrays.equals(ASCII_PROBE.getBytes(encoding), ASCII_PROBE.getBytes(StandardCharsets.US_ASCII));
        zone = ZoneId.systemDefault();
        toSecond = DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.").withZone(zone);
        offset = DateTimeFormatter.ofPattern("XXX").withZone(zone);
        separator = CoreConstants.LINE_SEPARATOR.getBytes(encoding);
        layout = new PatternLayout();
        layout.setContext(getContext());
        layout.setPattern(PATTERN);
        layout.start();
        super.start();
    }

    @Override
    public void stop() {
        if (layout != null) {
            layout.stop();
        }
        super.stop();
    }

    @Override
    public byte[] headerBytes() {
        return null;
    }

    @Override
    public byte[] footerBytes() {
        return null;
    }

    @Override
    public byte[] encode(ILoggingEvent event) {
        if (!fast || event.getThrowableProxy() != null) {
            return layout.doLayout(event).getBytes(encoding);
        }
        long millis = event.getTimeStamp();
        Second s = secondOf(millis);
        String levelName = event.getLevel().toString();
        byte[] name = names.get(event.getLoggerName());
        if (name == null) {
            name = names.computeIfAbsent(
                    event.getLoggerName(), n -> abbreviator.abbreviate(n).getBytes(encoding));
        }
        String message = event.getFormattedMessage();
        byte[] text = message == null ? "null".getBytes(encoding) : message.getBytes(encoding);
        byte[] out = new byte[length(s, levelName, name, text)];
        writeLine(out, s, millis, levelName, name, text);
        return out;
    }

    /**
     * Writes {@code event}'s line into {@code buf} from its start, as {@link #encode} would, without an array of
     * the line's own: the length written, or -1 when the line does not fit or needs {@link #encode} (a throwable,
     * a charset that does not write ASCII as ASCII, a logger not seen before).
     */
    int encodeInto(ILoggingEvent event, byte[] buf) {
        if (!fast || event.getThrowableProxy() != null) {
            return -1;
        }
        String message = event.getFormattedMessage();
        String levelName = event.getLevel().toString();
        byte[] name = names.get(event.getLoggerName());
        if (message == null || name == null) {
            return -1; // the long way, once per logger name
        }
        long millis = event.getTimeStamp();
        Second s = secondOf(millis);
        byte[] text = message.getBytes(encoding); // (an intrinsic copy: faster than a loop over the characters)
        int total = length(s, levelName, name, text);
        if (total > buf.length) {
            return -1;
        }
        writeLine(buf, s, millis, levelName, name, text);
        return total;
    }

    /** The length of a line of these parts; the level is padded to five characters. */
    private int length(Second s, String levelName, byte[] name, byte[] text) {
        return s.head.length
                + 3
                + s.offset.length
                + 1
                + Math.max(5, levelName.length())
                + 1
                + name.length
                + DASH.length
                + text.length
                + separator.length;
    }

    /** Writes a line of these parts into {@code out} from its start ({@link #length} bytes). */
    private void writeLine(byte[] out, Second s, long millis, String levelName, byte[] name, byte[] text) {
        int i = put(out, 0, s.head);
        int ms = (int) Math.floorMod(millis, 1000L);
        out[i++] = (byte) ('0' + ms / 100);
        out[i++] = (byte) ('0' + ms / 10 % 10);
        out[i++] = (byte) ('0' + ms % 10);
        i = put(out, i, s.offset);
        out[i++] = ' ';
        int level = Math.max(5, levelName.length());
        for (int k = 0; k < level; k++) {
            out[i++] = k < levelName.length() ? (byte) levelName.charAt(k) : (byte) ' ';
        }
        out[i++] = ' ';
        i = put(out, i, name);
        i = put(out, i, DASH);
        i = put(out, i, text);
        put(out, i, separator);
    }

    /** The cached date parts of the second {@code millis} falls in. */
    private Second secondOf(long millis) {
        long epochSecond = Math.floorDiv(millis, 1000L);
        Second s = second;
        return s.epochSecond == epochSecond ? s : second(epochSecond);
    }

    private Second second(long epochSecond) {
        Instant at = Instant.ofEpochSecond(epochSecond);
        Second s = new Second(
                epochSecond,
                toSecond.format(at).getBytes(StandardCharsets.US_ASCII),
                offset.format(at).getBytes(StandardCharsets.US_ASCII));
        second = s;
        return s;
    }

    private static int put(byte[] out, int at, byte[] part) {
        System.arraycopy(part, 0, out, at, part.length);
        return at + part.length;
    }
}
