package dev.cart.proxy.upstream;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The upstream URI of a request: the replica's base URL followed by the request's raw path and query. Only the
 * path and query of the client's request target are used (never its scheme or authority, never the Host
 * header), and the result is checked to still point at the replica.
 *
 * <p>A routed request's target (the same few endpoints on the same replicas) is parsed and checked once, not
 * for every request: targets without a query are kept by replica base URL and then raw path, only valid ones.
 * The bound on base URLs follows the configured pool ({@link #target}'s {@code poolSize}): at least
 * {@link #MIN_BASES}, and twice the pool, so that every replica of a large pool keeps its entry and the
 * replicas of a reload's pool fit beside the old ones; beyond it the cache is cleared (replicas come and go by
 * reload: it keeps the recent ones). Paths per base are bounded by {@link #PATHS} (pass-through paths are the
 * client's to choose). {@link URI} is immutable.
 *
 * <p>Thread-safe: concurrent maps; two threads may parse the same target at once, and either result is kept.
 */
public final class UpstreamTargets {

    public static final int MIN_BASES = 64;
    static final int PATHS = 64;

    private final Map<String, Map<String, URI>> byBase = new ConcurrentHashMap<>();
    /** Replicas' base URLs, parsed once. */
    private final Map<String, URI> bases = new ConcurrentHashMap<>();

    /** The most base URLs kept for a pool of {@code poolSize} replicas. */
    static int maxBases(int poolSize) {
        return Math.max(MIN_BASES, 2 * poolSize);
    }

    /**
     * The upstream URI of {@code rawPath} and {@code rawQuery} on the replica at {@code base}, in a pool of
     * {@code poolSize} replicas.
     *
     * @throws Forwarder.BadTarget when the target is not a path, not valid, or leaves the replica
     */
    public URI target(String base, String rawPath, String rawQuery, int poolSize) throws Forwarder.BadTarget {
        boolean cacheable = rawQuery == null && rawPath != null && !rawPath.isEmpty();
        if (cacheable) {
            Map<String, URI> paths = byBase.get(base);
            URI known = paths == null ? null : paths.get(rawPath);
            if (known != null) {
                return known;
            }
        }
        int limit = maxBases(poolSize);
        URI uri = parse(base, rawPath, rawQuery, limit);
        if (cacheable) {
            Map<String, URI> paths = byBase.get(base);
            if (paths == null) {
                if (byBase.size() >= limit) {
                    byBase.clear();
                }
                paths = byBase.computeIfAbsent(base, k -> new ConcurrentHashMap<>());
            }
            if (paths.size() >= PATHS) {
                paths.clear();
            }
            paths.put(rawPath, uri);
        }
        return uri;
    }

    /** How many base URLs have targets kept (for tests). */
    public int basesKept() {
        return byBase.size();
    }

    private URI parse(String base, String rawPath, String rawQuery, int limit) throws Forwarder.BadTarget {
        String path = rawPath == null || rawPath.isEmpty() ? "/" : rawPath;
        if (!path.startsWith("/")) {
            throw new Forwarder.BadTarget("the request target must be a path starting with '/'");
        }
        String s = base + path + (rawQuery == null ? "" : "?" + rawQuery);
        URI uri;
        URI b;
        try {
            uri = new URI(s);
            b = bases.get(base);
            if (b == null) {
                b = new URI(base);
                if (bases.size() >= 16 * limit) {
                    bases.clear();
                }
                bases.put(base, b);
            }
        } catch (URISyntaxException e) {
            throw new Forwarder.BadTarget("the request target is not a valid URI path");
        }
        if (!Objects.equals(uri.getScheme(), b.getScheme())
                || !Objects.equals(uri.getHost(), b.getHost())
                || uri.getPort() != b.getPort()
                || uri.getRawUserInfo() != null
                || uri.getRawFragment() != null) {
            throw new Forwarder.BadTarget("the request target does not resolve to the replica");
        }
        return uri;
    }
}
