package dev.cart.flow;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Locale;
import java.util.Objects;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * Reads a request's flow-control inputs from its headers, the same way for every host (the proxy's fronts,
 * the gateway): its priority band, its tenant, its deadline and its cost.
 *
 * <ul>
 *   <li><b>Band</b> from the priority header ({@code x-cart-priority} by default): a whole number from 0
 *       (first) to {@code bands - 1}. Absent, empty, not a number or out of range: the default band (a
 *       client cannot fail a request by its priority, nor jump the line with {@code -1}).</li>
 *   <li><b>Tenant</b> from the tenant header ({@code x-cart-tenant}) if present, else from the API key
 *       ({@code Authorization: Bearer ...}, else {@code x-api-key}), else {@link FlowRequest#ANONYMOUS}.
 *       Always a digest, {@code t-} and 16 hex digits of SHA-256 over a kind prefix and the value: the key
 *       itself is never kept, logged or put in a label. A tenant header longer than 256 characters is
 *       unusable: 400.</li>
 *   <li><b>Deadline</b> from the deadline header ({@code x-cart-deadline-ms}): a whole number of
 *       milliseconds from 1 to 600,000 the client is willing to wait. Anything else (a fraction, a unit,
 *       0, negative, too large) is unusable: 400, since silently ignoring a deadline the client relies on
 *       would make it wait longer than it asked.</li>
 *   <li><b>Cost</b>: the prompt's size plus the output asked for ({@code max_tokens}, or
 *       {@code default_output_tokens} when the request gives none), at least 1.</li>
 * </ul>
 *
 * <p>Immutable and thread-safe. Header names are matched as the host's lookup matches them (HTTP header
 * names are case-insensitive; give a lookup that is).
 */
public final class FlowHeaders {

    /** The longest tenant header value accepted. */
    public static final int MAX_TENANT_CHARS = 256;

    /** The longest deadline accepted, in milliseconds. */
    public static final long MAX_DEADLINE_MILLIS = 600_000;

    private final String priorityHeader;
    private final String tenantHeader;
    private final String deadlineHeader;
    private final int bands;
    private final int defaultBand;
    private final int defaultOutputTokens;

    private FlowHeaders(Builder b) {
        this.priorityHeader = b.priorityHeader;
        this.tenantHeader = b.tenantHeader;
        this.deadlineHeader = b.deadlineHeader;
        this.bands = b.bands;
        this.defaultBand = b.defaultBand;
        this.defaultOutputTokens = b.defaultOutputTokens;
    }

    /**
     * A builder whose bands are {@code config}'s.
     *
     * @param config the flow control's settings
     * @return a builder with the default header names
     */
    public static Builder builder(FlowConfig config) {
        return new Builder(config);
    }

    /**
     * What {@link #parse} made of a request: its {@link FlowRequest}, or why it is unusable.
     *
     * @param request the inputs, null when unusable
     * @param status  0 when usable, else the HTTP status to answer with (400)
     * @param error   null when usable, else a message for the error body naming the header and the
     *                accepted range (it never repeats the value)
     */
    public record Parsed(
            @Nullable FlowRequest request,
            int status,
            @Nullable String error) {

        /** {@return true when {@link #request()} is usable} */
        public boolean ok() {
            return request != null;
        }
    }

    /**
     * Reads a request's inputs.
     *
     * @param headers     the request's header lookup: a name to its (first) value, or null when absent
     * @param promptUnits the prompt's size (tokens, or characters as a key counts them), at least 0
     * @param maxTokens   the output asked for ({@code max_tokens}), or 0 or less when the request gives none
     * @return the inputs, or the 400 that answers an unusable header
     */
    public Parsed parse(Function<String, @Nullable String> headers, long promptUnits, long maxTokens) {
        Objects.requireNonNull(headers, "headers");
        long deadline = 0;
        String d = headers.apply(deadlineHeader);
        if (d != null) {
            deadline = deadlineMillis(d.trim());
            if (deadline <= 0) {
                return new Parsed(
                        null,
                        400,
                        "header " + deadlineHeader + " must be a whole number of milliseconds from 1 to "
                                + MAX_DEADLINE_MILLIS);
            }
        }
        String tenant;
        String named = headers.apply(tenantHeader);
        if (named != null && !named.isBlank()) {
            if (named.length() > MAX_TENANT_CHARS) {
                return new Parsed(
                        null, 400, "header " + tenantHeader + " must be at most " + MAX_TENANT_CHARS + " characters");
            }
            tenant = digest("tenant:", named.trim());
        } else {
            String key = apiKey(headers);
            tenant = key == null ? FlowRequest.ANONYMOUS : digest("key:", key);
        }
        long output = maxTokens > 0 ? maxTokens : defaultOutputTokens;
        long cost = Math.max(1, Math.max(0, promptUnits) + output);
        return new Parsed(new FlowRequest(band(headers.apply(priorityHeader)), tenant, deadline, cost), 0, null);
    }

