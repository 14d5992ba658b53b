package dev.cart.redis;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SocketOptions;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.DefaultClientResources;
import io.lettuce.core.resource.Delay;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
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

    /** The first wait before reconnecting after a connection is lost. */
    static final Duration FIRST_RECONNECT = Duration.ofMillis(50);

    /**
     * The longest wait between reconnect attempts: Redis back after an outage of any length is in use again
     * within this (plus the connection's own time). Lettuce's own default grows to 30 s.
     */
    static final Duration LAST_RECONNECT = Duration.ofSeconds(2);

    /** A Lettuce client and the resources (event loops, timers) it alone uses; shut down together. */
    record Client(RedisClient redis, ClientResources resources) {

        /** Closes the client's connections, then its threads. */
        void shutdown() {
            try {
                redis.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            } finally {
                var unused = resources.shutdown(0, 2, TimeUnit.SECONDS);
            }
        }
    }

    /**
     * A client for {@code uri} with {@code timeout} for each command and each connection attempt, which
     * reconnects on its own after a lost connection, waiting {@link #FIRST_RECONNECT} and doubling up to
     * {@link #LAST_RECONNECT} between attempts.
     */
    static Client client(String uri, Duration timeout) {
        ClientResources resources = DefaultClientResources.builder()
                .reconnectDelay(reconnectDelay())
                .build();
        RedisClient client = RedisClient.create(resources, redisUri(uri, timeout));
        client.setOptions(ClientOptions.builder()
                .autoReconnect(true)
                .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                .socketOptions(SocketOptions.builder().connectTimeout(timeout).build())
                .build());
        return new Client(client, resources);
    }

    /** Lettuce's reconnect delay: exponential from {@link #FIRST_RECONNECT}, capped at {@link #LAST_RECONNECT}. */
    static Delay reconnectDelay() {
        return Delay.exponential(FIRST_RECONNECT, LAST_RECONNECT, 2, TimeUnit.MILLISECONDS);
    }

    /** What a log line may say of a failure: Redis's own error text, or the exception's class. */
    static String cause(RuntimeException e) {
        String message = e.getMessage();
        return e instanceof io.lettuce.core.RedisCommandExecutionException && message != null
                ? message
                : e.getClass().getSimpleName();
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
