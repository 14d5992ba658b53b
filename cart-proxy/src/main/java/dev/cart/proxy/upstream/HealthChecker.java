package dev.cart.proxy.upstream;

import dev.cart.core.ManagedReplicaSet;
import dev.cart.proxy.config.ProxyConfig;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Polls {@code health.endpoint} on every replica of one replica set and feeds each result to
 * {@link ManagedReplicaSet.Member#recordProbe(boolean)}, whose thresholds decide when health flips.
 *
 * <p>What the proxy reports ({@link #state}): a replica is {@link State#UNKNOWN} until its first probe has
 * completed, {@link State#HEALTHY} once a probe has succeeded and while its member is healthy, else
 * {@link State#UNHEALTHY}. The member itself starts healthy (the core's rule, so that the first requests are
 * routed before the first probe answers), so a replica that has never answered a probe is never reported
 * healthy, whatever the thresholds. What the probes have shown is kept across a reload for the replicas that
 * stay (the next checker shares it), and a replica a reload adds starts unknown.
 *
 * <p>How: one chain per replica on the shared scheduler. A probe is an asynchronous GET with
 * {@code health.timeout_secs}; a 2xx answer is a success, anything else (other status, connection
 * error, timeout) a failure. The next probe of a replica is scheduled {@code interval_secs} after the
 * previous one finished, so a slow replica never has two probes in flight and no scheduler thread ever
 * blocks on the network.
 *
 * <p>Models: a replica whose {@code workers[].models} is not configured has its models learned in the same
 * chain, right after a probe that succeeded, by {@link ModelDiscovery} (its {@code GET /v1/models}); the
 * next probe waits for it, so one cycle is one probe plus at most one models request per replica, and an
 * adapter unloaded from a replica stops receiving requests within one cycle.
 *
 * <p>Concurrency: {@link #close()} may race a probe in flight; results that arrive after it are
 * dropped, so a replaced replica set (after a reload) is never touched again.
 */
public final class HealthChecker implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(HealthChecker.class);

    private final ManagedReplicaSet replicas;
    private final HttpClient client;
    private final ProxyConfig.Health config;
    private final ScheduledExecutorService scheduler;
    private final ModelDiscovery discovery;
    /** Ids of the replicas whose models are discovered (not configured). */
    private final Set<String> discovered;

    private final List<ScheduledFuture<?>> timers = new ArrayList<>();
    private volatile boolean closed;
    /** The members whose probe has completed at least once; shared with the checker a reload makes next. */
    private final Set<ManagedReplicaSet.Member> probed;
    /** The members a probe has found healthy at least once; shared as {@link #probed} is. */
    private final Set<ManagedReplicaSet.Member> answered;

    /** A replica's health as the proxy reports it ({@code /health}, {@code /workers}, the gauges). */
    public enum State {
        /** No probe of it has completed yet. */
        UNKNOWN,
        /** A probe has succeeded and its health checks pass. */
        HEALTHY,
        /** Its health checks fail, or it has never answered a probe well. */
        UNHEALTHY;

        /** Lower-case name, as {@code /workers} says it. */
        public String label() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }
    }

    public HealthChecker(
            ManagedReplicaSet replicas,
            HttpClient client,
            ProxyConfig.Health config,
            ScheduledExecutorService scheduler,
            Set<String> discovered) {
        this(replicas, client, config, scheduler, discovered, null);
    }

    /**
     * A checker of {@code replicas} that carries on what {@code previous} (the checker of the set a reload
     * replaces; null for none) learned about the members both sets share.
     */
    public HealthChecker(
            ManagedReplicaSet replicas,
            HttpClient client,
            ProxyConfig.Health config,
            ScheduledExecutorService scheduler,
            Set<String> discovered,
            HealthChecker previous) {
        this.probed = previous == null ? identitySet() : previous.probed;
        this.answered = previous == null ? identitySet() : previous.answered;
        this.replicas = replicas;
        this.client = client;
        this.config = config;
        this.scheduler = scheduler;
        this.discovery = new ModelDiscovery(client, Duration.ofSeconds(config.timeoutSecs()));
        this.discovered = Set.copyOf(discovered);
    }

    private static Set<ManagedReplicaSet.Member> identitySet() {
        return java.util.Collections.synchronizedSet(
                java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>()));
    }

    /** {@code m}'s health as the proxy reports it (see the class comment). Any thread. */
    public State state(ManagedReplicaSet.Member m) {
        if (!probed.contains(m)) {
            return State.UNKNOWN;
        }
        return m.isHealthy() && answered.contains(m) ? State.HEALTHY : State.UNHEALTHY;
    }

    /** How many replicas of the set are in {@code s} now. */
    public int count(State s) {
        int n = 0;
        for (ManagedReplicaSet.Member m : replicas.replicas()) {
            if (state(m) == s) {
                n++;
            }
        }
        return n;
    }

    /** Starts polling: a first probe of every replica now, then one every interval. */
    public void start() {
        for (ManagedReplicaSet.Member m : replicas.replicas()) {
            scheduleNext(m, Duration.ZERO);
        }
    }

    private void scheduleNext(ManagedReplicaSet.Member m, Duration delay) {
        synchronized (timers) {
            if (closed) {
                return;
            }
            timers.removeIf(ScheduledFuture::isDone);
            timers.add(scheduler.schedule(
                    () -> {
                        var unused = cycle(m).whenComplete(
                                        (ok, e) -> scheduleNext(m, Duration.ofSeconds(config.intervalSecs())));
                    },
                    delay.toMillis(),
                    TimeUnit.MILLISECONDS));
        }
    }

    /**
     * One health cycle of every replica now (a probe, then its models where they are discovered); the
     * future completes when all results are recorded.
     */
    public CompletableFuture<Void> probeAll() {
        List<CompletableFuture<?>> all = new ArrayList<>();
        for (ManagedReplicaSet.Member m : replicas.replicas()) {
            all.add(cycle(m));
        }
        return CompletableFuture.allOf(all.toArray(new CompletableFuture<?>[0]));
    }

    /** A probe of {@code m} and, if it succeeded and {@code m}'s models are discovered, a models refresh. */
    private CompletableFuture<?> cycle(ManagedReplicaSet.Member m) {
        return probe(m).thenCompose(ok -> ok && discovered.contains(m.id()) && !closed
                ? discovery.refresh(m, () -> !closed)
                : CompletableFuture.completedFuture(null));
    }

    /** One probe of {@code m}; completes (never exceptionally) with the result after recording it. */
    CompletableFuture<Boolean> probe(ManagedReplicaSet.Member m) {
        HttpRequest request;
        try {
            request = HttpRequest.newBuilder(URI.create(m.id() + config.endpoint()))
                    .timeout(Duration.ofSeconds(config.timeoutSecs()))
                    .GET()
                    .build();
        } catch (IllegalArgumentException e) {
            record(m, false, "its probe URL is not valid: " + e.getMessage());
            return CompletableFuture.completedFuture(false);
        }
        return client.sendAsync(request, HttpResponse.BodyHandlers.discarding()).handle((resp, err) -> {
            boolean ok = err == null && resp.statusCode() / 100 == 2;
            record(m, ok, err != null ? ConnectFailure.describe(err) : "it answered HTTP " + resp.statusCode());
            return ok;
        });
    }

    private void record(ManagedReplicaSet.Member m, boolean ok, String detail) {
        if (closed) {
            return;
        }
        if (!ok) {
            LOG.debug("health probe of replica {} failed: {}", m.id(), detail);
        }
        m.recordProbe(ok);
        if (ok) {
            answered.add(m);
        }
        probed.add(m); // after the result is recorded: a reader that sees it probed sees the result
        if (replicas.replicas().size() < probed.size()) {
            probed.retainAll(replicas.replicas()); // members a reload removed
            answered.retainAll(replicas.replicas());
        }
    }

    @Override
    public void close() {
        synchronized (timers) {
            closed = true;
            for (ScheduledFuture<?> f : timers) {
                f.cancel(false);
            }
            timers.clear();
        }
    }
}
