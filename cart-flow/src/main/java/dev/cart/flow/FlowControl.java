package dev.cart.flow;

import dev.cart.core.Reason;
import dev.cart.core.RouteDecision;
import dev.cart.core.RouteRequest;
import dev.cart.core.Router;
import dev.cart.core.spi.LeaseCompletion;
import dev.cart.core.spi.Match;
import dev.cart.core.spi.Replica;
import dev.cart.core.spi.Scheduler;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Flow control in front of a {@link Router}: a request that finds no replica with room waits in its
 * model's admission queue instead of failing, and gets the next slot that frees in the order of priority
 * band, tenant share and arrival; one that cannot make its deadline is shed at once with 429. Off
 * ({@link FlowConfig#enabled()} false, the default), every request goes straight to
 * {@link Router#choose}, as the specification has it.
 *
 * <pre>{@code
 * FlowControl flow = FlowControl.builder(router).config(FlowConfig.enabledDefaults()).build();
 * FlowHeaders headers = FlowHeaders.builder(flow.config()).build();
 * FlowHeaders.Parsed in = headers.parse(requestHeaders::get, promptTokens, maxTokens);
 * if (!in.ok()) { answer 400 with in.error(); return; }
 * FlowTicket t = flow.submit(RouteRequest.of(key).withModel(model), in.request());
 * t.whenCompleteAsync((r, e) -> {
 *     if (r == null) return;                     // cancelled: the client went away (t.cancel())
 *     if (r.admitted()) forward(r.decision());   // closes r.decision().lease() on every path
 *     else answer(r.status(), r.retryAfterSeconds());
 * }, eventLoop);
 * }</pre>
 *
 * <p>Slots: the flow control hears every lease of the router close ({@link Router#addSlotListener}), the
 * host's own leases too, and hands each freed slot to a waiting request on the closing thread. A request
 * admitted at once (its model's queue empty, a replica with room) costs one {@code Router.choose} and a
 * few reads; a host may also keep calling {@code Router.choose} directly for requests it does not want
 * queued, at the cost of their jumping the line.
 *
 * <p>Several instances sharing a pool ({@code cart-redis}) each queue their own requests: the admission
 * cap ({@code max_load}) is per instance, as in {@link Router}, so an instance's queue waits for its own
 * slots; the shared load view still steers each choice. Nothing orders requests across instances: bands
 * and tenant shares hold within each instance, and a tenant spread over n instances may get up to n
 * shares.
 *
 * <p>Concurrency: thread-safe and non-blocking: no call waits for a slot; a waiting request holds no
 * thread, only its {@link FlowTicket}. Time comes from the injected ticker, timers from the injected
 * {@link Scheduler}.
 */
public final class FlowControl implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(FlowControl.class);

    /**
     * A waiting request holds out for the replicas holding its prefix only when they hold at least this
     * share of its key (the cache-aware policy's default hit threshold): a shorter match is no hit anyway.
     */
    static final double AFFINITY_MIN_RATIO = 0.3;

    private static final String NO_MODEL = "";
    private static final Replica[] NO_HOLDERS = new Replica[0];

    private final Router router;
    private final FlowConfig config;
    private final FlowListener listener;
    private final LongSupplier ticker;
    private final Scheduler scheduler;
    private final boolean ownsScheduler;
    private final TenantLabels labels;
    private final Map<String, ModelQueue> queues = new ConcurrentHashMap<>();
    private final Consumer<LeaseCompletion> slotListener = this::leaseClosed;
    private final AtomicBoolean listenerFailed = new AtomicBoolean();
    private volatile boolean closed;

    private FlowControl(Builder b) {
        this.router = b.router;
        this.config = b.config;
        this.listener = b.listener;
        this.ticker = b.ticker;
        this.labels = new TenantLabels(config.tenantLabels());
        if (b.scheduler != null) {
            this.scheduler = b.scheduler;
            this.ownsScheduler = false;
        } else {
            this.scheduler = Scheduler.daemon("cart-flow");
            this.ownsScheduler = true;
        }
        if (config.enabled()) {
            router.addSlotListener(slotListener);
        }
    }

    /**
     * A builder for flow control in front of {@code router}.
     *
     * @param router the router requests are routed by
     * @return a new builder, with {@link FlowConfig#defaults()} (off)
     */
    public static Builder builder(Router router) {
        return new Builder(Objects.requireNonNull(router, "router"));
    }

    /** {@return the settings} */
    public FlowConfig config() {
        return config;
    }

    /**
     * Routes {@code request} now if a replica has room and nothing waits for its model, or puts it in line.
     * Never blocks and never throws for lack of room: the ticket completes at once (admitted, answered by
     * the router without a replica, or shed) or later (a slot freed, its deadline passed, it was displaced).
     *
     * @param request the request to route (its model selects the queue)
     * @param flow its band, tenant, deadline and cost
     * @return the request's ticket; {@link FlowTicket#cancel} takes it out of line
     * @throws RuntimeException whatever {@link Router#choose} throws (a policy's bug), for a request routed at once
     */
    public FlowTicket submit(RouteRequest request, FlowRequest flow) {
        Objects.requireNonNull(request, "request");
        Objects.requireNonNull(flow, "flow");
        int band = Math.min(flow.band(), config.bands() - 1);
        if (!config.enabled()) {
            return FlowTicket.completed(admittedAtOnce(router.choose(request), band, flow));
        }
        long now = ticker.getAsLong();
        if (closed) {
            return shedAtOnce(request, band, flow, ShedReason.CLOSED);
        }
        String key = request.model() == null ? NO_MODEL : request.model();
        ModelQueue q = queues.get(key);
        if (q == null || q.idle()) {
            int state = capacity(request);
            if (state != FULL
                    && (state != ROOM || q == null || !scarce(request.model()) || q.mayTakeNow(band, flow.tenant()))) {
                // room somewhere (or nothing serves the model, or nothing is up): the router answers
                RouteDecision d = router.choose(request);
                if (d.routed()
                        || d.reason() == Reason.MODEL_NOT_SERVED
                        || (state == NONE && capacity(request) == NONE)) {
                    if (d.routed()) {
                        // a model routed gets a queue (bounded by the models the pool serves): it counts the
                        // slots each tenant holds
                        queueFor(key).admittedAtOnce(d, flow.tenant());
                    }
                    return FlowTicket.completed(admittedAtOnce(d, band, flow));
                }
                // the room was taken meanwhile, or a replica that looked down was filling up: wait
            }
            // no room, or only the reserve is free and this request may not take it: wait
            if (q == null) {
                q = queueFor(key);
            }
        }
        long budget = config.maxWait().toNanos();
        if (flow.deadlineMillis() > 0) {
            budget = Math.min(budget, flow.deadlineMillis() * 1_000_000L);
        }
        FlowTicket ticket = new FlowTicket();
        Waiting w = new Waiting(ticket, request, flow, band, now, now + budget, holders(request));
        ticket.queued(q, w);
        q.enqueue(w);
        q.dispatch(); // a slot may have freed between the look above and the enqueue
        return ticket;
    }

    /**
     * Requests waiting in {@code model}'s queue now, every band.
     *
     * @param model the model as requests name it; null for requests that name none
     * @return the depth, 0 for a model nothing waited for yet
     */
    public int depth(@Nullable String model) {
        ModelQueue q = queues.get(model == null ? NO_MODEL : model);
        return q == null ? 0 : q.depth();
    }

    /**
     * Requests of {@code band} waiting in {@code model}'s queue now (a gauge: {@code model} and {@code band}
     * are bounded label values).
     *
     * @param model the model; null for requests that name none
     * @param band the band, 0 to {@code bands - 1}; 0 is returned for another
     * @return the depth
     */
    public int depth(@Nullable String model, int band) {
        ModelQueue q = queues.get(model == null ? NO_MODEL : model);
        return q == null ? 0 : q.depth(band);
    }

    /** {@return the models routed or queued so far (null for requests naming none), for gauges} */
    public List<@Nullable String> models() {
        List<@Nullable String> out = new ArrayList<>();
        for (String m : queues.keySet()) {
            out.add(m.isEmpty() ? null : m);
        }
        return Collections.unmodifiableList(out);
    }

    /**
     * Stops: every waiting request is shed ({@link ShedReason#CLOSED}, 503), and so is every later one;
     * the router no longer tells this flow control of freed slots. Admitted requests keep their leases.
     */
    @Override
    public void close() {
        closed = true;
        router.removeSlotListener(slotListener);
        for (ModelQueue q : queues.values()) {
            q.close();
        }
        if (ownsScheduler) {
            scheduler.close();
        }
    }

    // ---- what the queues ask ----

    Router router() {
        return router;
    }

    Scheduler scheduler() {
        return scheduler;
    }

    long now() {
        return ticker.getAsLong();
    }

    /** The replicas serving {@code model} (null: any) that have room now. */
    List<Replica> room(@Nullable String model) {
        List<? extends Replica> all = router.replicas().replicas();
        List<Replica> room = new ArrayList<>(2);
        for (int i = 0; i < all.size(); i++) {
            Replica r = all.get(i);
            if ((model == null || r.serves(model)) && r.isAvailable() && r.inFlight() < r.maxLoad()) {
                room.add(r);
            }
        }
        return room;
    }

    /** The replicas serving {@code model} that are at their cap (each frees a slot when a lease closes). */
    int fullSlots(@Nullable String model) {
        List<? extends Replica> all = router.replicas().replicas();
        int n = 0;
        for (int i = 0; i < all.size(); i++) {
            Replica r = all.get(i);
            if ((model == null || r.serves(model)) && r.inFlight() >= r.maxLoad()) {
                n++;
            }
        }
        return n;
    }

    /** The slots of the replicas serving {@code model} that are up (with room, or full). */
    int slots(@Nullable String model) {
        List<? extends Replica> all = router.replicas().replicas();
        int n = 0;
        for (int i = 0; i < all.size(); i++) {
            Replica r = all.get(i);
            if ((model == null || r.serves(model)) && (r.isAvailable() || r.inFlight() >= r.maxLoad())) {
                n += r.maxLoad();
            }
        }
        return n;
    }

    /**
     * Whether the free slots of {@code model}'s replicas are down to the reserve (one pass, no lock): only
     * then does a newcomer's band and tenant share decide whether it may take one.
     */
    private boolean scarce(@Nullable String model) {
        double ratio = config.reserveRatio();
        if (ratio == 0) {
            return false;
        }
        List<? extends Replica> all = router.replicas().replicas();
        int free = 0;
        int slots = 0;
        for (int i = 0; i < all.size(); i++) {
            Replica r = all.get(i);
            if (model != null && !r.serves(model)) {
                continue;
            }
            int max = r.maxLoad();
            int inFlight = r.inFlight();
            boolean available = r.isAvailable();
            if (available || inFlight >= max) {
                slots += max;
            }
            if (available && inFlight < max) {
                free += max - inFlight;
            }
        }
        return free <= (int) Math.floor(ratio * slots);
    }

    private static final int ROOM = 0;
    private static final int FULL = 1;
    private static final int NONE = 2;

    /**
     * For a newcomer: {@link #ROOM} when a replica it may use has room, {@link #FULL} when none has but one
     * is at its cap (it will free a slot), {@link #NONE} when no replica serves it or none is up.
     */
    private int capacity(RouteRequest request) {
        List<? extends Replica> all = router.replicas().replicas();
        String model = request.model();
        boolean full = false;
        for (int i = 0; i < all.size(); i++) {
            Replica r = all.get(i);
            if ((model != null && !r.serves(model)) || request.isExcluded(r)) {
                continue;
            }
            if (r.inFlight() >= r.maxLoad()) {
                full = true;
            } else if (r.isAvailable()) {
                return ROOM;
            } else if (r.inFlight() >= r.maxLoad()) {
                // filled between the two reads (isAvailable is false at the cap): full, not down. Read as
                // down, the newcomer was answered 503 without a replica instead of waiting (Lincheck's stress)
                full = true;
            }
        }
        return full ? FULL : NONE;
    }

    /** The replicas holding the longest matched prefix of the request's key, if it counts as a hit. */
    Replica[] holders(RouteRequest request) {
        if (config.affinityWait().isZero() || request.key().blockCount() == 0) {
            return NO_HOLDERS;
        }
        Match m = router.prefixHolders(request.key());
        if (m.holders().isEmpty() || m.ratio() < AFFINITY_MIN_RATIO) {
            return NO_HOLDERS;
        }
        List<Replica> out = new ArrayList<>(2);
        for (Match.Holding h : m.holders()) {
            Replica r = h.replica();
            if (h.matchedLength() == m.matchedLength()
                    && (request.model() == null || r.serves(request.model()))
                    && !request.isExcluded(r)) {
                out.add(r);
            }
        }
        return out.toArray(NO_HOLDERS);
    }

    private ModelQueue queueFor(String key) {
        return queues.computeIfAbsent(key, m -> new ModelQueue(m.isEmpty() ? null : m, this));
    }

    private void leaseClosed(LeaseCompletion c) {
        RouteDecision d = c.decision();
        String model = d.model();
        // every model routed gets a queue (bounded by the models the pool serves), so it knows its lease times
        // before its first request waits
        queueFor(model == null ? NO_MODEL : model).leaseClosed(d, c.durationNanos());
        Replica freed = d.replica();
        for (ModelQueue q : queues.values()) {
            if (q.model == null || freed == null || freed.serves(q.model)) {
                q.signal();
            }
        }
    }

    // ---- outcomes ----

    private FlowResult admittedAtOnce(RouteDecision d, int band, FlowRequest flow) {
        if (d.routed()) {
            String label = labels.admitted(flow.tenant(), flow.cost());
            try {
                listener.onAdmitted(d.model(), band, label, 0, flow.cost());
            } catch (RuntimeException e) {
                listenerFailed(e);
            }
        }
        return FlowResult.decided(d, 0, band, flow.tenant());
    }

    private FlowTicket shedAtOnce(RouteRequest request, int band, FlowRequest flow, ShedReason reason) {
        try {
            listener.onShed(request.model(), band, labels.label(flow.tenant()), reason, 0);
        } catch (RuntimeException e) {
            listenerFailed(e);
        }
        return FlowTicket.completed(FlowResult.shed(reason, 0, 1, band, flow.tenant()));
    }

    void queued(ModelQueue q, Waiting w) {
        try {
            listener.onQueued(q.model, w.band);
        } catch (RuntimeException e) {
            listenerFailed(e);
        }
    }

    void shed(ModelQueue q, Waiting w, ShedReason reason, long queuedNanos, long retryAfterSeconds) {
        w.ticket.settle(FlowResult.shed(reason, queuedNanos, retryAfterSeconds, w.band, w.flow.tenant()));
        try {
            listener.onShed(q.model, w.band, labels.label(w.flow.tenant()), reason, queuedNanos);
        } catch (RuntimeException e) {
            listenerFailed(e);
        }
    }

    /** {@code w} was routed (or answered without a replica): complete its ticket, or give the slot back. */
    void decided(ModelQueue q, Waiting w, RouteDecision d) {
        long queued = now() - w.enqueuedAt;
        if (!w.ticket.settle(FlowResult.decided(d, queued, w.band, w.flow.tenant()))) {
            d.lease().close(); // cancelled while it was being routed: the slot goes back unused
            cancelled(q, w);
            return;
        }
        if (d.routed()) {
            try {
                listener.onAdmitted(
                        q.model, w.band, labels.admitted(w.flow.tenant(), w.flow.cost()), queued, w.flow.cost());
            } catch (RuntimeException e) {
                listenerFailed(e);
            }
        }
    }

    void cancelled(ModelQueue q, Waiting w) {
        try {
            listener.onCancelled(q.model, w.band, now() - w.enqueuedAt);
        } catch (RuntimeException e) {
            listenerFailed(e);
        }
    }

    private void listenerFailed(RuntimeException e) {
        if (listenerFailed.compareAndSet(false, true)) {
            LOG.warn(
                    "flow listener {} threw; ignoring this and later failures",
                    listener.getClass().getName(),
                    e);
        }
    }

    /** For tests: the queue of {@code model}, or null. */
    @Nullable
    ModelQueue queue(@Nullable String model) {
        return queues.get(model == null ? NO_MODEL : model);
    }

    /** Builds a {@link FlowControl}; only the router is required. */
    public static final class Builder {
        private final Router router;
        private FlowConfig config = FlowConfig.defaults();
        private FlowListener listener = FlowListener.NONE;
        private LongSupplier ticker = System::nanoTime;
        private @Nullable Scheduler scheduler;

        private Builder(Router router) {
            this.router = router;
        }

        /**
         * The settings ({@link FlowConfig#defaults()}, off, by default).
         *
         * @param config the settings
         * @return this builder
         */
        public Builder config(FlowConfig config) {
            this.config = Objects.requireNonNull(config);
            return this;
        }

        /**
         * Hears queueing, admissions, sheds and cancellations (for metrics); none by default.
         *
         * @param listener the listener
         * @return this builder
         */
        public Builder listener(FlowListener listener) {
            this.listener = Objects.requireNonNull(listener);
            return this;
        }

        /**
         * Monotonic nanoseconds for waits and deadlines; {@link System#nanoTime()} by default.
         *
         * @param ticker monotonic nanoseconds
         * @return this builder
         */
        public Builder ticker(LongSupplier ticker) {
            this.ticker = Objects.requireNonNull(ticker);
            return this;
        }

        /**
         * Where deadline and recheck timers run; by default a daemon thread owned (and closed) by the flow
         * control. Its timers run the queue's hand-outs, so they must not block.
         *
         * @param scheduler the timers' scheduler
         * @return this builder
         */
        public Builder scheduler(Scheduler scheduler) {
            this.scheduler = Objects.requireNonNull(scheduler);
            return this;
        }

        /** {@return builds the flow control and subscribes it to the router's freed slots} */
        public FlowControl build() {
            return new FlowControl(this);
        }
    }
}
