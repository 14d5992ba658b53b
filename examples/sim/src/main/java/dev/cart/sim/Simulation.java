package dev.cart.sim;

import dev.cart.core.CacheFeedback;
import dev.cart.core.LearnMode;
import dev.cart.core.Lease;
import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.PromptKey;
import dev.cart.core.Reason;
import dev.cart.core.ReplicaSpec;
import dev.cart.core.RouteDecision;
import dev.cart.core.RouteRequest;
import dev.cart.core.Router;
import dev.cart.core.ServedUsage;
import dev.cart.core.spi.Replica;
import dev.cart.core.spi.RoutingListener;
import dev.cart.core.spi.RoutingPolicy;
import dev.cart.core.spi.RoutingPolicyProvider;
import dev.cart.policy.PredictedTtftPolicy;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.PriorityQueue;
import java.util.SplittableRandom;
import java.util.function.Supplier;

/**
 * Runs a workload through the real {@link Router} over a cluster of simulated replicas, on a virtual
 * clock: a discrete-event simulation, fast and deterministic for a given seed.
 *
 * <p>Design: two kinds of events, ordered by time and then by creation (so ties resolve the same way on
 * every run): a request arriving, and a replica's engine step ending. A request is routed when it is sent
 * (the virtual clock is the router's clock, the tree's clock and the replica set's clock, the router's
 * randomness is seeded, and eviction passes are off), its lease taken, and it is queued on the chosen
 * replica's {@link Engine}; an idle engine starts a step at once, a busy one picks it up at its next
 * step, as vLLM does. When the engine samples the request's first token the lease hears
 * {@code firstToken()} (unless so configured), and when it reports the request finished, the lease is
 * marked succeeded (with the replica's usage, if so configured) and closed; then, if so configured, the
 * host learns the answer: it records the key of the conversation followed by the reply the replica
 * generated, as the proxy does ({@code cache.learn_answer}). Requests of one session are sent in order,
 * never two at once: a turn that arrives while the previous one is still running waits for it. Arrivals
 * are open-loop (each request's own arrival time) or closed-loop (N clients, each sending its next request
 * when its previous one finished).
 *
 * <p>The router's keys are made as the proxy makes them, in characters or in tokens
 * ({@link Builder#tokenKeys}); its tree takes the keys' format. A <em>single-depth</em> router
 * ({@link Builder#singleDepth}) sees only the start of each key, up to its first message boundary, for
 * routing and for learning: one route per request at a fixed point, the alternative to learning at every
 * message boundary.
 *
 * <p>A fresh cluster, tree and router are built for every run. Not thread-safe; one run per instance at
 * a time.
 */
public final class Simulation {

    private final int replicas;
    private final EngineConfig engine;
    private final String policyName;
    private final Supplier<RoutingPolicy> policy;
    private final long seed;
    private final int closedClients;
    private final int maxLoad;
    private final LearnMode learn;
    private final boolean feedback;
    private final boolean reportUsage;
    private final Probe probe;
    private final boolean signalFirstToken;
    private final boolean deferDiverted;
    private final boolean learnAnswers;
    private final boolean singleDepth;
    private final PreparedWorkload.Options prepare;
    /** Per replica, the models it serves (empty, or no entry: any model). */
    private final List<List<String>> replicaModels;

    private final double[] slowdowns;
    private final int slowReplica;
    private final double slowFactor;
    private final Instances.ScaleOut scaleOut;
    private final boolean precise;
    private final int restartReplica;

    /**
     * Watches a run from inside, for diagnostics: every routing decision with the state of every replica
     * just before the request is queued, and every first token. Called on the simulation's thread.
     */
    interface Probe {
        /** A request was routed; {@code state} is each replica's state before it was queued. */
        default void dispatched(long nanos, int request, RouteDecision decision, int replica, ReplicaState[] state) {}

        /** A request got its first token. */
        default void firstToken(long nanos, int request, int replica, int cachedTokens, long ttftNanos) {}
    }

