package dev.cart.proxy;

import dev.cart.proxy.config.ConfigException;
import dev.cart.proxy.config.ProxyConfig;
import dev.cart.proxy.core.ModelsCache;
import dev.cart.proxy.observe.DecisionWindow;
import dev.cart.proxy.observe.ProxyMetrics;
import dev.cart.proxy.routing.Cluster;
import dev.cart.proxy.routing.ProxyListener;
import dev.cart.proxy.routing.Routing;
import java.net.http.HttpClient;
import java.util.List;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A running proxy's reloads of its configuration (SIGHUP, or a configuration handed in): only {@code workers} may
 * differ from the running configuration; an accepted reload builds the next {@link Routing} from the current one
 * ({@link Routing#replacing}: workers that stay keep their member, slots, circuit and routes), publishes it with one
 * atomic store, forgets the removed replicas' routes, then closes the old state (requests in flight finish on their
 * old lease). The {@code /v1/models} cache is emptied only when a worker is added.
 *
 * <p>How: each read of the configuration is numbered before it starts and read outside the lock, so a slow read
 * does not hold up a newer one; a read is acted on only if no newer read has been acted on already, so reloads that
 * overlap (a burst of signals while the files are rewritten) end on the newest read, never on an older one that
 * happened to reach the lock last.
 *
 * <p>Concurrency: any thread; reloads are serialised by one lock, and the running configuration and the routing
 * state are published through a volatile field and an atomic reference that requests read once each.
 */
final class Reloads {

    // the proxy's reload lines keep the logger they always had
    private static final Logger LOG = LoggerFactory.getLogger(ProxyServer.class);

    private final ProxyServer.Options options;
    private final AtomicReference<Routing> routing;
    private final ProxyMetrics metrics;
    private final ProxyListener listener;
    private final HttpClient client;
    private final ScheduledExecutorService scheduler;
    private final Cluster cluster;
    private final ModelsCache models;
    private final DecisionWindow window;

    private final Object reloadLock = new Object();
    /** Numbers each reload's read, taken before the read starts. */
    private final AtomicLong reads = new AtomicLong();
    /** The number of the newest read a reload has acted on (applied, unchanged or rejected); under reloadLock. */
    private long lastActedRead;

    private volatile ProxyConfig running;

    Reloads(
            ProxyConfig initial,
            ProxyServer.Options options,
            AtomicReference<Routing> routing,
            ProxyMetrics metrics,
            ProxyListener listener,
            HttpClient client,
            ScheduledExecutorService scheduler,
            Cluster cluster,
            ModelsCache models,
            DecisionWindow window) {
        this.running = initial;
        this.options = options;
        this.routing = routing;
        this.metrics = metrics;
        this.listener = listener;
        this.client = client;
        this.scheduler = scheduler;
        this.cluster = cluster;
        this.models = models;
        this.window = window;
    }

    /** The running configuration: the initial one, or the last reload's that was applied. */
    ProxyConfig running() {
        return running;
    }

    /**
     * Re-reads the configuration from the configured source (SIGHUP does this). Each read is numbered
     * before it starts, and a read is acted on only if no newer read has been acted on already: reloads
     * that overlap (a burst of signals while the files are rewritten) end on the newest read, never on an
     * older one that happened to reach the lock last. The files are read outside the lock, so a slow read
     * does not hold up a newer one.
     */
    ProxyServer.ReloadResult reload() {
        if (options.configSource == null) {
            return rejected("reload is not available: the proxy was started without configuration files");
        }
        long read = reads.incrementAndGet();
        ProxyConfig fresh;
        try {
            fresh = options.configSource.call();
        } catch (ConfigException e) {
            return rejectedRead(read, e.getMessage());
        } catch (Exception e) {
            return rejectedRead(read, e.toString());
        }
        return apply(fresh, read);
    }

    /** Applies {@code fresh} if only its workers differ from the running configuration. */
    ProxyServer.ReloadResult reload(ProxyConfig fresh) {
        return apply(fresh, reads.incrementAndGet());
    }

    private ProxyServer.ReloadResult rejectedRead(long read, String problem) {
        synchronized (reloadLock) {
            if (read < lastActedRead) {
                return superseded(read);
            }
            lastActedRead = read;
            return rejected("reload #" + read + " of " + options.configNames
                    + " rejected, keeping the running configuration ("
                    + running.workers().size()
                    + " worker(s)): " + problem);
        }
    }

    private ProxyServer.ReloadResult superseded(long read) {
        metrics.reload("superseded");
        String msg = "reload #" + read + " of " + options.configNames + " not applied: the newer read #" + lastActedRead
                + " was acted on first";
        LOG.info(msg);
        return new ProxyServer.ReloadResult(false, false, msg);
    }

    private ProxyServer.ReloadResult apply(ProxyConfig fresh, long read) {
        synchronized (reloadLock) {
            if (read < lastActedRead) {
                return superseded(read);
            }
            lastActedRead = read;
            ProxyConfig current = running;
            String what = "reload #" + read + " of " + options.configNames;
            List<String> differing = current.sectionsDifferingFrom(fresh);
            if (!differing.isEmpty()) {
                return rejected(what + " rejected, keeping the running configuration ("
                        + current.workers().size()
                        + " worker(s)): only 'workers' may change on reload, but " + String.join(", ", differing)
                        + " differ(s); restart to apply");
            }
            if (current.workers().equals(fresh.workers())) {
                metrics.reload("unchanged");
                LOG.info(
                        "{}: configuration unchanged ({} worker(s)), nothing to do",
                        what,
                        current.workers().size());
                return new ProxyServer.ReloadResult(true, false, "unchanged");
            }
            Routing next;
            try {
                next = Routing.replacing(routing.get(), fresh, options.clock, listener, client, scheduler, cluster);
            } catch (RuntimeException e) {
                return rejected(what + " rejected, keeping the running configuration ("
                        + current.workers().size() + " worker(s)): " + e.getMessage());
            }
            Routing old = routing.getAndSet(next);
            running = fresh;
            int dropped = next.forgetRemoved(old);
            boolean added = !current.workers().stream()
                    .map(ProxyConfig.Worker::url)
                    .toList()
                    .containsAll(fresh.workers().stream()
                            .map(ProxyConfig.Worker::url)
                            .toList());
            if (added) {
                models.clear(); // a new replica may serve other models
            }
            window.clear();
            metrics.syncReplicas(next.replicas);
            metrics.reload("applied");
            if (options.healthChecks) {
                next.health.start();
            }
            old.close();
            String msg = what + " applied: workers " + current.workers().size() + " -> "
                    + fresh.workers().size()
                    + " "
                    + fresh.workers().stream().map(ProxyConfig.Worker::url).toList()
                    + "; routes kept for " + keptCount(old, next) + " worker(s), dropped for " + dropped
                    + (added ? "; /v1/models cache emptied" : "; /v1/models cache kept");
            LOG.info(msg);
            return new ProxyServer.ReloadResult(true, true, msg);
        }
    }

    private static int keptCount(Routing old, Routing next) {
        int n = 0;
        for (var m : next.replicas.replicas()) {
            if (old.replicas.replicas().contains(m)) {
                n++;
            }
        }
        return n;
    }

    private ProxyServer.ReloadResult rejected(String message) {
        metrics.reload("rejected");
        LOG.warn(message);
        return new ProxyServer.ReloadResult(false, false, message);
    }
}
