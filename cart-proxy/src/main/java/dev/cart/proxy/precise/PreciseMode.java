package dev.cart.proxy.precise;

import dev.cart.core.CacheFeedback;
import dev.cart.core.EvictionReport;
import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.RouteDecision;
import dev.cart.core.Router;
import dev.cart.core.spi.LeaseCompletion;
import dev.cart.core.spi.RoutingListener;
import dev.cart.extract.Endpoint;
import dev.cart.kvevents.EngineTokenizer;
import dev.cart.kvevents.KvEventsListener;
import dev.cart.kvevents.KvIndex;
import dev.cart.kvevents.KvStream;
import dev.cart.kvevents.KvSubscriber;
import dev.cart.kvevents.PreciseMatch;
import dev.cart.kvevents.PromptTokenizer;
import dev.cart.kvevents.PromptTokens;
import dev.cart.kvevents.ReplicaMode;
import dev.cart.kvevents.ReplicaStatus;
import dev.cart.kvevents.TokenizeRequest;
import dev.cart.proxy.config.KvEventsSettings;
import dev.cart.proxy.config.ProxyConfig;
import java.net.http.HttpClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executor;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

/**
 * Precise mode for one worker list (the proxy builds one with each routing state, so a reload that changes the
 * workers builds a new one and closes the old): the block index ({@link KvIndex}) of what the engines of the
 * workers with {@code kv_events} report holding, the subscriber that feeds it (one I/O thread per stream: per
 * worker and data-parallel rank), and the engine tokenizer that gives a request's engine tokens.
 *
 * <p>Per routed request the proxy asks {@link #skip} first, on the thread that extracted it: a request none of
 * whose candidate replicas is precise now is not tokenized (it routes approximately at no extra cost), except
 * one request a second, a probe, so that a replica dropped to approximate by failing tokenizations comes back
 * once its engine tokenizes again. Otherwise {@link #lookup} (blocking HTTP to an engine's {@code /tokenize},
 * then the index's lock-free lookup) runs on {@link #executor()}, never on an event loop, and the request is
 * routed with the match's confirmed view; after each decision {@link #routed} feeds the index's overlay and its
 * silence check, and {@link #listening} hears the lease's end.
 *
 * <p>Threads: the subscriber's (one per stream, from construction to {@link #close}) and the tokenize pool's
 * (at most {@link #TOKENIZE_THREADS}, started on demand, gone after 30 s idle); the {@code /tokenize} calls go
 * through the proxy's own HTTP client, so a reload starts no client. None exist without a worker with
 * {@code kv_events}: {@link #of} then returns null. An engine that empties its cache makes the router forget
 * its routes to that replica ({@link #forgetRoutesOnEngineReset}). Thread-safe.
 */
public final class PreciseMode implements AutoCloseable {

    /** Tokenize calls at once, each a blocked thread for up to {@code kv_events.tokenize_timeout_ms}. */
    static final int TOKENIZE_THREADS =
            Math.min(64, Math.max(8, 4 * Runtime.getRuntime().availableProcessors()));

    /** How often a request is tokenized while no candidate replica is precise (a probe). */
    static final long PROBE_NANOS = TimeUnit.SECONDS.toNanos(1);

    private static final AtomicInteger POOLS = new AtomicInteger();

    private final KvIndex index;
    private final KvSubscriber subscriber;
    /** The engine tokenizer, or null with {@code tokenize: none}. */
    private final PromptTokenizer tokenizer;
    /** The tokenize pool, or null with {@code tokenize: none}. */
    private final ThreadPoolExecutor executor;
    /** The followed workers' URLs (their replica ids), in configuration order, with their streams' model. */
    private final Map<String, String> followed;

    /** What an engine reset (a restart, AllBlocksCleared) does beyond the index: the router's forget. */
    private final AtomicReference<Consumer<String>> resets;

    private final AtomicLong nextProbe = new AtomicLong(System.nanoTime());

    private PreciseMode(
            KvIndex index,
            KvSubscriber subscriber,
            PromptTokenizer tokenizer,
            ThreadPoolExecutor executor,
            Map<String, String> followed,
            AtomicReference<Consumer<String>> resets) {
        this.index = index;
        this.subscriber = subscriber;
        this.tokenizer = tokenizer;
        this.executor = executor;
        this.followed = followed;
        this.resets = resets;
    }

    /**
     * From now on, a replica whose engine emptied its cache (it restarted, or said {@code AllBlocksCleared})
     * loses its routes in {@code router}'s prefix tree ({@link Router#forgetReplica}), as the index drops its
     * blocks and its overlay: should the replica fall back to approximate, the tree no longer claims what the
     * engine lost. Called once the router over this precise mode's workers is built; runs on the stream's
     * thread.
     *
     * @param router   the router routing over {@code replicas}
     * @param replicas its replica set (a reset replica no longer in it is ignored)
     */
    public void forgetRoutesOnEngineReset(Router router, ManagedReplicaSet replicas) {
        resets.set(id -> replicas.member(id).ifPresent(router::forgetReplica));
    }

