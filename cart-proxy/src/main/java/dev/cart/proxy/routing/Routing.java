package dev.cart.proxy.routing;

import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.PromptKey;
import dev.cart.core.Router;
import dev.cart.proxy.config.ProxyConfig;
import dev.cart.proxy.flow.ProxyFlow;
import dev.cart.proxy.precise.PreciseMode;
import dev.cart.proxy.upstream.HealthChecker;
import java.net.http.HttpClient;
import java.time.Clock;
import java.time.Duration;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ScheduledExecutorService;

/**
 * The routing state of one worker list, swapped as one reference: the replica set, the router over it,
 * the prefix tree the router uses and the health checker that feeds the set. A request reads the current
 * {@code Routing} once and uses it for all its attempts, so retries exclude replicas of the same set and a
 * lease taken before a swap is released on the replica it came from.
 *
 * <p>A reload ({@link #replacing}) keeps what the workers that stay have earned. The design carries
 * the surviving replicas over rather than re-keying the tree: the tree matches replicas by identity, so
 * the new set is built with the previous set's {@code Member} objects for every worker whose entry
 * (URL, {@code max_load}, {@code load_penalty}) is unchanged (its
 * {@code models} may change: the kept member takes the new list), and new members only for added or changed
 * ones; the new router routes over the previous router's tree, and the routes of the members that left
 * are forgotten. A kept member is one object in both sets, so its in-flight count, circuit and health go
 * on unchanged: a lease taken before the swap is released on it exactly once and nothing is counted
 * twice. Re-keying the tree instead would have needed a rewrite of every tree entry under the
 * maintenance lock and would have reset each replica's in-flight count and circuit at the swap.
 *
 * <p>A request still in flight on a removed replica may learn its prefix after the swap (its lease
 * belongs to the old router, which shares the tree). Such a route names a replica outside the set, so it
 * is never chosen (the router picks among the set's members only), and the size cap or TTL drops it.
 */
public final class Routing implements AutoCloseable {

    public final List<ProxyConfig.Worker> workers;
    public final ManagedReplicaSet replicas;
    public final Router router;
    public final HealthChecker health;
    /** The admission queue in front of {@link #router} ({@code flow.enabled}), or null when it is off. */
    public final ProxyFlow flow;
    /**
     * Precise mode over these workers (the KV-event index, its subscriber and the engine tokenizer), or null when
     * no worker has {@code kv_events}. Built with the state and closed with it: a reload that changes the workers
     * follows the new list with a new index.
     */
    public final PreciseMode precise;

    private final ScheduledExecutorService scheduler;

    private Routing(
            List<ProxyConfig.Worker> workers,
            ManagedReplicaSet replicas,
            Router router,
            HealthChecker health,
            ProxyFlow flow,
            PreciseMode precise,
            ScheduledExecutorService scheduler) {
        this.workers = workers;
        this.replicas = replicas;
        this.router = router;
        this.health = health;
        this.flow = flow;
        this.precise = precise;
        this.scheduler = scheduler;
    }

    /**
     * Builds the routing state for {@code config}. Health checks are not started here (see
     * {@link HealthChecker#start()}), so a set that is built but never published probes nothing.
     */
    public static Routing build(
            ProxyConfig config,
            Clock clock,
            ProxyListener listener,
            HttpClient client,
            ScheduledExecutorService scheduler) {
        return build(config, clock, listener, client, scheduler, Cluster.OFF);
    }

    /** As {@link #build(ProxyConfig, Clock, ProxyListener, HttpClient, ScheduledExecutorService)}, in a cluster. */
    public static Routing build(
            ProxyConfig config,
            Clock clock,
            ProxyListener listener,
            HttpClient client,
            ScheduledExecutorService scheduler,
            Cluster cluster) {
        ManagedReplicaSet.Builder sb = setBuilder(config, clock, listener);
        for (ProxyConfig.Worker w : config.workers()) {
            sb.add(w.spec());
        }
        return assemble(config, clock, listener, client, scheduler, sb.build(), null, cluster);
    }

    private static ManagedReplicaSet.Builder setBuilder(ProxyConfig config, Clock clock, ProxyListener listener) {
        return ManagedReplicaSet.builder()
                .clock(clock)
                .health(config.health().thresholds())
                .circuitBreaker(config.circuitBreaker().toCore())
                .listener(listener);
    }

    private static Routing assemble(
            ProxyConfig config,
            Clock clock,
            ProxyListener listener,
            HttpClient client,
            ScheduledExecutorService scheduler,
            ManagedReplicaSet set,
            Routing previous,
            Cluster cluster) {
        PreciseMode precise = PreciseMode.of(config, listener.kvListener(), client);
        try {
            return assemble(config, clock, listener, client, scheduler, set, previous, cluster, precise);
        } catch (RuntimeException | Error e) {
            if (precise != null) {
                precise.close();
            }
            throw e;
        }
    }

