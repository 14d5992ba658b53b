package dev.cart.proxy;

import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.PromptKey;
import dev.cart.core.Router;
import dev.cart.core.RoutingPolicies;
import java.net.http.HttpClient;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ScheduledExecutorService;

/**
 * Everything a reload replaces, built together and swapped as one reference: the replica set, a fresh
 * prefix tree, the router over them and the health checker that feeds the set. A request reads the
 * current {@code Routing} once and uses it for all its attempts, so retries exclude replicas of the same
 * set and a lease taken before a swap is released on the set it came from.
 */
final class Routing implements AutoCloseable {

    final List<ProxyConfig.Worker> workers;
    final ManagedReplicaSet replicas;
    final Router router;
    final HealthChecker health;

    private Routing(List<ProxyConfig.Worker> workers, ManagedReplicaSet replicas, Router router, HealthChecker health) {
        this.workers = workers;
        this.replicas = replicas;
        this.router = router;
        this.health = health;
    }

    /**
     * Builds the routing state for {@code config}. Health checks are not started here (see
     * {@link HealthChecker#start()}), so a set that is built but never published probes nothing.
     */
    static Routing build(
            ProxyConfig config,
            Clock clock,
            ProxyListener listener,
            HttpClient client,
            ScheduledExecutorService scheduler) {
        ManagedReplicaSet.Builder sb = ManagedReplicaSet.builder()
                .clock(clock)
                .health(config.health().thresholds())
                .circuitBreaker(config.circuitBreaker().toCore())
                .listener(listener);
        for (ProxyConfig.Worker w : config.workers()) {
            sb.add(w.spec());
        }
        ManagedReplicaSet set = sb.build();
        ProxyConfig.Cache cache = config.cache();
        Router router = Router.builder()
                .replicas(set)
                .policy(RoutingPolicies.create(cache.policy(), cache.policySettings()))
                .maxTreeSize(cache.maxTreeSize())
                .routeTtl(Duration.ofSeconds(cache.routeTtlSecs()))
                .keyFormat(
                        cache.tokens().on() ? PromptKey.Unit.TOKENS : PromptKey.Unit.CHARS,
                        cache.tokens().on() ? cache.tokens().blockTokens() : cache.blockChars())
                .clock(clock)
                .listener(listener)
                .evictionInterval(Duration.ofSeconds(cache.evictionIntervalSecs()))
                .dailyResetHourUtc(cache.dailyCleanupHourUtc())
                .learn(cache.learn())
                .feedback(cache.feedback())
                .firstTokenReports(true) // Forwarder reports each answer's first bytes
                .build();
        HealthChecker health = new HealthChecker(set, client, config.health(), scheduler);
        return new Routing(config.workers(), set, router, health);
    }

    /** Stops the health checks and the tree maintenance. Leases taken from this set stay valid. */
    @Override
    public void close() {
        health.close();
        router.close();
    }
}
