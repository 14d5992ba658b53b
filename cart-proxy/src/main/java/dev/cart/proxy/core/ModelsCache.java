package dev.cart.proxy.core;

import dev.cart.proxy.http.HeaderList;
import dev.cart.proxy.http.HeaderView;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The 10-minute cache of {@code GET /v1/models}: the last 200 answer (body and end-to-end headers) per
 * <em>asker</em>, answered from until it is older than the TTL. Cleared when a reload changes the workers.
 *
 * <p>Who asks matters: a replica may answer differently per credential (or refuse), and an answer fetched
 * with one client's {@code Authorization} must never reach a client without it. An entry is therefore
 * keyed by a SHA-256 digest of the request headers that can change the answer: the credentials
 * ({@code Authorization}, {@code x-api-key}, {@code api-key}, {@code Cookie}) and the content negotiation
 * ({@code Accept}, {@code Accept-Encoding}). Only the digest is kept, never a credential. The answer's
 * headers are kept with it, so a compressed answer is served with its {@code Content-Encoding} and
 * {@code Vary}. An answer is not cached when it sets a cookie, or varies on a header the key does not
 * cover ({@code Vary: *}, {@code Vary: Origin}, ...).
 *
 * <p>Bounded: at most {@link #MAX_ENTRIES} askers; a full cache first drops stale entries, then the
 * oldest. Thread-safe: a concurrent map of immutable entries; concurrent misses simply both fetch.
 */
public final class ModelsCache {

    public static final Duration TTL = Duration.ofMinutes(10);
    public static final int MAX_ENTRIES = 64;

    /** Request headers whose values select the cache entry (lower case). */
    static final List<String> KEY_HEADERS =
            List.of("authorization", "x-api-key", "api-key", "cookie", "accept", "accept-encoding");

    /** Response headers a cached answer may vary on: the ones the key covers. */
    private static final Set<String> COVERED_VARY = Set.copyOf(KEY_HEADERS);

    public record Entry(byte[] body, HeaderList headers, Instant fetched) {
        public String contentType() {
            String ct = headers.first("Content-Type");
            return ct == null ? "application/json" : ct;
        }
    }

    private final Clock clock;
    private final Map<String, Entry> entries = new ConcurrentHashMap<>();

    public ModelsCache(Clock clock) {
        this.clock = clock;
    }

    /** The cache key for a request's headers: a hex SHA-256 digest of the headers in {@link #KEY_HEADERS}. */
    public static String keyOf(HeaderView request) {
        MessageDigest md;
        try {
            md = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is required of every Java runtime", e);
        }
        for (String name : KEY_HEADERS) {
            md.update(name.getBytes(StandardCharsets.US_ASCII));
            md.update((byte) 0);
            for (String v : request.all(name)) { // names are looked up case-insensitively
                md.update(v.getBytes(StandardCharsets.UTF_8));
                md.update((byte) 1);
            }
            md.update((byte) 2);
        }
        return HexFormat.of().formatHex(md.digest());
    }

    /** True when an answer with these headers may be cached under a {@link #keyOf} key. */
    public static boolean cacheable(HeaderView response) {
        if (response.has("Set-Cookie")) {
            return false;
        }
        for (String v : response.all("Vary")) {
            for (String name : v.split(",")) {
                String n = name.trim().toLowerCase(Locale.ROOT);
                if (!n.isEmpty() && !COVERED_VARY.contains(n)) {
                    return false;
                }
            }
        }
        return true;
    }

    /** The cached answer for {@code key} if it is still fresh, else null. */
    public Entry fresh(String key) {
        Entry e = entries.get(key);
        if (e == null || isStale(e, clock.instant())) {
            return null;
        }
        return e;
    }

    private static boolean isStale(Entry e, Instant now) {
        return Duration.between(e.fetched(), now).compareTo(TTL) >= 0;
    }

    /** Caches {@code body} with a copy of {@code headers} for {@code key}. */
    public void put(String key, byte[] body, HeaderView headers) {
        HeaderList copy = HeaderList.copyOf(headers);
        Instant now = clock.instant();
        if (entries.size() >= MAX_ENTRIES && !entries.containsKey(key)) {
            entries.values().removeIf(e -> isStale(e, now));
            while (entries.size() >= MAX_ENTRIES) {
                entries.entrySet().stream()
                        .min(Map.Entry.comparingByValue(java.util.Comparator.comparing(Entry::fetched)))
                        .ifPresent(oldest -> entries.remove(oldest.getKey(), oldest.getValue()));
            }
        }
        entries.put(key, new Entry(body, copy, now));
    }

    public int size() {
        return entries.size();
    }

    public void clear() {
        entries.clear();
    }
}