    private static Routing assemble(
            ProxyConfig config,
            Clock clock,
            ProxyListener listener,
            HttpClient client,
            ScheduledExecutorService scheduler,
            ManagedReplicaSet set,
            Routing previous,
            Cluster cluster,
            PreciseMode precise) {
        ProxyConfig.Cache cache = config.cache();
        Router.Builder rb = Router.builder()
                .replicas(set)
                .policy(cache.policy(), cache.policySettings())
                .maxTreeSize(cache.maxTreeSize())
                .routeTtl(Duration.ofSeconds(cache.routeTtlSecs()))
                .keyFormat(
                        cache.tokens().on() ? PromptKey.Unit.TOKENS : PromptKey.Unit.CHARS,
                        cache.tokens().on() ? cache.tokens().blockTokens() : cache.blockChars())
                .clock(clock)
                .listener(precise == null ? listener : precise.listening(listener))
                .evictionInterval(Duration.ofSeconds(cache.evictionIntervalSecs()))
                .dailyResetHourUtc(cache.dailyCleanupHourUtc())
                .learn(cache.learn())
                .feedback(cache.feedback())
                .firstTokenReports(true); // Forwarder reports each answer's first bytes
        if (previous != null) {
            rb.routesOf(previous.router);
        }
        cluster.configure(rb);
        Router router = rb.build();
        if (precise != null) {
            precise.forgetRoutesOnEngineReset(router, set);
        }
        Set<String> discovered = new java.util.HashSet<>();
        for (ProxyConfig.Worker w : config.workers()) {
            if (!w.modelsConfigured()) {
                discovered.add(w.url());
            }
        }
        HealthChecker health = new HealthChecker(
                set, client, config.health(), scheduler, discovered, previous == null ? null : previous.health);
        ProxyFlow flow = ProxyFlow.of(router, config.flow(), listener.flowListener(), scheduler);
        return new Routing(config.workers(), set, router, health, flow, precise, scheduler);
    }

    /**
     * Builds the routing state for {@code config}'s workers to replace {@code previous}: unchanged workers
     * keep their member (slots, circuit, health) and their routes, and the tree is {@code previous}'s.
     * Publish the result, then call {@link #forgetRemoved} and close {@code previous}.
     */
    public static Routing replacing(
            Routing previous,
            ProxyConfig config,
            Clock clock,
            ProxyListener listener,
            HttpClient client,
            ScheduledExecutorService scheduler) {
        return replacing(previous, config, clock, listener, client, scheduler, Cluster.OFF);
    }

    /** As {@link #replacing(Routing, ProxyConfig, Clock, ProxyListener, HttpClient, ScheduledExecutorService)}, in a cluster. */
    public static Routing replacing(
            Routing previous,
            ProxyConfig config,
            Clock clock,
            ProxyListener listener,
            HttpClient client,
            ScheduledExecutorService scheduler,
            Cluster cluster) {
        ManagedReplicaSet.Builder sb = setBuilder(config, clock, listener);
        for (ProxyConfig.Worker w : config.workers()) {
            ProxyConfig.Worker before = previousEntry(previous, w);
            if (before == null) {
                sb.add(w.spec());
                continue;
            }
            ManagedReplicaSet.Member kept = previous.replicas.member(w.url()).orElseThrow();
            if (w.modelsConfigured()) {
                kept.models(w.servedModels());
            } else if (before.modelsConfigured()) {
                kept.models(List.of()); // any model until the health checks discover its models
            } // else: keep what discovery learned
            sb.keep(kept);
        }
        return assemble(config, clock, listener, client, scheduler, sb.build(), previous, cluster);
    }

    /** {@code w}'s entry in {@code previous} if the replica is the same there ({@link ProxyConfig.Worker#sameReplica}). */
    private static ProxyConfig.Worker previousEntry(Routing previous, ProxyConfig.Worker w) {
        for (ProxyConfig.Worker p : previous.workers) {
            if (p.sameReplica(w)) {
                return p;
            }
        }
        return null;
    }

    /**
     * Forgets the routes of {@code previous}'s members that are not in this set.
     *
     * @return how many replicas' routes were dropped
     */
    public int forgetRemoved(Routing previous) {
        Set<ManagedReplicaSet.Member> here = Collections.newSetFromMap(new IdentityHashMap<>());
        here.addAll(replicas.replicas());
        int dropped = 0;
        for (ManagedReplicaSet.Member m : previous.replicas.replicas()) {
            if (!here.contains(m)) {
                router.forgetReplica(m);
                dropped++;
            }
        }
        return dropped;
    }

    /**
     * Stops the health checks and the tree maintenance. Leases taken from this set stay valid. The admission
     * queue, if any, is left to drain ({@link ProxyFlow#retire}): requests waiting in it are served by the
     * slots this router's leases free, or shed at their deadline.
     */
    @Override
    public void close() {
        health.close();
        router.close();
        if (precise != null) {
            precise.close();
        }
        if (flow != null) {
            flow.retire(scheduler);
        }
    }
}
