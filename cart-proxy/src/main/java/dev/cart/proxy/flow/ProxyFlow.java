package dev.cart.proxy.flow;

import dev.cart.core.RouteRequest;
import dev.cart.core.Router;
import dev.cart.core.spi.Scheduler;
import dev.cart.flow.FlowControl;
import dev.cart.flow.FlowHeaders;
import dev.cart.flow.FlowListener;
import dev.cart.flow.FlowTicket;
import dev.cart.proxy.config.FlowSettings;
import dev.cart.proxy.http.HeaderView;
import java.time.Duration;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * The proxy's admission queue over one router ({@code flow.enabled: true}): a {@link FlowControl} and the
 * reader of the flow headers, built with the routing state ({@code Routing}) and replaced with it on reload.
 * The request path reads a request's {@link FlowHeaders.Parsed inputs} when it prepares it, and
 * {@link #submit}s its first attempt instead of calling {@link Router#choose}; retries go to the router
 * directly (another replica with room was there when the retry was decided).
 *
 * <p>Timers (deadlines, rechecks) run on the proxy's scheduler thread; a ticket completes on that thread,
 * on a thread closing a lease, or on the submitting one, and the front hands it back to the connection's
 * event loop. A replaced queue ({@link #retire}) is left to drain: its waiting requests still get the old
 * router's freed slots (and the recheck finds the others), or are shed at their deadline; it is closed
 * once idle, or after {@code max_wait_ms} at the latest. Thread-safe.
 */
public final class ProxyFlow {

    private final FlowControl control;
    private final FlowHeaders headers;
    private final FlowSettings settings;

    private ProxyFlow(FlowControl control, FlowHeaders headers, FlowSettings settings) {
        this.control = control;
        this.headers = headers;
        this.settings = settings;
    }

    /**
     * The admission queue in front of {@code router}, or null when {@code settings} leave it off (then the
     * proxy calls the router as the specification has it: an immediate 503 when nothing has room).
     *
     * @param timers the proxy's scheduler, for deadlines and rechecks (not closed by the queue)
     */
    public static ProxyFlow of(
            Router router, FlowSettings settings, FlowListener listener, ScheduledExecutorService timers) {
        if (!settings.enabled()) {
            return null;
        }
        FlowControl control = FlowControl.builder(router)
                .config(settings.toFlowConfig())
                .listener(listener)
                .scheduler(scheduler(timers))
                .build();
        return new ProxyFlow(control, settings.headers(), settings);
    }

    /** The queue itself (depths for gauges, tests). */
    public FlowControl control() {
        return control;
    }

    /**
     * A request's band, tenant (a digest, never the key), deadline and cost, from its headers.
     *
     * @param promptUnits the prompt's key length (characters, or tokens in token mode)
     * @return the inputs, or the 400 that answers an unusable header
     */
    public FlowHeaders.Parsed parse(HeaderView requestHeaders, long promptUnits) {
        return headers.parse(requestHeaders::first, promptUnits, 0);
    }

    /** Routes {@code request} now or puts it in line (see {@link FlowControl#submit}). */
    public FlowTicket submit(RouteRequest request, dev.cart.flow.FlowRequest flow) {
        return control.submit(request, flow);
    }

    /**
     * This queue's router was replaced: closes the queue now if nothing waits, else once nothing waits or
     * {@code max_wait_ms} (plus a recheck) has passed, whichever is first. A request still waiting then is
     * shed with 503 ({@code closed}).
     */
    public void retire(ScheduledExecutorService timers) {
        if (idle()) {
            control.close();
            return;
        }
        long until = System.nanoTime()
                + Duration.ofMillis(settings.maxWaitMs() + settings.recheckIntervalMs())
                        .toNanos();
        try {
            ScheduledFuture<?> unused = timers.schedule(
                    () -> retireLater(timers, until), settings.recheckIntervalMs(), TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException e) {
            control.close(); // the proxy is stopping
        }
    }

    private void retireLater(ScheduledExecutorService timers, long until) {
        if (idle() || System.nanoTime() - until >= 0) {
            control.close();
            return;
        }
        try {
            ScheduledFuture<?> unused = timers.schedule(
                    () -> retireLater(timers, until), settings.recheckIntervalMs(), TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException e) {
            control.close();
        }
    }

    /** Closes the queue now: waiting requests are shed with 503 ({@code closed}). */
    public void close() {
        control.close();
    }

    private boolean idle() {
        for (String m : control.models()) {
            if (control.depth(m) > 0) {
                return false;
            }
        }
        return true;
    }

    /** The proxy's scheduler as the library's {@link Scheduler}; closing it does not stop the executor. */
    static Scheduler scheduler(ScheduledExecutorService timers) {
        return new Scheduler() {
            @Override
            public Task schedule(Runnable task, Duration delay) {
                ScheduledFuture<?> f = timers.schedule(task, Math.max(0, delay.toNanos()), TimeUnit.NANOSECONDS);
                return () -> f.cancel(false);
            }

            @Override
            public void close() {}
        };
    }
}