    /**
     * Precise mode for {@code config}'s workers, its subscriber started, or null when no worker has
     * {@code kv_events} (nothing is started then).
     *
     * @param listener hears the index and the subscriber (the proxy's metrics)
     * @param client   the proxy's HTTP client, shared by every reload's engine tokenizer (never closed here);
     *                 the {@code /tokenize} calls carry no header of the client's request
     */
    public static PreciseMode of(ProxyConfig config, KvEventsListener listener, HttpClient client) {
        if (!config.precise()) {
            return null;
        }
        KvEventsSettings s = config.kvEvents();
        AtomicReference<Consumer<String>> resets = new AtomicReference<>(id -> {});
        KvIndex index = KvIndex.builder()
                .blockSize(s.blockSize())
                .maxBlocksPerStream(s.maxBlocksPerStream())
                .silence(Duration.ofSeconds(s.silenceSecs()))
                .gapHold(Duration.ofSeconds(s.gapHoldSecs()))
                .replayTimeout(Duration.ofSeconds(s.replayTimeoutSecs()))
                .overlayTtl(Duration.ofMillis(s.overlayTtlMs()))
                .listener(listener)
                .onEngineReset(id -> resets.get().accept(id))
                .build();
        Map<String, String> followed = new LinkedHashMap<>();
        KvSubscriber.Builder sb = KvSubscriber.builder(index).receiveHighWaterMark(s.receiveHwm());
        for (ProxyConfig.Worker w : config.workers()) {
            if (w.kvEvents() == null) {
                continue;
            }
            String model = s.model() != null ? s.model() : w.models().get(0);
            followed.put(w.url(), model);
            for (int rank = 0; rank < w.kvEventsRanks(); rank++) {
                sb.stream(new KvStream(
                        w.url(),
                        offset(w.kvEvents(), rank),
                        w.kvEventsReplay() == null ? null : offset(w.kvEventsReplay(), rank),
                        rank,
                        w.kvEventsTopic(),
                        model));
            }
        }
        PromptTokenizer tokenizer = null;
        ThreadPoolExecutor executor = null;
        if (s.tokenizeByEngine()) {
            Duration timeout = s.tokenizeTimeout();
            tokenizer = EngineTokenizer.builder(index)
                    .timeout(timeout)
                    .httpClient(client)
                    .build();
            executor = pool(config.server().maxConcurrentRequests());
        }
        return new PreciseMode(index, sb.start(), tokenizer, executor, followed, resets);
    }

    private static ThreadPoolExecutor pool(int queue) {
        int pool = POOLS.incrementAndGet();
        AtomicInteger n = new AtomicInteger();
        ThreadPoolExecutor e = new ThreadPoolExecutor(
                TOKENIZE_THREADS, TOKENIZE_THREADS, 30, TimeUnit.SECONDS, new LinkedBlockingQueue<>(queue), r -> {
                    Thread t = new Thread(r, "cart-kv-tokenize-" + pool + "-" + n.incrementAndGet());
                    t.setDaemon(true);
                    return t;
                });
        e.allowCoreThreadTimeOut(true);
        return e;
    }

    /** {@code tcp://host:port} with the port raised by {@code rank} (vLLM's data-parallel ranks). */
    static String offset(String endpoint, int rank) {
        if (rank == 0) {
            return endpoint;
        }
        int colon = endpoint.lastIndexOf(':');
        int port = Integer.parseInt(endpoint.substring(colon + 1));
        return endpoint.substring(0, colon + 1) + (port + rank);
    }

    /** The block index (for {@code /workers} and the metrics' gauges). */
    public KvIndex index() {
        return index;
    }

    /** True when the worker with this URL publishes KV events. */
    public boolean follows(String replica) {
        return followed.containsKey(replica);
    }

    /** The followed workers' URLs, in configuration order. */
    public List<String> followed() {
        return List.copyOf(followed.keySet());
    }

    /** {@code replica}'s mode and streams, or null when it is not followed. */
    public ReplicaStatus status(String replica) {
        return follows(replica) ? index.status(replica) : null;
    }

    /**
     * Why a request for {@code model} is not looked up, or null when it should be ({@link #lookup}, on
     * {@link #executor()}). Cheap: no I/O, no allocation but the result.
     */
    public PreciseLookup skip(String model, ManagedReplicaSet replicas) {
        if (tokenizer == null) {
            return PreciseLookup.off(PreciseLookup.TOKENIZE_OFF, -1);
        }
        if (model == null) {
            return PreciseLookup.off(PreciseLookup.NO_MODEL, -1);
        }
        boolean candidate = false;
        for (ManagedReplicaSet.Member m : replicas.replicas()) {
            if (followed.containsKey(m.id()) && m.serves(model)) {
                if (index.mode(m.id()) == ReplicaMode.PRECISE) {
                    return null;
                }
                candidate = true;
            }
        }
        return candidate && probe() ? null : PreciseLookup.off(PreciseLookup.NO_EVENTS, -1);
    }

