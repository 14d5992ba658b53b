package dev.cart.redis;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SocketOptions;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.ThreadLocalRandom;
import org.jspecify.annotations.Nullable;

/**
 * What {@link RedisRouteSync} and {@link RedisLoadView} set up alike: the URI checked without quoting it,
 * a Lettuce client that reconnects on its own and fails commands at once while disconnected (so the
 * background threads back off instead of queueing), the {@code host:port} that logs name in place of the
 * URI (which may carry a password), and instance ids.
 */
final class RedisEndpoint {

    private RedisEndpoint() {}

    /**
     * {@code uri} if Lettuce parses it ({@code redis://[:password@]host[:port][/db]} or {@code rediss://}
     * for TLS); otherwise an error that does not quote it (the parser's message could).
     */
    static String checked(String uri) {
        Objects.requireNonNull(uri, "uri");
        try {
            RedisURI.create(uri);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("cluster.redis_url is not a valid redis:// or rediss:// URI");
        }
        return uri;
    }

    /** A client for {@code uri} with {@code timeout} for each command and each connection attempt. */
    static RedisClient client(String uri, Duration timeout) {
        RedisClient client = RedisClient.create(redisUri(uri, timeout));
        client.setOptions(ClientOptions.builder()
                .autoReconnect(true)
                .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                .socketOptions(SocketOptions.builder().connectTimeout(timeout).build())
                .build());
        return client;
    }

    /** {@code host:port} of {@code uri}: what logs and metrics may show. */
    static String where(String uri) {
        RedisURI u = RedisURI.create(uri);
        return u.getHost() + ":" + u.getPort();
    }

    /** {@link #where} and, for {@code rediss://}, " (TLS)": never the password. */
    static String describe(String uri) {
        RedisURI u = RedisURI.create(checked(uri));
        return u.getHost() + ":" + u.getPort() + (u.isSsl() ? " (TLS)" : "");
    }

    private static RedisURI redisUri(String uri, Duration timeout) {
        RedisURI u = RedisURI.create(uri);
        u.setTimeout(timeout);
        return u;
    }

    /** The default instance id: {@code host:pid}. */
    static String defaultInstanceId() {
        String host;
        try {
            host = InetAddress.getLocalHost().getHostName();
        } catch (UnknownHostException e) {
            host = "localhost";
        }
        return host + ":" + ProcessHandle.current().pid();
    }

    /** {@code id} (or the default) with a random suffix: unique per start of the instance. */
    static String origin(@Nullable String id) {
        return (id != null ? id : defaultInstanceId()) + "#"
                + Integer.toHexString(ThreadLocalRandom.current().nextInt());
    }
}
