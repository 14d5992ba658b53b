package dev.cart.proxy.upstream;

import dev.cart.core.ManagedReplicaSet;
import dev.cart.proxy.config.ProxyConfig;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
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
 * blocks on the network. The chains of a pool are spread over the interval: replica {@code i} of {@code n}
 * has the phase {@code i * interval / n}. A replica not probed yet is probed at once (it is unknown until
 * then) and waits its phase once after that first probe; a replica a reload keeps (probed already) starts at
 * its phase. So the probes of a pool of a thousand replicas come a millisecond apart, instead of a thousand
 * at once at every reload (and, after such a burst, at every interval).
 *
 * <p>Models: a replica whose {@code workers[].models} is not configured has its models learned in the same
 * chain by {@link ModelDiscovery} (its {@code GET /v1/models}), right after a probe that succeeded when one
 * of these holds: it is the replica's first good probe, the probe before it failed (the replica may have
 * restarted with other models), or {@code health.models_interval_secs} worth of good probes
 * ({@link #probesPerModels}: that interval over {@code interval_secs}, rounded up) went by since its models
 * were last asked. The next probe waits for it, so a cycle is one probe plus at most one models request.
 * (Asking at every probe doubled a probe's requests, for a list that changes when an operator loads or
 * unloads an adapter.)
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
    /**
     * Per member whose models are discovered: how many good probes are left until its models are asked again
     * (absent: at its next good probe). Shared as {@link #probed} is; guarded by itself.
     */
    private final Map<ManagedReplicaSet.Member, Integer> modelsIn;
    /** Good probes between two models requests of one replica (at least 1). */
    private final int probesPerModels;

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
        this.modelsIn = previous == null ? new IdentityHashMap<>() : previous.modelsIn;
        this.replicas = replicas;
        this.client = client;
        this.config = config;
        this.scheduler = scheduler;
        this.discovery = new ModelDiscovery(client, Duration.ofSeconds(config.timeoutSecs()));
        this.discovered = Set.copyOf(discovered);
        this.probesPerModels = probesPerModels(config);
        if (previous != null) {
            synchronized (modelsIn) { // a worker whose models were configured before: asked at its next good probe
                modelsIn.keySet().removeIf(m -> !previous.discovered.contains(m.id()));
            }
        }
    }

    /** {@code health.models_interval_secs} in good probes: over {@code interval_secs}, rounded up, at least 1. */
    static int probesPerModels(ProxyConfig.Health config) {
        return Math.max(1, (config.modelsIntervalSecs() + config.intervalSecs() - 1) / config.intervalSecs());
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

    /**
     * Starts polling: a first probe now of every replica not probed yet, at its phase of the interval of every
     * other (see the class comment), then one every interval.
     */
    public void start() {
        List<ManagedReplicaSet.Member> all = replicas.replicas();
        long intervalMs = TimeUnit.SECONDS.toMillis(config.intervalSecs());
        for (int i = 0; i < all.size(); i++) {
            ManagedReplicaSet.Member m = all.get(i);
            long phase = intervalMs * i / all.size();
            if (probed.contains(m)) {
                schedule(m, phase, 0);
            } else {
                schedule(m, 0, phase);
            }
        }
    }

    /** Runs {@code m}'s cycle in {@code delayMs}, then again every interval, the first time {@code phaseMs} later. */
    private void schedule(ManagedReplicaSet.Member m, long delayMs, long phaseMs) {
        synchronized (timers) {
            if (closed) {
                return;
            }
            timers.removeIf(ScheduledFuture::isDone);
            timers.add(scheduler.schedule(
                    () -> {
                        var unused = cycle(m).whenComplete((ok, e) ->
                                schedule(m, TimeUnit.SECONDS.toMillis(config.intervalSecs()) + phaseMs, 0));
                    },
                    delayMs,
                    TimeUnit.MILLISECONDS));
        }
    }

    /**
     * One health cycle of every replica now (a probe, then its models where they are discovered and due, as
     * in the class comment); the future completes when all results are recorded.
     */
    public CompletableFuture<Void> probeAll() {
        List<CompletableFuture<?>> all = new ArrayList<>();
        for (ManagedReplicaSet.Member m : replicas.replicas()) {
            all.add(cycle(m));
        }
        return CompletableFuture.allOf(all.toArray(new CompletableFuture<?>[0]));
    }

    /** A probe of {@code m} and, if it succeeded and {@code m}'s models are discovered and due, a models refresh. */
    private CompletableFuture<?> cycle(ManagedReplicaSet.Member m) {
        return probe(m).thenCompose(ok -> ok && discovered.contains(m.id()) && !closed && modelsDue(m)
                ? discovery.refresh(m, () -> !closed)
                : CompletableFuture.completedFuture(null));
    }

    /**
     * Counts a good probe of {@code m} towards its next models request: true when its models are to be asked
     * now (its first good probe, the first after a failure, or {@link #probesPerModels} good probes after the
     * last request).
     */
    private boolean modelsDue(ManagedReplicaSet.Member m) {
        synchronized (modelsIn) {
            Integer left = modelsIn.get(m);
            if (left == null || left <= 1) {
                modelsIn.put(m, probesPerModels);
                return true;
            }
            modelsIn.put(m, left - 1);
            return false;
        }
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
            synchronized (modelsIn) {
                modelsIn.remove(m); // back after a failure, its models are asked at its next good probe
            }
        }
        m.recordProbe(ok);
        if (ok) {
            answered.add(m);
        }
        probed.add(m); // after the result is recorded: a reader that sees it probed sees the result
        if (replicas.replicas().size() < probed.size()) {
            probed.retainAll(replicas.replicas()); // members a reload removed
            answered.retainAll(replicas.replicas());
            synchronized (modelsIn) {
                modelsIn.keySet().retainAll(replicas.replicas());
            }
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
