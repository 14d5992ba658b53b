package dev.cart.sim;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A simulated vLLM replica as a real HTTP server: the same engine as the in-process simulation (prefix
 * cache of 16-token blocks, continuous batching with chunked prefill), run against the real clock with
 * its times divided by {@link Options#speedup}. It speaks the OpenAI API ({@code POST /v1/chat/completions},
 * {@code POST /v1/completions}, streaming or not), the Anthropic Messages API ({@code POST /v1/messages}),
 * {@code GET /health} and {@code GET /v1/models}, and reports cache hits as vLLM does
 * ({@code usage.prompt_tokens_details.cached_tokens}; {@code cache_read_input_tokens} on
 * {@code /v1/messages}). It can be told to fail ({@link #setFault}) for reliability tests.
 *
 * <pre>{@code
 * try (SimulatedReplicaServer replica = SimulatedReplicaServer.start(Options.defaults().name("r1"))) {
 *     URI base = replica.baseUri(); // http://127.0.0.1:<ephemeral port>
 *     ...
 * }
 * }</pre>
 *
 * <p>The answer text is filler derived from the prompt; the prompt is never echoed or logged. Each
 * request runs on its own thread of a cached pool (a hanging request holds one). Thread-safe.
 */
public final class SimulatedReplicaServer implements AutoCloseable {

    /** A failure the replica can be told to show. Takes effect for requests that arrive afterwards. */
    public enum Fault {
        /** Behave normally. */
        NONE,
        /** Answer inference requests with HTTP 500 and an error body. */
        ERROR_500,
        /** Answer inference requests and {@code /health} with HTTP 503. */
        ERROR_503,
        /** Close the connection in the middle of the response (mid-stream for a streamed one). */
        RESET,
        /** Accept inference and health requests and never answer (until the server closes). */
        HANG,
        /** Answer, but ten times slower: later first token, long gaps between stream chunks. */
        SLOW
    }

    private final Options options;
    private final HttpServer http;
    private final ExecutorService executor;
    private final RealTimeEngine engine;
    private final CountDownLatch closing = new CountDownLatch(1);
    private final AtomicLong requests = new AtomicLong();
    private final AtomicLong healthRequests = new AtomicLong();
    private final AtomicLong modelsRequests = new AtomicLong();
    private final AtomicLong ids = new AtomicLong();
    private volatile Fault fault;
    private volatile boolean closed;
    /** The KV-event side (precise mode), or null when the replica publishes none. */
    private final ReplicaKvEvents kv;
    /** LoRA adapters loaded now, in load order; each served under its own name. */
    private final Set<String> adapters = Collections.synchronizedSet(new LinkedHashSet<>());

    private SimulatedReplicaServer(Options o) throws IOException {
        this.options = o;
        this.fault = o.fault;
        this.adapters.addAll(o.adapters);
        EngineConfig config = EngineConfig.defaults()
                .withCacheTokens(o.cacheTokens)
                .withMaxNumSeqs(o.maxNumSeqs)
                .withMaxBatchedTokens(o.maxBatchedTokens);
        this.engine = new RealTimeEngine(config, o.speedup, "sim-" + o.name);
        try {
            this.kv = o.kvEvents == null ? null : new ReplicaKvEvents(o.host, o.kvEvents, config.blockTokens());
        } catch (RuntimeException e) {
            engine.close();
            throw e;
        }
        if (kv != null) {
            engine.betweenSteps(e -> e.events(kv.recorder()));
        }
        AtomicInteger threads = new AtomicInteger();
        ThreadFactory tf = r -> {
            Thread t = new Thread(r, "sim-" + o.name + "-http-" + threads.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
        this.executor = Executors.newCachedThreadPool(tf);
        HttpServer server;
        try {
            server = HttpServer.create(new InetSocketAddress(o.host, o.port), 128);
        } catch (IOException e) {
            engine.close();
            if (kv != null) {
                kv.close();
            }
            executor.shutdownNow();
            throw e;
        }
        this.http = server;
        http.setExecutor(executor);
        ReplicaHandler handler = new ReplicaHandler(this, config);
        http.createContext("/", handler);
        http.start();
    }

    /**
     * Starts a replica. With port 0 it binds an ephemeral port on {@code options.host()} (127.0.0.1 by
     * default).
     */
    public static SimulatedReplicaServer start(Options options) throws IOException {
        return new SimulatedReplicaServer(options.copy());
    }

    /** The base URI, e.g. {@code http://127.0.0.1:12345} (append {@code /v1} for an OpenAI client). */
    public URI baseUri() {
        String host = http.getAddress().getHostString();
        if (host.indexOf(':') >= 0) {
            host = "[" + host + "]";
        }
        return URI.create("http://" + host + ":" + port());
    }

    public int port() {
        return http.getAddress().getPort();
    }

    /** The replica's name (from its options). */
    public String name() {
        return options.name;
    }

    /**
     * Loads a LoRA adapter at run time, as vLLM's {@code POST /v1/load_lora_adapter} does: from now on it
     * is listed by {@code GET /v1/models} (with {@code parent} the base model) and requests naming it are
     * served.
     */
    public void loadAdapter(String name) {
        if (name == null || name.isBlank() || name.equals(options.model())) {
            throw new IllegalArgumentException("an adapter needs a name of its own");
        }
        adapters.add(name);
    }

    /** Unloads an adapter: it leaves {@code GET /v1/models}, and requests naming it get a 404. */
    public void unloadAdapter(String name) {
        adapters.remove(name);
    }

    /** The adapters loaded now, in load order. */
    public List<String> adapters() {
        synchronized (adapters) {
            return List.copyOf(adapters);
        }
    }

    /**
     * True if a request naming {@code model} is served: the base model, a loaded adapter, or (unless the
     * replica was started with {@link Options#strictModels}) any name at all, as the simulator always did.
     */
    boolean serves(String model) {
        return !options.strictModels() || model.equals(options.model()) || adapters.contains(model);
    }

    /** Sets the fault shown by requests that arrive from now on. */
    public void setFault(Fault fault) {
        this.fault = Objects.requireNonNull(fault);
    }

    public Fault fault() {
        return fault;
    }

    /** Inference requests ({@code POST /v1/...}) received so far, whatever they were answered with. */
    public long requestCount() {
        return requests.get();
    }

    /** {@code GET /health} requests received so far (under any base path), whatever they were answered with. */
    public long healthRequestCount() {
        return healthRequests.get();
    }

    /** {@code GET /v1/models} requests received so far (under any base path). */
    public long modelsRequestCount() {
        return modelsRequests.get();
    }

    void countHealthRequest() {
        healthRequests.incrementAndGet();
    }

    void countModelsRequest() {
        modelsRequests.incrementAndGet();
    }

    /** The KV-event PUB endpoint ({@code tcp://host:port}), or null when the replica publishes none. */
    public String kvEndpoint() {
        return kv == null ? null : kv.publisher().endpoint();
    }

    /** The KV-event replay endpoint, or null when the replica publishes none. */
    public String kvReplayEndpoint() {
        return kv == null ? null : kv.publisher().replayEndpoint();
    }

    /** Fault: the next {@code n} event batches are numbered and kept for replay, but never sent. */
    public void kvDropNext(int n) {
        requireKv().publisher().dropNext(n);
    }

    /** Fault: the publisher sends nothing while on (its engine goes on caching); off, it sends what it held. */
    public void kvSilent(boolean on) {
        requireKv().publisher().silent(on);
    }

    /** Fault: evicted blocks are reported stored in the CPU tier, then removed from the GPU (an offload). */
    public void kvOffload(boolean on) {
        requireKv().recorder().offload = on;
    }

    /** KV-event batches sent so far. */
    public long kvPublished() {
        return requireKv().publisher().published();
    }

    /**
     * Fault: the engine restarts, between two of its steps: its cache is empty again, its running requests
     * start over (as their clients' retries would), its block hashes get a new seed and its event sequence
     * starts again at 0 with an empty replay buffer. No event says so, as with vLLM.
     */
    public void restartEngine() {
        ReplicaKvEvents k = kv;
        engine.betweenSteps(e -> {
            e.restart();
            if (k != null) {
                k.restarted();
            }
        });
    }

    private ReplicaKvEvents requireKv() {
        if (kv == null) {
            throw new IllegalStateException("this replica publishes no KV events (Options.kvEvents)");
        }
        return kv;
    }

    ReplicaKvEvents kv() {
        return kv;
    }

    private final ModelTokenizer tokenizer = new ModelTokenizer();

    /** The token ids the simulated model computes for a chat's messages or a completion's prompt. */
    int[] tokens(java.util.List<Message> messages, String completionPrompt) {
        if (kv != null) {
            return kv.tokens(messages, completionPrompt);
        }
        synchronized (tokenizer) {
            return messages != null ? tokenizer.chat(messages) : tokenizer.completion(completionPrompt);
        }
    }

    /** Stops the server: hanging and in-flight requests lose their connection. Idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        closing.countDown();
        engine.close();
        if (kv != null) {
            kv.close();
        }
        http.stop(0);
        executor.shutdownNow();
        try {
            executor.awaitTermination(2, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    // ------------------------------------------------------------------------------------------------
    // for the handler

    Options options() {
        return options;
    }

    RealTimeEngine engine() {
        return engine;
    }

    boolean isClosed() {
        return closed;
    }

    void countRequest() {
        requests.incrementAndGet();
    }

    long nextId() {
        return ids.incrementAndGet();
    }

    /** Blocks until the server closes (what a hanging request does). */
    void awaitClose() {
        try {
            closing.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    static void closeQuietly(HttpExchange ex) {
        try {
            ex.close();
        } catch (RuntimeException ignored) {
            // the connection is already gone
        }
    }

    /**
     * Settings of a {@link SimulatedReplicaServer}. Mutable builder-style: each setter changes this
     * object and returns it; {@link SimulatedReplicaServer#start} copies it. Not thread-safe.
     */
    public static final class Options {
        private String name = "sim-replica";
        private String host = "127.0.0.1";
        private int port;
        private String model = "sim-llama-3.1-8b";
        private long cacheTokens = EngineConfig.CACHE_TOKENS;
        private double speedup = 20;
        private int outputTokens = 64;
        private Fault fault = Fault.NONE;
        private int maxNumSeqs = EngineConfig.MAX_NUM_SEQS;
        private int maxBatchedTokens = EngineConfig.MAX_BATCHED_TOKENS;
        private double slowFactor = 10;
        private List<String> adapters = List.of();
        private boolean strictModels;
        private int basePaths;
        private KvEventOptions kvEvents;

        private Options() {}

        /**
         * Name {@code sim-replica}, host 127.0.0.1, ephemeral port, model {@code sim-llama-3.1-8b}, a
         * 150,000-token cache, speedup 20, 64 output tokens when a request gives no {@code max_tokens}.
         */
        public static Options defaults() {
            return new Options();
        }

        Options copy() {
            Options o = new Options();
            o.name = name;
            o.host = host;
            o.port = port;
            o.model = model;
            o.cacheTokens = cacheTokens;
            o.speedup = speedup;
            o.outputTokens = outputTokens;
            o.fault = fault;
            o.maxNumSeqs = maxNumSeqs;
            o.maxBatchedTokens = maxBatchedTokens;
            o.slowFactor = slowFactor;
            o.adapters = adapters;
            o.strictModels = strictModels;
            o.basePaths = basePaths;
            o.kvEvents = kvEvents == null ? null : kvEvents.copy();
            return o;
        }

        /**
         * Precise mode: the replica counts real tokens (the simulated model's tokenizer and chat template),
         * hashes its blocks with its own chained SHA-256 and publishes KV-cache events as vLLM does
         * ({@link KvEventOptions}); null (the default) publishes none.
         */
        public Options kvEvents(KvEventOptions options) {
            this.kvEvents = options == null ? null : options.copy();
            return this;
        }

        /** LoRA adapters loaded at start (more are loaded and unloaded at run time; none by default). */
        public Options adapters(List<String> names) {
            for (String n : names) {
                if (n == null || n.isBlank()) {
                    throw new IllegalArgumentException("an adapter name must not be blank");
                }
            }
            this.adapters = List.copyOf(names);
            return this;
        }

        /**
         * Whether a request naming a model this replica does not serve (neither the base model nor a loaded
         * adapter) gets vLLM's 404 (default off: any model name is served, as a single-model pool needs).
         */
        public Options strictModels(boolean on) {
            this.strictModels = on;
            return this;
        }

        public boolean strictModels() {
            return strictModels;
        }

        /**
         * How many base URLs the replica answers under besides its root: with {@code n} &gt; 0 a request
         * to {@code /b/K/PATH} ({@code 0 <= K < n}) is answered as {@code /PATH} is, so one process stands
         * for {@code n} workers of a pool (the idle-cost benchmark's 1,000 workers). Default 0: the root only.
         */
        public Options basePaths(int n) {
            if (n < 0) {
                throw new IllegalArgumentException("basePaths must not be negative, was " + n);
            }
            this.basePaths = n;
            return this;
        }

        public int basePaths() {
            return basePaths;
        }

        /** Name used in thread names and the {@code x-sim-replica} response header. */
        public Options name(String name) {
            if (name == null || name.isBlank()) {
                throw new IllegalArgumentException("name must not be blank");
            }
            this.name = name;
            return this;
        }

        /** Address to bind (default 127.0.0.1). */
        public Options host(String host) {
            this.host = Objects.requireNonNull(host);
            return this;
        }

        /** Port to bind; 0 (the default) picks an ephemeral port. */
        public Options port(int port) {
            if (port < 0 || port > 65535) {
                throw new IllegalArgumentException("port must be in [0, 65535], was " + port);
            }
            this.port = port;
            return this;
        }

        /** Model id served ({@code /v1/models}) and echoed when a request names none. */
        public Options model(String model) {
            this.model = Objects.requireNonNull(model);
            return this;
        }

        /** KV-cache capacity in tokens (default 150,000). */
        public Options cacheTokens(long tokens) {
            if (tokens < EngineConfig.BLOCK_TOKENS) {
                throw new IllegalArgumentException(
                        "cacheTokens must be at least one block (" + EngineConfig.BLOCK_TOKENS + "), was " + tokens);
            }
            this.cacheTokens = tokens;
            return this;
        }

        /** How much faster than the modelled GPU the replica runs (default 20; 1 is realistic). */
        public Options speedup(double speedup) {
            if (!(speedup > 0) || Double.isInfinite(speedup)) {
                throw new IllegalArgumentException("speedup must be positive and finite, was " + speedup);
            }
            this.speedup = speedup;
            return this;
        }

        /** Completion length when a request gives no {@code max_tokens} (default 64). */
        public Options outputTokens(int tokens) {
            if (tokens < 1) {
                throw new IllegalArgumentException("outputTokens must be at least 1, was " + tokens);
            }
            this.outputTokens = tokens;
            return this;
        }

        /** Fault shown from the start (default {@link Fault#NONE}). */
        public Options fault(Fault fault) {
            this.fault = Objects.requireNonNull(fault);
            return this;
        }

        /** vLLM {@code max_num_seqs} (default 256). */
        public Options maxNumSeqs(int n) {
            if (n < 1) {
                throw new IllegalArgumentException("maxNumSeqs must be at least 1, was " + n);
            }
            this.maxNumSeqs = n;
            return this;
        }

        /** vLLM {@code max_num_batched_tokens} (default 2048). */
        public Options maxBatchedTokens(int n) {
            if (n < 1) {
                throw new IllegalArgumentException("maxBatchedTokens must be at least 1, was " + n);
            }
            this.maxBatchedTokens = n;
            return this;
        }

        /** How much slower {@link Fault#SLOW} makes a request (default 10). */
        public Options slowFactor(double factor) {
            if (!(factor >= 1) || Double.isInfinite(factor)) {
                throw new IllegalArgumentException("slowFactor must be at least 1, was " + factor);
            }
            this.slowFactor = factor;
            return this;
        }

        public String name() {
            return name;
        }

        public String host() {
            return host;
        }

        public int port() {
            return port;
        }

        public String model() {
            return model;
        }

        public long cacheTokens() {
            return cacheTokens;
        }

        public double speedup() {
            return speedup;
        }

        public int outputTokens() {
            return outputTokens;
        }

        public Fault fault() {
            return fault;
        }

        public int maxNumSeqs() {
            return maxNumSeqs;
        }

        public int maxBatchedTokens() {
            return maxBatchedTokens;
        }

        public double slowFactor() {
            return slowFactor;
        }
    }
}
