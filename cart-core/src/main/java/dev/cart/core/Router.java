package dev.cart.core;

import dev.cart.core.internal.Checks;
import dev.cart.core.internal.PrefixTree;
import dev.cart.core.internal.RouterAccess;
import dev.cart.core.spi.Choice;
import dev.cart.core.spi.LeaseCompletion;
import dev.cart.core.spi.Match;
import dev.cart.core.spi.Replica;
import dev.cart.core.spi.ReplicaSet;
import dev.cart.core.spi.RoutingContext;
import dev.cart.core.spi.RoutingListener;
import dev.cart.core.spi.RoutingPolicy;
import dev.cart.core.spi.RoutingPolicyProvider;
import dev.cart.core.spi.Scheduler;
import dev.cart.core.sync.RemoteApply;
import dev.cart.core.sync.RemoteApplyStats;
import dev.cart.core.sync.RemoteLoad;
import dev.cart.core.sync.RouteEvent;
import dev.cart.core.sync.RouteSync;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import java.util.random.RandomGenerator;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Chooses a replica for each request: filters the pool to usable candidates, asks the policy, takes the
 * replica's in-flight slot, records the prefix, and hands back a {@link RouteDecision} whose
 * {@link Lease} gives the slot back.
 *
 * <pre>{@code
 * Router router = Router.builder()
 *         .replicas(ManagedReplicaSet.builder().add("http://node1:8000").add("http://node2:8000").build())
 *         .policy("cache_aware")
 *         .build();
 * RouteDecision d = router.choose(RouteRequest.of(PromptKey.ofText(prompt, 64)));
 * }</pre>
 *
 * <p>Concurrency: {@link #choose} is thread-safe, lock-free with respect to the tree, and does no I/O.
 * If a chosen replica fills up between the policy's look and the slot acquisition, the router asks the
 * policy again without it. Maintenance runs on the injected {@link Scheduler}.
 *
 * <p>Several instances: with a {@link RouteSync} ({@link Builder#sync}) the router publishes every route
 * it records, every branch usage feedback makes it forget, every replica it forgets and every reset; the
 * transport hands the other instances' events to {@link #applyRemote}, which applies them through the
 * tree's ordinary writer path, marked as learned elsewhere.
 */
public final class Router implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(Router.class);

    static {
        RouterAccess.install((builder, tree) -> builder.tree(tree));
    }

    private static final Duration DEFAULT_EVICTION_INTERVAL = Duration.ofSeconds(60);

    /**
     * The report, of a replica that has never reported a cached token, that shows it does not report them:
     * its third shortfall with nothing delivered that requests in prefill do not explain
     * ({@link CacheFeedback.Verdict#CACHE_UNREPORTED}).
     */
    static final int CACHE_UNREPORTED_AFTER = 3;

    private final ReplicaSet replicas;
    private final RoutingPolicy policy;
    private final PrefixTree tree;
    private final RoutingListener listener;
    private final Supplier<RandomGenerator> random;
    private final Clock clock;
    private final @Nullable Scheduler scheduler;
    private final boolean ownsScheduler;
    private final Duration evictionInterval;
    private final int dailyResetHourUtc;
    private final LearnMode learnMode;
    private final boolean feedback;
    private final PromptKey.Unit keyUnit;
    private final int keyBlockSize;
    private final boolean deferDiverted;
    private final RouteSync sync;
    private final boolean publishes;
    private final RemoteRoutes remote;
    /** How long a learned route shared once needs no new event ({@link RouteSync#repeatInterval()}). */
    private final long repeatMillis;

    private final RemoteLoad remoteLoad;
    /** What the router keeps per replica: pending prefill, requests in prefill (shared by {@code routesOf}). */
    private final ReplicaLedger ledger;
    /** Whether requests in prefill are kept per replica, for usage feedback (only where it can act). */
    private final boolean tracksInPrefill;

    private volatile boolean syncFailureLogged;
    private volatile boolean observationFailureLogged;
    private final LongSupplier ticker;
    /** Set by the first {@link Lease#firstToken()} report; from then on routed prefill is counted. */
    private volatile boolean tracksPrefill;

    private volatile boolean closed;
    /** Who hears that a lease gave its slot back ({@link #addSlotListener}); cart-flow's admission queue. */
    private final SlotListeners slots = new SlotListeners();

    private volatile Scheduler.@Nullable Task evictionTask;
    private volatile Scheduler.@Nullable Task resetTask;

    private Router(Builder b, ReplicaSet replicas, RoutingPolicy policy) {
        this.replicas = replicas;
        this.policy = policy;
        PrefixTree given = b.tree;
        this.tree = given != null ? given : b.treeSettings.clock(b.clock).build();
        this.listener = new SafeListener(b.listener);
        this.random = b.random;
        this.clock = b.clock;
        this.ticker = b.ticker;
        this.evictionInterval = b.evictionInterval;
        this.dailyResetHourUtc = b.dailyResetHourUtc;
        this.learnMode = b.learnMode;
        this.feedback = b.feedback;
        this.keyUnit = b.keyUnit;
        this.keyBlockSize = b.keyBlockSize;
        this.deferDiverted = b.deferDiverted;
        this.tracksPrefill = b.firstTokenReports;
        this.sync = b.sync;
        this.publishes = b.sync != RouteSync.NONE;
        this.remoteLoad = b.remoteLoad;
        this.repeatMillis = sync.repeatInterval().toMillis();
        ReplicaLedger shared = b.ledger;
        this.ledger = shared != null ? shared : new ReplicaLedger();
        this.tracksInPrefill = feedback && policy.usesPrefixTree();
        remoteLoad.localPendingPrefill(ledger::pendingPrefill);
        this.remote = new RemoteRoutes(
                tree, replicas, keyUnit, keyBlockSize, sync.originId(), policy.usesPrefixTree(), listener);
        boolean needsScheduler = !evictionInterval.isZero() || dailyResetHourUtc >= 0;
        Scheduler injected = b.scheduler;
        if (injected != null) {
            this.scheduler = injected;
            this.ownsScheduler = false;
        } else if (needsScheduler) {
            this.scheduler = Scheduler.daemon("cart-maintenance");
            this.ownsScheduler = true;
        } else {
            this.scheduler = null;
            this.ownsScheduler = false;
        }
        if (!evictionInterval.isZero()) {
            scheduleEviction();
        }
        if (dailyResetHourUtc >= 0) {
            scheduleReset();
        }
    }

    /**
     * A builder; only the replica set and the policy are required.
     *
     * @return a new builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Chooses a replica for {@code request} and takes one in-flight slot on it. Never throws for lack of
     * replicas: that is a decision with no replica and reason {@link Reason#MODEL_NOT_SERVED} when no
     * replica of the pool serves the request's model, {@link Reason#NO_REPLICA} otherwise. The candidates
     * are the replicas serving the request's model (all, for a request without one) that are available,
     * below their cap and not excluded; the policy sees only them.
     *
     * @throws IllegalStateException if the policy chose a replica that is not a candidate (breaking
     *     {@link RoutingPolicy}'s contract); no slot is taken then
     * @param request the request: its key, model, exclusions
     * @return the decision; when {@link RouteDecision#routed()}, the caller owns its lease and must close it
     */
    public RouteDecision choose(RouteRequest request) {
        long t0 = ticker.getAsLong();
        List<? extends Replica> all = replicas.replicas();
        List<Replica> candidates = new ArrayList<>(all.size());
        String model = request.model();
        boolean served = model == null;
        for (int i = 0; i < all.size(); i++) {
            Replica r = all.get(i);
            if (model != null) {
                if (!r.serves(model)) {
                    continue;
                }
                served = true;
            }
            if (!request.isExcluded(r) && r.isAvailable() && r.inFlight() < r.maxLoad()) {
                candidates.add(
                        remoteLoad == RemoteLoad.NONE
                                ? r
                                : new CombinedLoadReplica(
                                        r, remoteLoad.inFlight(r.id()), remoteLoad.pendingPrefill(r.id())));
            }
        }
        if (!served) {
            return decided(null, null, Reason.MODEL_NOT_SERVED, 0, 0, 0, null, null, false, null, null, request, t0);
        }
        PromptKey key = request.key();
        RouterContext ctx = new RouterContext(request, candidates, fits(key) ? tree : null, random.get(), ledger);
        while (!candidates.isEmpty()) {
            Choice choice = policy.choose(ctx);
            Replica view = choice.replica();
            if (!ctx.isCandidate(view)) {
                throw new IllegalStateException("policy " + policy.name() + " chose " + view.id()
                        + ", which is not a candidate for this request (excluded on a retry, at its cap, unavailable"
                        + " or not serving the model): a policy must return one of RoutingContext.candidates()."
                        + " Match.holders() names every replica holding the prefix, candidate or not; "
                        + "RoutingContext.candidateHolders() keeps only the candidates");
            }
            Replica chosen = CombinedLoadReplica.unwrap(view);
            Replica.Admission admission = chosen.tryAcquire();
            if (admission != null) {
                return admitted(chosen, admission, choice, ctx, request, all, t0);
            }
            ctx.drop(view); // filled up since the policy looked; ask again without it
        }
        return decided(null, null, Reason.NO_REPLICA, 0, 0, 0, null, null, false, null, null, request, t0);
    }

    /**
     * The chosen replica took the request: record the route (unless held back), count its prefill, and
     * hand out the decision. Should anything here throw, the admission is released before the exception
     * leaves, so no path leaks an in-flight slot.
     */
    private RouteDecision admitted(
            Replica chosen,
            Replica.Admission admission,
            Choice choice,
            RouterContext ctx,
            RouteRequest request,
            List<? extends Replica> pool,
            long t0) {
        PromptKey key = request.key();
        int counted = 0;
        ReplicaLedger.Account account = null;
        InPrefill.Entry entry = null;
        try {
            int matched = choice.matchedLength();
            if (matched == 0 && policy.usesPrefixTree() && key.blockCount() > 0 && fits(key)) {
                matched = ctx.treeMatch().matchedLength(chosen); // what the chosen replica holds on a miss
            }
            boolean inPrefill = tracksInPrefill && key.blockCount() > 0 && fits(key);
            boolean countPrefill = tracksPrefill; // read once: a first token reported meanwhile may set it
            if (inPrefill || countPrefill) {
                account = ledger.account(chosen, pool);
            }
            // in prefill before the route is recorded: a request that matches the route has the entry in its array
            InPrefill.Entry[] ahead = null;
            if (inPrefill && account != null) {
                entry = new InPrefill.Entry(key, matched, account.inPrefill);
                ahead = InPrefill.add(entry);
            }
            // whether the hit followed a route only other instances reported: read before this request's own
            // route makes the entry local, in the same walk when the route is recorded now
            int probe = publishes && choice.reason() == Reason.CACHE_HIT && fits(key)
                    ? choice.matchedLength() / keyBlockSize
                    : 0;
            boolean elsewhere;
            if (learnMode == LearnMode.ON_ROUTE && !deferred(choice.reason())) {
                elsewhere = record(key, chosen, probe);
            } else {
                elsewhere = probe > 0 && tree.learnedElsewhere(key.blocks(), probe, chosen);
            }
            int prefill = Math.max(0, key.length() - matched);
            if (countPrefill && account != null) {
                account.pendingPrefill.addAndGet(prefill);
                counted = prefill;
            }
            remoteLoad.localLoadChanged();
            return decided(
                    chosen,
                    admission,
                    choice.reason(),
                    matched,
                    prefill,
                    counted,
                    account,
                    choice.detail(),
                    elsewhere,
                    entry,
                    ahead,
                    request,
                    t0);
        } catch (RuntimeException | Error e) {
            if (entry != null) {
                InPrefill.done(entry);
            }
            if (counted != 0 && account != null) {
                account.pendingPrefill.addAndGet(-counted);
            }
            admission.release(Outcome.CANCELLED);
            throw e;
        }
    }

    /**
     * {@code d}'s prefill is over (once per lease): its estimate leaves the replica's pending prefill, and
     * a route held back until now is recorded, unless the lease is closing as failed without the replica
     * having answered. {@code reported} is true when the host said the first token came
     * ({@link Lease#firstToken()}) rather than the lease closing: from the first such report on, routed
     * requests count in their replica's pending prefill (a host that never reports first tokens would leave
     * every request counted until it ends, long after its prefill).
     */
    void prefillDone(RouteDecision d, boolean reported, Outcome outcome) {
        if (reported && !tracksPrefill) {
            tracksPrefill = true;
        }
        InPrefill.Entry entry = d.inPrefill();
        if (entry != null) {
            InPrefill.done(entry);
        }
        ReplicaLedger.Account account = d.account();
        if (d.pendingCounted() != 0 && account != null) {
            account.pendingPrefill.addAndGet(-d.pendingCounted());
            remoteLoad.localLoadChanged();
        }
        Replica replica = d.replica();
        if (replica != null
                && learnMode == LearnMode.ON_ROUTE
                && deferred(d.reason())
                && (reported || outcome != Outcome.FAILURE)) {
            record(d.key(), replica);
        }
        if (reported) {
            try {
                policy.onFirstToken(d, ticker.getAsLong() - d.startNanos());
            } catch (RuntimeException e) {
                observationFailed(e);
            }
        }
    }

    private void observationFailed(RuntimeException e) {
        if (!observationFailureLogged) {
            observationFailureLogged = true;
            LOG.error("policy " + policy.name() + " failed to observe a lease (logged once; routing goes on)", e);
        }
    }

    private RouteDecision decided(
            @Nullable Replica r,
            Replica.@Nullable Admission admission,
            Reason reason,
            int matched,
            int prefill,
            int counted,
            ReplicaLedger.@Nullable Account account,
            @Nullable Object detail,
            boolean learnedElsewhere,
            InPrefill.@Nullable Entry inPrefillEntry,
            InPrefill.Entry @Nullable [] aheadInPrefill,
            RouteRequest request,
            long t0) {
        long now = ticker.getAsLong(); // one reading: the decision's end and the request's start
        RouteDecision d = new RouteDecision(
                r,
                admission,
                reason,
                matched,
                prefill,
                counted,
                account,
                detail,
                request,
                now - t0,
                r == null ? 0 : now,
                learnedElsewhere,
                inPrefillEntry,
                aheadInPrefill,
                this);
        listener.onDecision(d);
        return d;
    }

    /**
     * Records that {@code replica} now holds {@code key} (if the policy uses the tree). The router does
     * this itself when a request is routed or served (see {@link LearnMode}); a host calls it to teach the
     * tree a prefix it knows the replica holds, such as a conversation followed by the reply the replica
     * just generated, which the next turn will start with.
     *
     * @param key     the prefix the replica holds; a key of another format than the router's is ignored
     * @param replica a member of the pool (compared by identity)
     */
    public void record(PromptKey key, Replica replica) {
        record(key, replica, 0);
    }

    /**
     * {@link #record(PromptKey, Replica)}, telling whether {@code replica}'s claim on the first
     * {@code probe} blocks (if more than 0) had been learned only from other instances before this route
     * made it local.
     */
    private boolean record(PromptKey key, Replica replica, int probe) {
        if (!policy.usesPrefixTree() || key.blockCount() == 0 || !fits(key)) {
            return false;
        }
        int outcome = tree.insertNoting(key, replica, probe, publishes ? repeatMillis : 0);
        if ((outcome & PrefixTree.SKIPPED) != 0) {
            listener.onInsertSkipped();
        }
        // What the replica was sent is true whether or not maintenance let this tree learn it. A refresh of a
        // route this replica had already used in the current repeat window (a hot route, here or on another
        // instance) was shared in that window: no event, not even built.
        if (publishes && (outcome & PrefixTree.USED_IN_WINDOW) == 0) {
            publish(new RouteEvent.Learned(
                    sync.originId(), clock.millis(), replica.id(), keyUnit, keyBlockSize, key.blocks()));
        }
        return (outcome & PrefixTree.WAS_REMOTE) != 0;
    }

    /**
     * Applies what another router instance learned or forgot ({@link RouteSync}): a route, through the
     * tree's ordinary writer path (skipped and counted like a local insert while maintenance holds the
     * tree), marked as learned elsewhere so eviction drops it before local routes of the same age; a
     * forgotten branch, a removed replica or a reset likewise. Replica ids are resolved against this
     * router's pool; events naming a replica it does not have, events of its own origin, and keys of
     * another format are ignored and counted ({@link #remoteApplyStats()}). Never makes a routing decision
     * wait; call it from the transport's thread. Events applied here are not published again.
     *
     * @return what became of the event
     * @param event an event another instance published
     */
    public RemoteApply applyRemote(RouteEvent event) {
        return remote.apply(Objects.requireNonNull(event, "event"));
    }

    /**
     * Counts of the events given to {@link #applyRemote}, by outcome.
     *
     * @return the counts since the router was built
     */
    public RemoteApplyStats remoteApplyStats() {
        return remote.stats();
    }

    /**
     * Forgets every route to {@code replica}, here and (with a {@link RouteSync}) on the other instances:
     * for a replica leaving the pool while the tree is kept for the others (a host's service discovery
     * removed it, or a reload with {@link Builder#routesOf(Router)}). A maintenance pass.
     *
     * @param replica the replica whose routes to drop (compared by identity)
     */
    public void forgetReplica(Replica replica) {
        Objects.requireNonNull(replica, "replica");
        tree.removeReplica(replica);
        if (publishes) {
            publish(new RouteEvent.ReplicaRemoved(sync.originId(), clock.millis(), replica.id()));
        }
    }

    private void publish(RouteEvent event) {
        try {
            sync.publish(event);
        } catch (RuntimeException e) {
            if (!syncFailureLogged) {
                syncFailureLogged = true;
                LOG.error("route sync publish failed (logged once; routing goes on)", e);
            }
        }
    }

    /**
     * True if {@code key} is in the tree's unit and block size. A key in another format (a character key
     * made because tokenization was saturated, in a router of token keys) neither matches nor is learned:
     * it is routed as a miss.
     */
    private boolean fits(PromptKey key) {
        return key.unit() == keyUnit && key.blockSize() == keyBlockSize;
    }

    /** True if the route of an {@link LearnMode#ON_ROUTE} decision waits for its first token (a diversion). */
    private boolean deferred(Reason reason) {
        return deferDiverted && reason == Reason.HIT_OVERLOADED;
    }

    /** The account of {@code d}'s replica: the decision's own, or looked up when it counted nowhere. */
    private ReplicaLedger.Account account(RouteDecision d, Replica replica) {
        ReplicaLedger.Account a = d.account();
        return a != null ? a : ledger.account(replica, replicas.replicas());
    }

    void learnOnSuccess(RouteDecision d) {
        Replica replica = d.replica();
        if (learnMode == LearnMode.ON_SUCCESS && replica != null) {
            record(d.key(), replica);
        }
    }

    /**
     * Compares what the tree predicted for the chosen replica with what it reported. The prediction is in
     * key units; the replica's own prompt/key length ratio converts it to tokens. A prediction above the
     * delivery by more than two blocks and a tenth of the prediction means the replica did not hold the
     * prefix beyond what it delivered when the request reached it. That is evidence it lost the prefix
     * (its cache evicted it) only where it could have held it: a part that requests still in prefill on the
     * replica when this one was sent were computing was not there to serve yet ({@link InPrefill}), and a
     * shortfall that such requests explain is inconclusive, counted and not acted on. Where the evidence
     * stands, the replica has by now computed this whole prompt again, so the request's own route is true
     * again and is kept; what is dropped is the replica's claim on every other prefix that continued
     * through the lost part, which went with it (the tree's {@code forgetBranches}).
     *
     * <p>A replica with prefix caching off, or a server that always reports no cached token, would make
     * every predicted hit look stale and move the routes of prompts that hit nothing anyway. So a report of
     * nothing cached counts as evidence only from a replica that has reported a cached token at some point:
     * one that never has is given the benefit of the doubt for {@link #CACHE_UNREPORTED_AFTER} - 1 such
     * reports (a replica just started may really have lost its cache), and from the next on its shortfalls
     * are {@link CacheFeedback.Verdict#CACHE_UNREPORTED} and drop nothing, until it reports a cached token.
     */
    CacheFeedback feedback(RouteDecision d, ServedUsage usage) {
        int keyLength = d.keyLength();
        Replica replica = d.replica();
        if (keyLength == 0 || replica == null) {
            return CacheFeedback.notCompared();
        }
        double tokensPerUnit = (double) usage.promptTokens() / keyLength;
        long predicted = Math.round(d.matchedLength() * tokensPerUnit);
        long delivered = usage.cachedTokens();
        int deliveredUnits = (int) Math.min(keyLength, Math.floor(delivered / tokensPerUnit));
        int blockSize = d.key().blockSize();
        int tolerance = 2 * blockSize + d.matchedLength() / 10;
        boolean shortfall = d.matchedLength() - deliveredUnits > tolerance;
        int keep = deliveredUnits;
        if (shortfall) {
            keep = InPrefill.explained(
                    d.aheadInPrefill(), d.inPrefill(), d.key(), deliveredUnits, d.matchedLength(), 2 * blockSize);
        }
        boolean stale = shortfall && d.matchedLength() - keep > tolerance;
        CacheFeedback.Verdict verdict;
        if (!feedback) {
            verdict = CacheFeedback.Verdict.FEEDBACK_OFF;
        } else if (!shortfall) {
            verdict = CacheFeedback.Verdict.OK;
        } else if (!stale) {
            verdict = CacheFeedback.Verdict.INCONCLUSIVE;
        } else if (delivered == 0 && account(d, replica).noCacheReport() >= CACHE_UNREPORTED_AFTER) {
            verdict = CacheFeedback.Verdict.CACHE_UNREPORTED;
        } else {
            verdict = CacheFeedback.Verdict.STALE;
        }
        if (feedback && delivered > 0) {
            account(d, replica).cacheReported();
        }
        if (verdict == CacheFeedback.Verdict.STALE && policy.usesPrefixTree()) {
            tree.forgetBranches(d.key(), replica, keep);
            if (publishes && fits(d.key())) {
                publish(new RouteEvent.Forgotten(
                        sync.originId(),
                        clock.millis(),
                        replica.id(),
                        keyUnit,
                        keyBlockSize,
                        d.key().blocks(),
                        Math.max(0, keep / keyBlockSize)));
            }
        }
        CacheFeedback f = new CacheFeedback(predicted, delivered, usage.promptTokens(), verdict);
        listener.onCacheFeedback(d, f);
        return f;
    }

    void closed(RouteDecision d, Outcome outcome, int status, boolean firstToken) {
        remoteLoad.localLoadChanged(); // the slot was just given back
        long nanos = ticker.getAsLong() - d.startNanos();
        try {
            policy.onLeaseClosed(d, outcome, firstToken, nanos);
        } catch (RuntimeException e) {
            observationFailed(e);
        } finally {
            LeaseCompletion completion = new LeaseCompletion(d, outcome, status, nanos, d.attempt());
            try {
                listener.onLeaseCompleted(completion);
            } finally {
                slots.freed(completion); // flow control (cart-flow): the slot is free, see addSlotListener
            }
        }
    }

    /**
     * The other instances' load this router adds to its own ({@link Builder#remoteLoad}).
     *
     * @return the view given to the builder; {@link RemoteLoad#NONE} by default
     */
    public RemoteLoad remoteLoad() {
        return remoteLoad;
    }

    /**
     * Prompt units (characters, or tokens in token mode) this router has routed to {@code replica} whose
     * prefill is not over yet: for each request there that has not had its first token
     * ({@link Lease#firstToken()}) and whose lease is open, its key length minus the prefix the tree
     * predicted the replica held when it was routed. The prefill work queued there, which the in-flight
     * count does not show (a 2,000-token cold prompt and a 50-token cached one count the same there).
     * Counted once the host reports first tokens ({@link Builder#firstTokenReports}); 0 before, and for a
     * replica this router never routed to. Other instances' requests are not included (a policy sees them
     * added, {@link RoutingContext#pendingPrefill}). A router built with {@link Builder#routesOf} shares the
     * figures of the router it replaces. Thread-safe and lock-free: one map lookup, cheap enough for a gauge.
     *
     * @param replica a replica of the pool (or one that left it while requests were still in prefill there)
     * @return the units pending, at least 0
     */
    public long pendingPrefill(Replica replica) {
        return ledger.pendingPrefill(CombinedLoadReplica.unwrap(Objects.requireNonNull(replica, "replica")));
    }

    /** The per-replica figures, for this package's tests. */
    ReplicaLedger ledger() {
        return ledger;
    }

    /**
     * The replica set routed over.
     *
     * @return the replica set given to the builder
     */
    public ReplicaSet replicas() {
        return replicas;
    }

    /**
     * The policy routing decisions go by.
     *
     * @return the policy given to the builder
     */
    public RoutingPolicy policy() {
        return policy;
    }

    /**
     * The prefix tree's size figures now: a few counter reads, cheap enough for a metrics gauge (each
     * figure exact; together they may be a moment apart).
     *
     * @return the tree's current size and counts
     */
    public TreeStats treeStats() {
        return tree.stats();
    }

    /**
     * The tree's size cap in blocks ({@link Builder#maxTreeSize}).
     *
     * @return the cap, in blocks
     */
    public long maxTreeSize() {
        return tree.maxSize();
    }

    /** The tree itself, for this package's tests and benchmarks. */
    PrefixTree tree() {
        return tree;
    }

    /**
     * Runs one eviction pass now and reports it to the listener. The pass also drops the router's figures of
     * replicas that have left the pool and have nothing pending.
     *
     * @return what the pass dropped, and the size before and after
     */
    public EvictionReport evictNow() {
        ledger.prune(replicas.replicas());
        EvictionReport report = tree.evict();
        listener.onEviction(report);
        if (report.removed() > 0) {
            LOG.debug(
                    "eviction pass: expired={} evicted={} nodesRemoved={} size {} -> {} in {} us",
                    report.expired(),
                    report.evicted(),
                    report.nodesRemoved(),
                    report.sizeBefore(),
                    report.sizeAfter(),
                    report.durationNanos() / 1000);
        }
        return report;
    }

    /** Drops the whole tree now (what the daily cleanup does). */
    public void resetTree() {
        long now = clock.millis();
        tree.clear();
        if (publishes) {
            publish(new RouteEvent.Reset(sync.originId(), now));
        }
        listener.onReset();
        LOG.info("prefix tree reset");
    }

    private void scheduleEviction() {
        Scheduler s = scheduler;
        if (closed || s == null) {
            return;
        }
        evictionTask = s.schedule(
                () -> {
                    try {
                        evictNow();
                    } catch (RuntimeException e) {
                        LOG.error("eviction pass failed", e);
                    } finally {
                        scheduleEviction();
                    }
                },
                evictionInterval);
    }

    private void scheduleReset() {
        Scheduler s = scheduler;
        if (closed || s == null) {
            return;
        }
        resetTask = s.schedule(
                () -> {
                    try {
                        resetTree();
                    } catch (RuntimeException e) {
                        LOG.error("daily reset failed", e);
                    } finally {
                        scheduleReset();
                    }
                },
                untilNextReset(clock.instant(), dailyResetHourUtc));
    }

    /** Time from {@code now} to the next {@code hour}:00 UTC strictly after it. */
    static Duration untilNextReset(Instant now, int hour) {
        ZonedDateTime t = now.atZone(ZoneOffset.UTC);
        ZonedDateTime next = t.withHour(hour).withMinute(0).withSecond(0).withNano(0);
        if (!next.isAfter(t)) {
            next = next.plusDays(1);
        }
        return Duration.between(t, next);
    }

    /** Stops background maintenance. In-flight leases stay valid. */
    @Override
    public void close() {
        closed = true;
        Scheduler.Task e = evictionTask;
        if (e != null) {
            e.cancel();
        }
        Scheduler.Task r = resetTask;
        if (r != null) {
            r.cancel();
        }
        Scheduler s = scheduler;
        if (ownsScheduler && s != null) {
            s.close();
        }
    }

    // ---- Hooks for flow control (cart-flow): additive, kept together here ----

    /**
     * Calls {@code listener} each time a lease of this router gives its slot back, with how the lease ended
     * (its decision names the replica and the model), after the slot is free and after the
     * {@link RoutingListener} heard of the close, on the thread that closed the lease. Unlike the routing
     * listener, any number can be added after the router is built: an admission queue ({@code cart-flow})
     * hands the freed slot to a waiting request from here. The listener must be quick, must not block and
     * should not throw (an exception is caught and logged once). Adding is thread-safe and takes effect for
     * leases closed afterwards; adding the same listener twice calls it twice.
     *
     * @param listener called once per closed lease of a routed decision
     */
    public void addSlotListener(Consumer<? super LeaseCompletion> listener) {
        slots.add(Objects.requireNonNull(listener, "listener"));
    }

    /**
     * Stops calling {@code listener} (one registration of it); does nothing if it was not added.
     *
     * @param listener a listener given to {@link #addSlotListener}
     */
    public void removeSlotListener(Consumer<? super LeaseCompletion> listener) {
        slots.remove(listener);
    }

    /**
     * The tree's match for {@code key}: which replicas hold how much of it (longest first), as a policy
     * would see it, without routing anything. {@link Match#none} when the policy ignores the tree or the
     * key is of another format than the tree's ({@link Builder#keyFormat}). For an admission queue that
     * keeps a waiting request for the replica holding its prefix. Lock-free, no I/O; costs one tree match.
     *
     * @param key the prompt key
     * @return the match, naming this router's pool's replicas
     */
    public Match prefixHolders(PromptKey key) {
        Objects.requireNonNull(key, "key");
        if (!policy.usesPrefixTree() || key.blockCount() == 0 || !fits(key)) {
            return Match.none(key.length());
        }
        return tree.match(key);
    }

    /** Builds a {@link Router}. Only the replica set and the policy are required. */
    public static final class Builder {
        private @Nullable ReplicaSet replicas;
        private @Nullable RoutingPolicy policy;
        private @Nullable PrefixTree tree;
        private final PrefixTree.Builder treeSettings = PrefixTree.builder();
        private RoutingListener listener = RoutingListener.NONE;
        private Supplier<RandomGenerator> random = ThreadLocalRandom::current;
        private Clock clock = Clock.systemUTC();
        private LongSupplier ticker = System::nanoTime;
        private @Nullable Scheduler scheduler;
        private Duration evictionInterval = DEFAULT_EVICTION_INTERVAL;
        private int dailyResetHourUtc = -1;
        private LearnMode learnMode = LearnMode.ON_ROUTE;
        private boolean feedback = true;
        private PromptKey.Unit keyUnit = PromptKey.Unit.CHARS;
        private int keyBlockSize = PromptKey.DEFAULT_BLOCK_CHARS;
        private boolean deferDiverted = true;
        private boolean firstTokenReports;
        private RouteSync sync = RouteSync.NONE;
        private RemoteLoad remoteLoad = RemoteLoad.NONE;
        private @Nullable ReplicaLedger ledger;

        private Builder() {}

        /**
         * The load other router instances put on this pool's replicas (for example the {@code cart-redis}
         * module's shared load view): policies then see each candidate's in-flight count, load and pending
         * prefill as this instance's own exact figures plus the others', so the guard and the prefill-aware
         * ranking weigh the whole pool's traffic. The admission cap stays per instance. {@link
         * RemoteLoad#NONE} (the default) counts this instance alone.
         *
         * @param remoteLoad the other instances' load, or {@link RemoteLoad#NONE}
         * @return this builder
         * @throws NullPointerException if the value is null
         */
        public Builder remoteLoad(RemoteLoad remoteLoad) {
            this.remoteLoad = Objects.requireNonNull(remoteLoad);
            return this;
        }

        /**
         * Shares what this router learns with other instances routing the same pool (for example the
         * {@code cart-redis} module's Redis Stream), and identifies this instance's own events by the
         * sync's {@link RouteSync#originId()}. The transport hands the others' events to
         * {@link Router#applyRemote}. {@link RouteSync#NONE} (the default) shares nothing.
         *
         * @param sync the transport, or {@link RouteSync#NONE}
         * @return this builder
         * @throws NullPointerException if the value is null
         */
        public Builder sync(RouteSync sync) {
            this.sync = Objects.requireNonNull(sync);
            return this;
        }

        /**
         * The format of the keys this router's tree holds: characters in 64-character blocks by default,
         * or token ids in blocks of {@code blockSize} tokens. Keys of another format are routed as misses
         * and never learned (a token-mode extractor falls back to a character key when saturated).
         *
         * @param unit the value, in the range above
         * @param blockSize the value, in the range above
         * @return this builder
         * @throws IllegalArgumentException if the value is out of that range
         * @throws NullPointerException if the value is null
         */
        public Builder keyFormat(PromptKey.Unit unit, int blockSize) {
            this.keyUnit = Objects.requireNonNull(unit);
            Checks.atLeast("keyFormat blockSize", blockSize, 1);
            this.keyBlockSize = blockSize;
            return this;
        }

        /**
         * Declares that the host calls {@link Lease#firstToken()} when a request's first token (the first
         * bytes of its answer) arrives, so routed requests count in their replica's
         * {@linkplain Router#pendingPrefill pending prefill} from the first request on. Without it (the default) they count
         * from the first such report on: a host that never reports would otherwise leave every request
         * counted as pending prefill until it ends.
         *
         * @param enabled true if the host reports first tokens
         * @return this builder
         */
        public Builder firstTokenReports(boolean enabled) {
            this.firstTokenReports = enabled;
            return this;
        }

        /**
         * Whether, with {@link LearnMode#ON_ROUTE}, a request the policy diverted away from the prefix's
         * holders ({@link Reason#HIT_OVERLOADED}) has its route recorded only when its first token arrives
         * ({@link Lease#firstToken()}, or the lease's close) instead of when it is routed (on by default;
         * off is the specification's behaviour). Recorded at once, the diverted-to replica becomes a holder
         * while it is still computing the prefix, and as the least-loaded holder it draws the next requests,
         * which all wait for that computation instead of going to the replica that already holds it.
         *
         * @param enabled true to record a diverted route at its first token
         * @return this builder
         */
        public Builder deferDivertedRoutes(boolean enabled) {
            this.deferDiverted = enabled;
            return this;
        }

        /**
         * When routed prefixes are recorded ({@code cache.learn}); {@link LearnMode#ON_ROUTE} by default.
         *
         * @param mode when routes are recorded
         * @return this builder
         * @throws NullPointerException if the value is null
         */
        public Builder learn(LearnMode mode) {
            this.learnMode = Objects.requireNonNull(mode);
            return this;
        }

        /**
         * Whether a predicted hit that the replica reports it did not deliver drops the replica's stale
         * claims ({@code cache.feedback}, on by default): every other prefix it was believed to hold through
         * the part it had lost. The request's own route is kept (the replica has just computed the prompt
         * again). The comparison is reported to the listener either way.
         *
         * @param enabled true to act on stale predictions
         * @return this builder
         */
        public Builder feedback(boolean enabled) {
            this.feedback = enabled;
            return this;
        }

        /**
         * The pool to route over: a {@link ManagedReplicaSet}, or the host's own {@link ReplicaSet}.
         *
         * @param replicas the pool; called once per decision
         * @return this builder
         * @throws NullPointerException if the value is null
         */
        public Builder replicas(ReplicaSet replicas) {
            this.replicas = Objects.requireNonNull(replicas);
            return this;
        }

        /**
         * The policy that chooses among the usable replicas.
         *
         * @param policy the policy; called from many threads at once
         * @return this builder
         * @throws NullPointerException if the value is null
         */
        public Builder policy(RoutingPolicy policy) {
            this.policy = Objects.requireNonNull(policy);
            return this;
        }

        /**
         * The policy registered under {@code name} ({@link RoutingPolicyProvider}), with its default
         * settings.
         *
         * @throws IllegalArgumentException if no policy has that name (the message lists those that do)
         * @param name a registered policy's name, e.g. {@code cache_aware}
         * @return this builder
         */
        public Builder policy(String name) {
            return policy(name, Map.of());
        }

        /**
         * The policy registered under {@code name} ({@link RoutingPolicyProvider#named}), made from
         * {@code settings}: keys as in the proxy's {@code cache} section ({@code threshold},
         * {@code guard}, ...), values as parsed from YAML or given by code; a key left out keeps its default.
         *
         * @throws IllegalArgumentException if no policy has that name, or naming every bad setting
         * @param name a registered policy's name, e.g. {@code cache_aware}
         * @param settings the settings by key; empty for the defaults
         * @return this builder
         */
        public Builder policy(String name, Map<String, ?> settings) {
            return policy(RoutingPolicyProvider.named(name).create(settings));
        }

        /**
         * The prefix tree's size cap, in blocks of the {@linkplain #keyFormat key format} (one block is
         * stored as an 8-byte hash); an eviction pass drops least recently used routes above it. Default
         * 1,000,000 blocks: about 64 million characters of distinct prompt text in 64-character blocks.
         *
         * @param blocks the cap in blocks, at least 1
         * @return this builder
         */
        public Builder maxTreeSize(long blocks) {
            treeSettings.maxSize(blocks);
            return this;
        }

        /**
         * How long a route unused is kept: the next eviction pass drops routes idle longer than this. Zero
         * (the default) keeps routes until the size cap or the daily reset drops them.
         *
         * @param ttl the idle time after which a route is dropped; zero to keep routes
         * @return this builder
         */
        public Builder routeTtl(Duration ttl) {
            treeSettings.ttl(ttl);
            return this;
        }

        /**
         * Routes over {@code previous}'s prefix tree instead of a new one, so its routes stay: for a
         * router that replaces {@code previous} with another replica set (a reload). The tree matches
         * replicas by identity, so only routes of replica objects that are in the new set too can be
         * chosen; drop the others with {@link #forgetReplica}. The tree keeps {@code previous}'s size
         * cap and route TTL ({@link #maxTreeSize} and {@link #routeTtl} are ignored). The router also
         * shares {@code previous}'s per-replica figures ({@link Router#pendingPrefill}, the requests in
         * prefill that usage feedback weighs), so the requests {@code previous} routed still count on a
         * replica both routers use until their leases close. Close {@code previous} (which stops its
         * maintenance) and let this router's run on the tree.
         *
         * @param previous the router whose tree and per-replica figures to share
         * @return this builder
         */
        public Builder routesOf(Router previous) {
            this.tree = previous.tree;
            this.ledger = previous.ledger;
            return this;
        }

        /** A tree built elsewhere (this package's tests and benchmarks); it ignores the settings above. */
        Builder tree(PrefixTree tree) {
            this.tree = Objects.requireNonNull(tree);
            return this;
        }

        /**
         * Hears every decision, lease completion and tree event (for metrics and logs); none by default.
         *
         * @param listener the listener; called on routing threads, must be quick
         * @return this builder
         * @throws NullPointerException if the value is null
         */
        public Builder listener(RoutingListener listener) {
            this.listener = Objects.requireNonNull(listener);
            return this;
        }

        /**
         * Source of randomness per decision; by default {@link ThreadLocalRandom}.
         *
         * @param random a source per decision; called on routing threads
         * @return this builder
         * @throws NullPointerException if the value is null
         */
        public Builder random(Supplier<RandomGenerator> random) {
            this.random = Objects.requireNonNull(random);
            return this;
        }

        /**
         * Clock for the daily reset (and for the default tree's timestamps).
         *
         * @param clock the wall clock
         * @return this builder
         * @throws NullPointerException if the value is null
         */
        public Builder clock(Clock clock) {
            this.clock = Objects.requireNonNull(clock);
            return this;
        }

        /**
         * Source of monotonic nanoseconds for decision times ({@link RouteDecision#decisionNanos()}), lease
         * durations ({@link LeaseCompletion#durationNanos()}) and the policy's lease observations
         * ({@link RoutingPolicy#onFirstToken}); {@link System#nanoTime()} by default. A simulation or a test
         * injects its own (a virtual clock then gives virtual decision times).
         *
         * @param ticker monotonic nanoseconds
         * @return this builder
         * @throws NullPointerException if the value is null
         */
        public Builder ticker(LongSupplier ticker) {
            this.ticker = Objects.requireNonNull(ticker);
            return this;
        }

        /** Where maintenance runs; by default a daemon thread owned (and closed) by the router. */
        Builder scheduler(Scheduler scheduler) {
            this.scheduler = Objects.requireNonNull(scheduler);
            return this;
        }

        /**
         * Time between eviction passes ({@code cache.eviction_interval_secs}); zero disables them.
         *
         * @param interval the value, in the range above
         * @return this builder
         * @throws IllegalArgumentException if the value is out of that range
         */
        public Builder evictionInterval(Duration interval) {
            Checks.notNegative("evictionInterval", interval);
            this.evictionInterval = interval;
            return this;
        }

        /**
         * Hour (UTC) of the daily tree reset ({@code cache.daily_cleanup_hour_utc}); -1 disables it.
         *
         * @param hour the value, in the range above
         * @return this builder
         * @throws IllegalArgumentException if the value is out of that range
         */
        public Builder dailyResetHourUtc(int hour) {
            if (hour < -1 || hour > 23) {
                throw new IllegalArgumentException("dailyResetHourUtc must be -1 (off) or in [0, 23], was " + hour);
            }
            this.dailyResetHourUtc = hour;
            return this;
        }

        /**
         * @throws IllegalStateException if the replica set or the policy is missing
         *
         * @return a new router, its maintenance scheduled
         */
        public Router build() {
            ReplicaSet r = replicas;
            RoutingPolicy p = policy;
            if (r == null) {
                throw new IllegalStateException("a router needs a replica set");
            }
            if (p == null) {
                throw new IllegalStateException("a router needs a routing policy");
            }
            return new Router(this, r, p);
        }
    }
}