    /**
     * One replica as the probe sees it: the router's in-flight count, the engine's waiting and running
     * requests and its pending prefill (prompt tokens not yet computed by requests that have no first token),
     * and the pending prefill the routers count there ({@code Router.pendingPrefill}, in key units).
     */
    record ReplicaState(int inFlight, int waiting, int running, long pendingPrefill, long routerPendingPrefill) {
        @Override
        public String toString() {
            return inFlight + "/" + waiting + "/" + running + "/" + pendingPrefill;
        }
    }

    private Simulation(Builder b) {
        this.replicas = b.replicas;
        this.engine = b.engine;
        this.policyName = b.policyName;
        this.policy = b.policy;
        this.seed = b.seed;
        this.closedClients = b.closedClients;
        this.maxLoad = b.maxLoad;
        this.learn = b.learn;
        this.feedback = b.feedback;
        this.reportUsage = b.reportUsage;
        this.probe = b.probe;
        this.signalFirstToken = b.signalFirstToken;
        this.deferDiverted = b.deferDiverted;
        this.learnAnswers = b.learnAnswers;
        this.singleDepth = b.singleDepth;
        this.prepare = b.prepare;
        this.replicaModels = b.replicaModels;
        this.slowdowns = b.slowdowns;
        this.slowReplica = b.slowReplica;
        this.slowFactor = b.slowFactor;
        this.scaleOut = b.scaleOut;
        this.precise = b.precise;
        this.restartReplica = b.restartReplica;
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Runs {@code workload} on a fresh cluster. */
    public RunResult run(Workload workload) {
        return run(PreparedWorkload.of(workload, engine, prepare));
    }

    RunResult run(PreparedWorkload w) {
        return new Run(w).execute();
    }

    EngineConfig engineConfig() {
        return engine;
    }

    private static final int ARRIVAL = 0;
    private static final int STEP_END = 1;

    private static final class Event implements Comparable<Event> {
        final long time;
        final long seq;
        final int kind;
        final int index;

        Event(long time, long seq, int kind, int index) {
            this.time = time;
            this.seq = seq;
            this.kind = kind;
            this.index = index;
        }

        @Override
        public int compareTo(Event o) {
            int c = Long.compare(time, o.time);
            return c != 0 ? c : Long.compare(seq, o.seq);
        }
    }

    /** One run: all its state, thrown away afterwards. */
    private final class Run {
        final PreparedWorkload w;
        final VirtualClock clock = new VirtualClock();
        final PriorityQueue<Event> events = new PriorityQueue<>();
        final ManagedReplicaSet set;
        final List<ManagedReplicaSet.Member> members;
        final Instances instances;
        final Engine[] engines;
        final boolean[] stepping;
        final boolean[] sessionBusy;
        final List<ArrayDeque<Integer>> sessionQueue;
        final int n;
        long seq;
        int nextClosed;

        final long[] ttft;
        int ttftCount;
        final long[] sent;
        final long[] finished;
        final long[] firstToken;
        final int[] replicaOf;
        final int[] cachedOf;
        final int[] routed;
        final int[] peak;
        final Map<Reason, Integer> reasons = new EnumMap<>(Reason.class);
        final FeedbackCounter feedbackCounter = new FeedbackCounter();
        /** Precise mode's engines, feeds and index; null in the approximate mode. */
        final PreciseCluster preciseCluster;

        boolean restartPending;
        int completed;
        int dispatched;
        int noReplica;
        int refused;
        long promptTokens;
        long cachedTokens;
        long outputTokens;
        long firstArrival = Long.MAX_VALUE;
        long lastFinish;

        Run(PreparedWorkload w) {
            this.w = w;
            this.n = w.size();
            ManagedReplicaSet[] sets = new ManagedReplicaSet[scaleOut.instances()];
            for (int k = 0; k < sets.length; k++) { // one per router instance (its own counts), ids alike
                ManagedReplicaSet.Builder sb = ManagedReplicaSet.builder().clock(clock);
                for (int i = 0; i < replicas; i++) {
                    sb.add(new ReplicaSpec(
                            "replica-" + i, maxLoad, 0, i < replicaModels.size() ? replicaModels.get(i) : List.of()));
                }
                sets[k] = sb.build();
            }
            set = sets[0];
            members = set.replicas();
            preciseCluster = precise ? new PreciseCluster(w, replicas, clock) : null;
            RoutingListener listener = preciseCluster == null
                    ? feedbackCounter
                    : new BothListeners(feedbackCounter, preciseCluster.leaseListener());
            instances = new Instances(scaleOut, clock, sets, seed, (k, rb) -> {
                SplittableRandom rnd = new SplittableRandom(k == 0 ? seed : seed + 7_919L * k);
                return rb.replicas(sets[k])
                        .policy(policy.get())
                        .random(() -> rnd)
                        .clock(clock)
                        .ticker(clock::nanos)
                        .evictionInterval(Duration.ZERO)
                        .learn(learn)
                        .feedback(feedback)
                        .deferDivertedRoutes(deferDiverted)
                        .firstTokenReports(signalFirstToken)
                        .keyFormat(w.keyUnit(), RequestKeys.blockSize(w.keyUnit()))
                        .listener(listener)
                        .build();
            });
            engines = new Engine[replicas];
            for (int i = 0; i < replicas; i++) {
                engines[i] = new Engine(engine);
                if (preciseCluster != null) {
                    preciseCluster.attach(i, engines[i]);
                }
                if (slowdowns != null) {
                    engines[i].slowdown(slowdowns[i]);
                }
            }
            stepping = new boolean[replicas];
            sessionBusy = new boolean[w.sessions];
            sessionQueue = new ArrayList<>(java.util.Collections.nCopies(w.sessions, null));
            ttft = new long[n];
            sent = new long[n];
            finished = new long[n];
            firstToken = new long[n];
            replicaOf = new int[n];
            cachedOf = new int[n];
            java.util.Arrays.fill(sent, -1);
            java.util.Arrays.fill(finished, -1);
            java.util.Arrays.fill(firstToken, -1);
            java.util.Arrays.fill(replicaOf, -1);
            routed = new int[replicas];
            peak = new int[replicas];
        }

        RunResult execute() {
            if (closedClients > 0) {
                for (nextClosed = 0; nextClosed < Math.min(closedClients, n); nextClosed++) {
                    push(0, ARRIVAL, nextClosed);
                }
            } else {
                for (int i = 0; i < n; i++) {
                    push(w.arrivals[i], ARRIVAL, i);
                }
            }
            Event e;
            while ((e = events.poll()) != null) {
                clock.set(e.time);
                if (e.kind == ARRIVAL) {
                    arrive(e.index, e.time);
                } else {
                    stepEnded(e.index, e.time);
                }
            }
            instances.close();
            if (instances.totalInFlight() != 0) {
                throw new IllegalStateException("leases left open after the run: " + instances.totalInFlight());
            }
            for (int k = 0; k < replicas; k++) {
                if (instances.pendingPrefill(k) != 0) {
                    throw new IllegalStateException("pending prefill left after the run on "
                            + members.get(k).id() + ": " + instances.pendingPrefill(k));
                }
            }
            long[] busy = new long[replicas];
            long pre = 0;
            for (int i = 0; i < replicas; i++) {
                busy[i] = engines[i].busyNanos();
                pre += engines[i].preemptions();
            }
            return new RunResult(
                    w.workload.name(),
                    policyName,
                    n,
                    completed,
                    noReplica,
                    refused,
                    promptTokens,
                    cachedTokens,
                    w.idealHitRatio(),
                    java.util.Arrays.copyOf(ttft, ttftCount),
                    firstArrival == Long.MAX_VALUE ? 0 : firstArrival,
                    lastFinish,
                    outputTokens,
                    routed,
                    peak,
                    busy,
                    pre,
                    reasons,
                    new RunResult.Trace(sent, firstToken, finished, replicaOf, cachedOf),
                    feedbackCounter.stats(),
                    instances.router(0).policy() instanceof PredictedTtftPolicy p ? p.estimateErrorP50() : Double.NaN);
        }

        void push(long time, int kind, int index) {
            events.add(new Event(time, seq++, kind, index));
        }

        void arrive(int i, long t) {
            int s = w.session[i];
            if (s >= 0) {
                if (sessionBusy[s]) {
                    if (sessionQueue.get(s) == null) {
                        sessionQueue.set(s, new ArrayDeque<>());
                    }
                    sessionQueue.get(s).addLast(i);
                    return;
                }
                sessionBusy[s] = true;
            }
            dispatch(i, t);
        }

        void done(int i, long t) {
            int s = w.session[i];
            if (s >= 0) {
                ArrayDeque<Integer> q = sessionQueue.get(s);
                if (q != null && !q.isEmpty()) {
                    dispatch(q.pollFirst(), t);
                } else {
                    sessionBusy[s] = false;
                }
            }
            if (closedClients > 0 && nextClosed < n) {
                push(t, ARRIVAL, nextClosed++);
            }
        }

        void dispatch(int i, long t) {
            firstArrival = Math.min(firstArrival, t);
            sent[i] = t;
            ++dispatched;
            if (slowReplica >= 0 && dispatched == n / 2) {
                engines[slowReplica].slowdown(slowFactor); // another tenant arrives on its GPU
            }
            if (restartReplica >= 0 && dispatched == n / 2) {
                restartPending = true; // the engine restarts between two of its steps
                if (!stepping[restartReplica]) {
                    restartEngine();
                }
            }
            RouteRequest request = RouteRequest.of(routed(w.keys[i])).withModel(w.models[i]);
            dev.cart.kvevents.PreciseMatch pm = null;
            if (preciseCluster != null) {
                pm = preciseCluster.lookup(i);
                request = request.withConfirmed(pm.view(request.key()));
            }
            RouteDecision d = instances.choose(t, request);
            if (pm != null) {
                preciseCluster.routed(d, pm);
            }
            reasons.merge(d.reason(), 1, Integer::sum);
            if (!d.routed()) {
                noReplica++;
                done(i, t);
                return;
            }
            int rep = indexOf(d.replica());
            routed[rep]++;
            replicaOf[i] = rep;
            peak[rep] = Math.max(peak[rep], instances.inFlight(rep));
            if (probe != null) {
                ReplicaState[] st = new ReplicaState[replicas];
                for (int k = 0; k < replicas; k++) {
                    st[k] = new ReplicaState(
                            members.get(k).inFlight(),
                            engines[k].waitingCount(),
                            engines[k].runningCount(),
                            engines[k].pendingPrefillTokens(),
                            instances.pendingPrefill(k));
                }
                probe.dispatched(t, i, d, rep, st);
            }
            EngineRequest er = new EngineRequest(
                    w.blocks[i], w.promptTokens[i], w.maxTokens[i], new Completion(i, d.lease(), d.replica()));
            if (preciseCluster != null) {
                preciseCluster.describe(i, er);
            }
            if (engines[rep].submit(er, t) && !stepping[rep]) {
                startStep(rep, t);
            }
        }

        /** What the router sees of a key: all of it, or with a single-depth router its first message. */
        PromptKey routed(PromptKey key) {
            return singleDepth && key.boundaryCount() > 0 ? key.prefix(key.boundary(0)) : key;
        }

        int indexOf(Replica r) {
            return instances.indexOf(r);
        }

        void startStep(int rep, long t) {
            long d = engines[rep].planStep(t);
            if (d < 0) {
                stepping[rep] = false;
                return;
            }
            stepping[rep] = true;
            push(t + d, STEP_END, rep);
        }

        void restartEngine() {
            restartPending = false;
            engines[restartReplica].restart();
            if (preciseCluster != null) {
                preciseCluster.restarted(restartReplica);
            }
        }

        void stepEnded(int rep, long t) {
            engines[rep].completeStep(t);
            if (restartPending && rep == restartReplica) {
                restartEngine();
            }
            if (engines[rep].hasWork()) {
                startStep(rep, t);
            } else {
                stepping[rep] = false;
            }
        }

        /** Closes the request's lease when the engine is done with it. */
        final class Completion implements EngineRequest.Sink {
            final int index;
            final Lease lease;
            final Replica replica;

            Completion(int index, Lease lease, Replica replica) {
                this.index = index;
                this.lease = lease;
                this.replica = replica;
            }

            @Override
            public void onToken(EngineRequest r, long nanos) {
                if (r.generated() != 1) {
                    return;
                }
                if (signalFirstToken) {
                    lease.firstToken();
                    instances.changed(nanos);
                }
                if (probe != null) {
                    probe.firstToken(nanos, index, replicaOf[index], r.cachedTokens(), r.ttftNanos());
                }
            }

            @Override
            public void onFinished(EngineRequest r, long nanos) {
                try (lease) {
                    if (reportUsage) {
                        lease.succeeded(new ServedUsage(r.promptTokens, r.cachedTokens()));
                    } else {
                        lease.succeeded();
                    }
                }
                instances.changed(nanos);
                completed++;
                promptTokens += r.promptTokens;
                cachedTokens += r.cachedTokens();
                outputTokens += r.generated();
                ttft[ttftCount++] = r.ttftNanos();
                finished[index] = nanos;
                firstToken[index] = r.firstTokenNanos;
                cachedOf[index] = r.cachedTokens();
                lastFinish = Math.max(lastFinish, nanos);
                if (learnAnswers && w.answerKeys[index] != null) {
                    // after the answer has reached the client, as the proxy does
                    instances.routerOf(replica).record(routed(w.answerKeys[index]), replica);
                }
                done(index, nanos);
            }

            @Override
            public void onRejected(EngineRequest r, String message) {
                try (lease) {
                    lease.succeeded(); // a 400 is the client's fault, not the replica's
                }
                refused++;
                done(index, r.submitNanos);
            }
        }
    }

    /** Sums the router's predictions against what the replicas delivered ({@code onCacheFeedback}). */
    static final class FeedbackCounter implements RoutingListener {
        private long reports;
        private long predicted;
        private long delivered;
        private long prompt;
        private long overpredicted;
        private long stale;
        private long inconclusive;

        @Override
        public void onCacheFeedback(RouteDecision decision, CacheFeedback f) {
            reports++;
            predicted += f.predictedTokens();
            delivered += f.deliveredTokens();
            prompt += f.promptTokens();
            if (RunResult.Feedback.overpredicted(f.predictedTokens(), f.deliveredTokens())) {
                overpredicted++;
            }
            if (f.stale()) {
                stale++;
            }
            if (f.inconclusive()) {
                inconclusive++;
            }
        }

        RunResult.Feedback stats() {
            return new RunResult.Feedback(reports, predicted, delivered, prompt, overpredicted, stale, inconclusive);
        }
    }

    /** Configures a {@link Simulation}. */
    public static final class Builder {
        private int replicas = 4;
        private EngineConfig engine = EngineConfig.defaults();
        private String policyName;
        private Supplier<RoutingPolicy> policy;
        private long seed = 1;
        private int closedClients;
        private int maxLoad = ReplicaSpec.DEFAULT_MAX_LOAD;
        private LearnMode learn = LearnMode.ON_ROUTE;
        private boolean feedback = true;
        private boolean reportUsage;
        private Probe probe;
        private boolean signalFirstToken = true;
        private boolean deferDiverted = true;
        private boolean learnAnswers;
        private boolean singleDepth;
        private PreparedWorkload.Options prepare = PreparedWorkload.Options.defaults();
        private List<List<String>> replicaModels = List.of();
        private double[] slowdowns;
        private int slowReplica = -1;
        private double slowFactor = 1.0;
        private Instances.ScaleOut scaleOut = Instances.ScaleOut.SINGLE;
        private boolean precise;
        private int restartReplica = -1;

        private Builder() {}

        /**
         * Precise mode (default off): the replicas' engines report their KV-cache events in vLLM's format to
         * a {@code cart-kvevents} index, and every request carries the index's match of its engine tokens
         * ({@code RouteRequest.withConfirmed}), as a proxy in precise mode does. Needs the tokenizing replica
         * ({@link #replicaTokenizer}).
         */
        public Builder precise(boolean enabled) {
            this.precise = enabled;
            return this;
        }

        /**
         * Restarts replica {@code index}'s engine once half the requests were sent (between two of its steps):
         * its cache is empty again and its running requests start over; in precise mode its events say so by
         * their sequence starting again. None by default.
         */
        public Builder restartMidRun(int index) {
            this.restartReplica = index;
            return this;
        }

        /**
         * The models each replica serves, by index (default: every replica serves any model); a replica
         * without an entry, or with an empty list, serves any. A request naming a model
         * ({@link WorkloadRequest#withModel}) is routed among the replicas serving it only, as the proxy
         * routes a pool of several models; none serving it counts as no replica.
         */
        public Builder replicaModels(List<List<String>> models) {
            this.replicaModels = models.stream().map(List::copyOf).toList();
            return this;
        }

        /**
         * Each replica's step time as a multiple of the model's (default all 1): {@code 1, 1, 2, 2} is a pool
         * whose first two replicas are twice as fast as the other two. One factor per replica.
         */
        public Builder slowdowns(double... factors) {
            this.slowdowns = factors.clone();
            return this;
        }

        /**
         * Makes replica {@code index} {@code factor} times slower once half of the run's requests have been
         * sent (another tenant starting on its GPU); none by default.
         */
        public Builder slowdownMidRun(int index, double factor) {
            this.slowReplica = index;
            this.slowFactor = factor;
            return this;
        }

        /**
         * Several router instances behind a random load balancer, sharing routes and load or not
         * ({@link Instances}); one instance (the default) is the single router.
         */
        Builder scaleOut(Instances.ScaleOut spec) {
            this.scaleOut = Objects.requireNonNull(spec);
            return this;
        }

        /**
         * Whether the host learns the answer (default off): when a chat request completes, it records for the
         * replica that served it the key of the conversation followed by the reply, which the conversation's
         * next turn starts with (the proxy's {@code cache.learn_answer}, on there by default).
         */
        public Builder learnAnswers(boolean enabled) {
            this.learnAnswers = enabled;
            return this;
        }

        /**
         * A single-depth router (default off): it sees each key only up to its first message boundary (the
         * end of the system prompt, say; a key without boundaries whole), for routing and learning alike, so
         * it learns one route per request at a fixed point instead of one at every message boundary.
         */
        public Builder singleDepth(boolean enabled) {
            this.singleDepth = enabled;
            return this;
        }

        /**
         * Whether the router's keys are made in token mode ({@code cl100k_base}, 16-token blocks, as
         * {@code cart-extract}'s token mode makes them) instead of characters (default off). For
         * {@link #run(Workload)}; a prepared workload carries its own keys.
         */
        public Builder tokenKeys(boolean enabled) {
            this.prepare = prepare.withKeyUnit(enabled ? PromptKey.Unit.TOKENS : PromptKey.Unit.CHARS);
            return this;
        }

        /**
         * Whether the replica counts real tokens ({@code cl100k_base} with Llama-3's template markers as
         * special tokens) instead of four characters per token (default off). For {@link #run(Workload)}.
         */
        public Builder replicaTokenizer(boolean enabled) {
            this.prepare = prepare.withTokenizer(enabled);
            return this;
        }

        /**
         * Whether the replica caches the blocks of the tokens it generates, as vLLM V1 does (default on); off,
         * only prompt blocks are cached. For {@link #run(Workload)}.
         */
        public Builder cacheGeneratedTokens(boolean enabled) {
            this.prepare = prepare.withCacheGenerated(enabled);
            return this;
        }

        /**
         * Whether a request's first token is reported to its lease ({@code Lease.firstToken()}), as a host
         * does when the first chunk of a streamed answer arrives, and the router is told so
         * ({@code Router.Builder.firstTokenReports}): it counts each replica's pending prefill from the first
         * request (default on). Off, as a host that reports nothing: the router counts no pending prefill,
         * and a diverted request's route is recorded when it finishes.
         */
        public Builder signalFirstToken(boolean enabled) {
            this.signalFirstToken = enabled;
            return this;
        }

        /** Watches the run (diagnostics); none by default. */
        Builder probe(Probe probe) {
            this.probe = probe;
            return this;
        }

        /** When the router records routed prefixes (default {@link LearnMode#ON_ROUTE}). */
        public Builder learn(LearnMode mode) {
            this.learn = Objects.requireNonNull(mode);
            return this;
        }

        /** Whether the router drops routes the replica's reported cache hits contradict (default on). */
        public Builder feedback(boolean enabled) {
            this.feedback = enabled;
            return this;
        }

        /**
         * Whether a finished request hands the replica's usage ({@code prompt_tokens}, {@code cached_tokens})
         * to its lease ({@code succeeded(usage)}), as a host reading vLLM's usage would, so the router can
         * compare its prediction (the proxy does this by default); off (the default here) the lease hears
         * {@code succeeded()}.
         */
        public Builder reportUsage(boolean enabled) {
            this.reportUsage = enabled;
            return this;
        }

        /** The router's {@code Router.Builder.deferDivertedRoutes} (default on, as the router's default). */
        public Builder deferDivertedRoutes(boolean enabled) {
            this.deferDiverted = enabled;
            return this;
        }

        /** Number of replicas (default 4). */
        public Builder replicas(int n) {
            if (n < 1) {
                throw new IllegalArgumentException("replicas must be at least 1, was " + n);
            }
            this.replicas = n;
            return this;
        }

        /** KV-cache capacity of each replica in tokens (default 150,000). */
        public Builder cacheTokens(long tokens) {
            this.engine = engine.withCacheTokens(tokens);
            return this;
        }

        Builder engine(EngineConfig config) {
            this.engine = Objects.requireNonNull(config);
            return this;
        }

        /** The policy registered as {@code name}, created fresh for each run with {@code settings}. */
        public Builder policy(String name, Map<String, ?> settings) {
            Map<String, ?> copy = Map.copyOf(settings);
            RoutingPolicyProvider.named(name).create(copy); // fail now on a bad name or setting
            return policy(name, () -> RoutingPolicyProvider.named(name).create(copy));
        }

        /** A policy made by {@code factory} for each run, reported as {@code label}. */
        public Builder policy(String label, Supplier<RoutingPolicy> factory) {
            this.policyName = Objects.requireNonNull(label);
            this.policy = Objects.requireNonNull(factory);
            return this;
        }

        /** Seed of the router's randomness (default 1). */
        public Builder seed(long seed) {
            this.seed = seed;
            return this;
        }

        /** Closed loop with {@code clients} concurrent clients; 0 (the default) uses the arrival times. */
        public Builder closedLoop(int clients) {
            if (clients < 0) {
                throw new IllegalArgumentException("clients must not be negative, was " + clients);
            }
            this.closedClients = clients;
            return this;
        }

        /** Each replica's {@code max_load} in the router (default 256). */
        public Builder maxLoad(int maxLoad) {
            this.maxLoad = maxLoad;
            return this;
        }

        public Simulation build() {
            if (policy == null) {
                throw new IllegalStateException("a simulation needs a routing policy");
            }
            if (slowdowns != null && slowdowns.length != replicas) {
                throw new IllegalStateException(
                        "slowdowns gives " + slowdowns.length + " factors for " + replicas + " replicas");
            }
            if (slowReplica >= replicas) {
                throw new IllegalStateException("no replica " + slowReplica + " to slow down");
            }
            if (restartReplica >= replicas) {
                throw new IllegalStateException("no replica " + restartReplica + " to restart");
            }
            return new Simulation(this);
        }
    }
}
