package dev.cart.proxy;

import dev.cart.core.spi.RoutingListener;
import dev.cart.proxy.config.ProxyConfig;
import dev.cart.proxy.core.ModelsCache;
import dev.cart.proxy.core.ProxyCore;
import dev.cart.proxy.http.AnswerBudget;
import dev.cart.proxy.http.BodyBudget;
import dev.cart.proxy.netty.NettyFront;
import dev.cart.proxy.observe.DecisionLog;
import dev.cart.proxy.observe.DecisionWindow;
import dev.cart.proxy.observe.ProxyMetrics;
import dev.cart.proxy.routing.Cluster;
import dev.cart.proxy.routing.ProxyListener;
import dev.cart.proxy.routing.Routing;
import dev.cart.proxy.routing.RoutingKeys;
import dev.cart.proxy.upstream.Forwarder;
import dev.cart.proxy.upstream.HealthChecker;
import dev.cart.proxy.upstream.ModelsUnion;
import dev.cart.proxy.upstream.UpstreamHttpClient;
import dev.cart.proxy.upstream.UpstreamKeepAlive;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.time.Clock;
import java.time.Duration;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.concurrent.Callable;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.function.Supplier;
import java.util.random.RandomGenerator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The running proxy: its front on {@code server.host:port} ({@link NettyFront}), the {@link ProxyCore}
 * and {@link Forwarder} it drives, one JDK {@link HttpClient} for health checks and the {@code /v1/models} union
 * (HTTP/1.1, so plain-http replicas never see an h2c upgrade attempt; connect timeout from
 * {@code proxy.connect_timeout_secs}; no redirects followed), and the current {@link Routing}.
 *
 * <p>Reload: {@link #reload()} reads the configuration again through the configured source; only {@code workers}
 * may differ from the running configuration ({@link Reloads} says how a reload is applied or rejected).
 *
 * <p>Concurrency: the configuration and the routing state are read through volatile/atomic references
 * once per request; everything else is immutable or thread-safe.
 */
public final class ProxyServer implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(ProxyServer.class);

    /** Injected collaborators; the defaults are the real ones. */
    static final class Options {
        Clock clock = Clock.systemUTC();
        /** Hears each backoff the proxy decides before a retry (the wait itself is a timer on the event loop). */
        Consumer<Duration> backoffs = d -> {};

        Supplier<RandomGenerator> random = ThreadLocalRandom::current;
        /** Where {@link #reload()} reads the configuration from; null means reload is unavailable. */
        Callable<ProxyConfig> configSource;
        /** The files {@link #configSource} reads, as reload log lines name them (names only, never contents). */
        String configNames = "the configuration source";

        boolean healthChecks = true;
        /** Hears every routing event after the metrics do; its exceptions never reach routing. */
        RoutingListener listener = RoutingListener.NONE;
        /** Token mode's tokenizer (an embedder's own); null: the one {@code cache.tokenizer} names. */
        dev.cart.extract.Tokenizer tokenizer;
        /** False to run the Netty front on NIO even where epoll's native library loads (tests cover both). */
        boolean nativeTransport = true;

        Options clock(Clock c) {
            this.clock = Objects.requireNonNull(c);
            return this;
        }

        Options backoffs(Consumer<Duration> b) {
            this.backoffs = Objects.requireNonNull(b);
            return this;
        }

        Options random(Supplier<RandomGenerator> r) {
            this.random = Objects.requireNonNull(r);
            return this;
        }

        Options configSource(Callable<ProxyConfig> source) {
            this.configSource = source;
            return this;
        }

        Options configNames(String names) {
            this.configNames = Objects.requireNonNull(names);
            return this;
        }

        Options tokenizer(dev.cart.extract.Tokenizer t) {
            this.tokenizer = Objects.requireNonNull(t);
            return this;
        }

        Options listener(RoutingListener l) {
            this.listener = Objects.requireNonNull(l);
            return this;
        }

        Options nativeTransport(boolean on) {
            this.nativeTransport = on;
            return this;
        }

        /** False to start no background probing (tests drive {@link HealthChecker#probeAll()} instead). */
        Options healthChecks(boolean on) {
            this.healthChecks = on;
            return this;
        }
    }

    /** What a reload did. */
    record ReloadResult(boolean accepted, boolean changed, String message) {}

    private final ProxyConfig config;
    private final HttpClient client;
    private final ScheduledExecutorService scheduler;
    private final DecisionWindow window = new DecisionWindow();
    private final ProxyMetrics metrics;
    private final ProxyListener listener;
    private final ModelsCache models;
    private final ModelsUnion modelsUnion;
    private final RoutingKeys routingKeys;
    private final Forwarder forwarder;
    private final ProxyCore core;
    private final BodyBudget bodyBudget;
    private final AnswerBudget answerBudget;
    private final NettyFront front;
    private final AtomicReference<Routing> routing = new AtomicReference<>();
    private final Cluster cluster;
    /** Reloads of the configuration, and the running configuration they keep. */
    private final Reloads reloads;

    private final java.util.concurrent.atomic.AtomicBoolean closed = new java.util.concurrent.atomic.AtomicBoolean();

    private ProxyServer(ProxyConfig config, Options options) throws IOException {
        this.config = config;
        ScheduledThreadPoolExecutor ses = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, "cart-scheduler");
            t.setDaemon(true);
            return t;
        });
        ses.setRemoveOnCancelPolicy(true);
        this.scheduler = ses;
        this.metrics = new ProxyMetrics(routing::get, config.cache().blockChars(), window);
        this.listener = new ProxyListener(metrics, options.listener);
        listener.flowListener(new dev.cart.proxy.flow.FlowMetrics(
                metrics.registry, () -> flowControl(routing.get()), () -> routing.get().replicas));
        listener.kvListener(metrics.kv()); // precise mode's index and subscriber (workers[].kv_events)
        UpstreamKeepAlive.apply();
        // health checks and the /v1/models union go through the JDK client
        this.client =
                UpstreamHttpClient.create(Duration.ofSeconds(config.proxy().connectTimeoutSecs()));
        this.models = new ModelsCache(options.clock);
        this.modelsUnion =
                new ModelsUnion(client, Duration.ofSeconds(config.proxy().requestTimeoutSecs()));
        this.routingKeys = new RoutingKeys(config, options.tokenizer);
        this.forwarder = new Forwarder(options.random, config, metrics, routingKeys, listener, options.backoffs);
        this.bodyBudget = new BodyBudget(config.server().bufferedBodyLimit(), metrics);
        this.answerBudget = new AnswerBudget(config.server().bufferedAnswerLimit());
        this.cluster = Cluster.of(config.cluster(), () -> routing.get().replicas.replicas());
        Routing first = Routing.build(config, options.clock, listener, client, scheduler, cluster);
        routing.set(first);
        this.reloads =
                new Reloads(config, options, routing, metrics, listener, client, scheduler, cluster, models, window);
        cluster.bindTo(metrics.registry);
        metrics.syncReplicas(first.replicas);
        this.core = new ProxyCore(
                this::config, routing::get, forwarder, routingKeys, models, modelsUnion, metrics, window, cluster);
        try {
            this.front = NettyFront.listen(config, core, bodyBudget, answerBudget, options.nativeTransport);
        } catch (IOException e) {
            first.close();
            cluster.close();
            metrics.close();
            scheduler.shutdownNow();
            throw new IOException(
                    "cannot listen on " + config.server().host() + ":"
                            + config.server().port() + ": " + e.getMessage(),
                    e);
        }
    }

    /** The admission queue of {@code r}, or null when flow control is off (or before the first routing state). */
    private static dev.cart.flow.FlowControl flowControl(Routing r) {
        return r == null || r.flow == null ? null : r.flow.control();
    }

    /** Builds and starts the proxy. */
    static ProxyServer start(ProxyConfig config, Options options) throws IOException {
        ProxyServer p = new ProxyServer(config, options);
        p.front.start();
        p.cluster.start(() -> p.routing.get().router);
        if (p.cluster.on()) {
            LOG.info("cluster: {}", p.cluster.describe());
        }
        if (options.healthChecks) {
            p.routing.get().health.start();
        }
        LOG.info(
                "CART listening on {}:{} with {} worker(s), policy {}, {}",
                config.server().host(),
                p.port(),
                config.workers().size(),
                config.cache().policy(),
                p.front.description());
        return p;
    }

    /**
     * Logs a warning when the open-file limit is below what the configured limits can use: every client
     * connection ({@code server.max_connections}) and, for each proxied request in progress
     * ({@code server.max_concurrent_requests}), an upstream connection, plus {@link
     * OpenFiles#OTHER_FILES} for the JVM's own files. Silent at a limit that covers them.
     */
    static void warnAboutOpenFileLimit(ProxyConfig.Server server) {
        OptionalLong limit = OpenFiles.limit();
        if (limit.isPresent()) {
            OpenFiles.warning(limit.getAsLong(), server).ifPresent(LOG::warn);
        }
    }

    int port() {
        return front.port();
    }

    /** The base URI clients use, on loopback when bound to the wildcard address. */
    URI baseUri() {
        String host = config.server().host();
        if (host.equals("0.0.0.0") || host.equals("::") || host.isEmpty()) {
            host = "127.0.0.1";
        }
        return URI.create("http://" + (host.contains(":") ? "[" + host + "]" : host) + ":" + port());
    }

    /** The running configuration (the last reload's, once one was applied). */
    public ProxyConfig config() {
        return reloads.running();
    }

    public Routing routing() {
        return routing.get();
    }

    public Forwarder forwarder() {
        return forwarder;
    }

    AnswerBudget answerBudget() {
        return answerBudget;
    }

    BodyBudget bodyBudget() {
        return bodyBudget;
    }

    public RoutingKeys routingKeys() {
        return routingKeys;
    }

    public ModelsCache models() {
        return models;
    }

    public ModelsUnion modelsUnion() {
        return modelsUnion;
    }

    ProxyListener listener() {
        return listener;
    }

    /** This proxy's cluster membership ({@link Cluster#OFF} without a {@code cluster} section). */
    public Cluster cluster() {
        return cluster;
    }

    public ProxyMetrics metrics() {
        return metrics;
    }

    public DecisionWindow window() {
        return window;
    }

    /**
     * Re-reads the configuration from the configured source (SIGHUP does this) and applies it if only its workers
     * changed; overlapping reloads end on the newest read ({@link Reloads#reload()}).
     */
    ReloadResult reload() {
        return reloads.reload();
    }

    /** Applies {@code fresh} if only its workers differ from the running configuration. */
    ReloadResult reload(ProxyConfig fresh) {
        return reloads.reload(fresh);
    }

    /** What a drain did: requests in flight when it began, how many finished, how many were cut, its length. */
    record DrainReport(int inFlight, int finished, int cut, Duration took) {}

    /** How often a drain looks whether the requests in flight have finished. */
    private static final long DRAIN_POLL_MILLIS = 20;

    /**
     * Stops the proxy gracefully (SIGTERM does this): {@code /health} answers 503 {@code draining} and new
     * requests on open connections get 503 with {@code Connection: close} ({@link ProxyCore#drain}); the
     * listening socket is closed, so new connections are refused; the requests and streams in flight go on for
     * up to {@code server.drain_timeout_ms}; then the connections still open are closed (a stream cut there
     * ends with an error event, its decision line with {@code drain_cut}) and the proxy is {@link #close closed}.
     * Logs the start and the end at INFO. Blocks until done; call it once, from one thread.
     */
    DrainReport drain() {
        return drain(Duration.ofMillis(config.server().drainTimeoutMs()));
    }

    /**
     * Client connections with a request being read or answered now (a moment's view: an answer counts until its
     * last write has completed, which may be just after the client has read it).
     */
    int requestsInProgress() {
        return front.requestsInProgress();
    }

    /** {@link #drain()} with {@code timeout} in place of {@code server.drain_timeout_ms}. */
    DrainReport drain(Duration timeout) {
        long started = System.nanoTime();
        core.drain();
        front.stopAccepting();
        int inFlight = front.requestsInProgress();
        LOG.info(
                "draining: no longer accepting connections, /health answers 503; {} request(s) in flight, waiting up "
                        + "to {} ms (server.drain_timeout_ms)",
                inFlight,
                timeout.toMillis());
        long deadline = started + timeout.toNanos();
        // a poll rather than a signal per request: a drain happens once, and this keeps the request path as it is
        while (front.requestsInProgress() > 0 && System.nanoTime() < deadline) {
            java.util.concurrent.locks.LockSupport.parkNanos(
                    Duration.ofMillis(DRAIN_POLL_MILLIS).toNanos());
        }
        int cut = front.cutAll("the proxy is shutting down and server.drain_timeout_ms (" + timeout.toMillis()
                + " ms) has passed; the answer is incomplete, retry the request");
        Duration took = Duration.ofNanos(System.nanoTime() - started);
        int finished = Math.max(0, inFlight - cut);
        LOG.info(
                "drained in {} ms: {} request(s) finished, {} cut at server.drain_timeout_ms",
                took.toMillis(),
                finished,
                cut);
        close();
        return new DrainReport(inFlight, finished, cut, took);
    }

    /** Stops accepting, closes the routing state and the threads. In-flight exchanges are cut off. Idempotent. */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        front.close();
        Routing r = routing.get();
        if (r != null) {
            r.close();
        }
        cluster.close();
        scheduler.shutdownNow();
        DecisionLog.flush(
                java.time.Duration.ofSeconds(5)); // the lines of the requests just ended, before logback stops
        metrics.close();
    }
}