    /** True at most once per {@link #PROBE_NANOS}. */
    private boolean probe() {
        long now = System.nanoTime();
        long next = nextProbe.get();
        return now - next >= 0 && nextProbe.compareAndSet(next, now + PROBE_NANOS);
    }

    /** Where {@link #lookup} runs (bounded: a full queue refuses with RejectedExecutionException). */
    public Executor executor() {
        return executor;
    }

    /**
     * The request's engine tokens and the index's match for them. Blocks for the tokenize call (at most
     * {@code kv_events.tokenize_timeout_ms}): call it on {@link #executor()}. Never throws for a request that
     * cannot be looked up: the result says why.
     *
     * @param endpoint the routed endpoint the request came in on
     * @param body     the request's JSON body
     * @param model    the request's model
     * @param replicas the current replica set (the engines asked are the followed ones serving the model)
     */
    public PreciseLookup lookup(Endpoint endpoint, byte[] body, String model, ManagedReplicaSet replicas) {
        TokenizeRequest request;
        try {
            request = TokenizeRequest.of(api(endpoint), body);
        } catch (IllegalArgumentException e) {
            return PreciseLookup.off(PreciseLookup.NOT_TOKENIZABLE, -1);
        }
        List<String> precise = new ArrayList<>();
        List<String> others = new ArrayList<>();
        for (ManagedReplicaSet.Member m : replicas.replicas()) {
            if (followed.containsKey(m.id()) && m.serves(model)) {
                (index.mode(m.id()) == ReplicaMode.PRECISE ? precise : others).add(m.id());
            }
        }
        PromptTokens tokens = tokenizer.tokenize(request, precise.isEmpty() ? others : precise);
        if (!tokens.ok()) {
            return PreciseLookup.off(
                    "timeout".equals(tokens.failure()) ? PreciseLookup.TOKENIZE_TIMEOUT : PreciseLookup.TOKENIZE_FAILED,
                    tokens.nanos());
        }
        PreciseMatch match =
                index.lookup(tokens.tokens(), request.model() != null ? request.model() : model, request.salt());
        return new PreciseLookup(match, tokens.nanos(), null);
    }

    private static TokenizeRequest.Api api(Endpoint endpoint) {
        return switch (endpoint) {
            case CHAT_COMPLETIONS -> TokenizeRequest.Api.CHAT;
            case COMPLETIONS -> TokenizeRequest.Api.COMPLETIONS;
            case MESSAGES -> TokenizeRequest.Api.MESSAGES;
        };
    }

    /**
     * Tells the index about a decision: a looked-up request's blocks count for its replica (the overlay) until
     * its lease ends; any request routed to a followed replica counts for that replica's silence check.
     */
    public void routed(RouteDecision decision, PreciseLookup lookup) {
        if (!decision.routed() || !follows(decision.replica().id())) {
            return;
        }
        index.routed(decision, lookup == null ? null : lookup.match());
    }

    /** The mode that decided for {@code replica}: the lookup's, the index's now, or approximate if not followed. */
    public ReplicaMode mode(String replica, PreciseLookup lookup) {
        if (lookup != null && lookup.match() != null) {
            return lookup.match().mode(replica);
        }
        return follows(replica) ? index.mode(replica) : ReplicaMode.APPROXIMATE;
    }

    /** {@code host}, and the index's lease listener (ending each routed request's overlay) beside it. */
    public RoutingListener listening(RoutingListener host) {
        RoutingListener lease = index.leaseListener();
        return new RoutingListener() {
            @Override
            public void onDecision(RouteDecision decision) {
                host.onDecision(decision);
            }

            @Override
            public void onLeaseCompleted(LeaseCompletion completion) {
                try {
                    host.onLeaseCompleted(completion);
                } finally {
                    lease.onLeaseCompleted(completion);
                }
            }

            @Override
            public void onCacheFeedback(RouteDecision decision, CacheFeedback feedback) {
                host.onCacheFeedback(decision, feedback);
            }

            @Override
            public void onInsertSkipped() {
                host.onInsertSkipped();
            }

            @Override
            public void onEviction(EvictionReport report) {
                host.onEviction(report);
            }

            @Override
            public void onReset() {
                host.onReset();
            }
        };
    }

    /**
     * Stops the subscriber's threads (closing its sockets) and the tokenize pool: calls already queued still
     * run (their requests route), new ones are refused (their requests route approximately). Idempotent.
     */
    @Override
    public void close() {
        subscriber.close();
        if (executor != null) {
            executor.shutdown();
        }
    }
}