    private int band(@Nullable String value) {
        if (value == null) {
            return defaultBand;
        }
        String v = value.trim();
        if (v.isEmpty() || v.length() > 2) {
            return defaultBand;
        }
        int b = 0;
        for (int i = 0; i < v.length(); i++) {
            char c = v.charAt(i);
            if (c < '0' || c > '9') {
                return defaultBand;
            }
            b = b * 10 + (c - '0');
        }
        return b < bands ? b : defaultBand;
    }

    /** The deadline in milliseconds, or -1 when the value is not a whole number in range. */
    private static long deadlineMillis(String v) {
        if (v.isEmpty() || v.length() > 7) {
            return -1;
        }
        long ms = 0;
        for (int i = 0; i < v.length(); i++) {
            char c = v.charAt(i);
            if (c < '0' || c > '9') {
                return -1;
            }
            ms = ms * 10 + (c - '0');
        }
        return ms >= 1 && ms <= MAX_DEADLINE_MILLIS ? ms : -1;
    }

    private static @Nullable String apiKey(Function<String, @Nullable String> headers) {
        String auth = headers.apply("authorization");
        if (auth != null) {
            String a = auth.trim();
            if (a.length() > 7 && a.regionMatches(true, 0, "bearer ", 0, 7)) {
                String key = a.substring(7).trim();
                if (!key.isEmpty()) {
                    return key;
                }
            }
        }
        String key = headers.apply("x-api-key");
        return key == null || key.isBlank() ? null : key.trim();
    }

    /** {@code t-} and the first 16 hex digits of SHA-256 over {@code kind} and {@code value}. */
    static String digest(String kind, String value) {
        try {
            MessageDigest sha = MessageDigest.getInstance("SHA-256");
            sha.update(kind.getBytes(StandardCharsets.UTF_8));
            byte[] h = sha.digest(value.getBytes(StandardCharsets.UTF_8));
            return "t-" + HexFormat.of().formatHex(h, 0, 8);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is part of every Java platform", e);
        }
    }

    /** Builds {@link FlowHeaders}. */
    public static final class Builder {
        private final int bands;
        private final int defaultBand;
        private String priorityHeader = "x-cart-priority";
        private String tenantHeader = "x-cart-tenant";
        private String deadlineHeader = "x-cart-deadline-ms";
        private int defaultOutputTokens = 256;

        private Builder(FlowConfig config) {
            this.bands = config.bands();
            this.defaultBand = config.defaultBand();
        }

        /**
         * The priority header's name ({@code flow.priority_header}, default {@code x-cart-priority}).
         *
         * @param name the header name (matched ignoring case)
         * @return this builder
         */
        public Builder priorityHeader(String name) {
            this.priorityHeader = headerName("flow.priority_header", name);
            return this;
        }

        /**
         * The tenant header's name ({@code flow.tenant_header}, default {@code x-cart-tenant}).
         *
         * @param name the header name (matched ignoring case)
         * @return this builder
         */
        public Builder tenantHeader(String name) {
            this.tenantHeader = headerName("flow.tenant_header", name);
            return this;
        }

        /**
         * The deadline header's name ({@code flow.deadline_header}, default {@code x-cart-deadline-ms}).
         *
         * @param name the header name (matched ignoring case)
         * @return this builder
         */
        public Builder deadlineHeader(String name) {
            this.deadlineHeader = headerName("flow.deadline_header", name);
            return this;
        }

        /**
         * The output counted for a request that gives no {@code max_tokens} ({@code flow.default_output_tokens},
         * 1 to 1,000,000, default 256).
         *
         * @param tokens output tokens, 1 to 1,000,000
         * @return this builder
         */
        public Builder defaultOutputTokens(int tokens) {
            if (tokens < 1 || tokens > 1_000_000) {
                throw new IllegalArgumentException("flow.default_output_tokens must be in [1, 1000000], was " + tokens);
            }
            this.defaultOutputTokens = tokens;
            return this;
        }

        private static String headerName(String setting, String name) {
            Objects.requireNonNull(name, setting);
            String n = name.trim().toLowerCase(Locale.ROOT);
            if (n.isEmpty()
                    || n.length() > 64
                    || !n.chars().allMatch(c -> c == '-' || c == '_' || Character.isLetterOrDigit(c) && c < 128)) {
                throw new IllegalArgumentException(setting
                        + " must be an HTTP header name of 1 to 64 letters, digits, '-' or '_', was '" + name + "'");
            }
            return n;
        }

        /** {@return builds the reader} */
        public FlowHeaders build() {
            return new FlowHeaders(this);
        }
    }
}
