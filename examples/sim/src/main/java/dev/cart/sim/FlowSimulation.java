package dev.cart.sim;

import dev.cart.core.Lease;
import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.ReplicaSpec;
import dev.cart.core.RouteDecision;
import dev.cart.core.RouteRequest;
import dev.cart.core.Router;
import dev.cart.core.ServedUsage;
import dev.cart.core.spi.Scheduler;
import dev.cart.flow.FlowConfig;
import dev.cart.flow.FlowControl;
import dev.cart.flow.FlowRequest;
import dev.cart.flow.FlowResult;
import dev.cart.flow.FlowTicket;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.SplittableRandom;

/**
 * One overload scenario on a virtual clock: the real {@link Router}, with {@link FlowControl} in front of
 * it or not (the specification's immediate 503), over simulated vLLM replicas ({@link Engine}).
 *
 * <p>Design: a discrete-event loop like {@link Simulation}'s, with a third kind of event, a task, which
 * carries the flow control's timers (its {@link Scheduler} is this loop) and the hand-over of a completed
 * ticket: a ticket completes inside a lease's close (a replica's step) or a timer, and the request it
 * admits is queued on its engine by a task at the same virtual time, never from inside another engine's
 * step. Each request belongs to a class (a tenant, or a band) for the figures; a request's time to first
 * token is counted from its arrival, its wait in the queue included; a shed or refused request's time to
 * its answer likewise. A run ends by checking that every lease was closed.
 *
 * <p>Clients behave like the official SDKs: a request answered 429 or 503 is sent again after the answer's
 * {@code Retry-After} (1 s for the router's 503, as the proxy and the gateway answer it), up to
 * {@link Setup#retries()} times, unless that would start after its deadline; its times still count from its
 * first arrival, and each try gives the queue what is left of the request's queue budget. A request counts
 * as refused when it got at least one 429 or 503 (whether a retry was then served or not), and its time to
 * refusal is that of its first.
 *
 * <p>Not thread-safe; one run per instance.
 */
final class FlowSimulation {

    /** What one run measures, per class of request. */
    record ClassResult(
            int sent,
            int served,
            int refused,
            double[] ttftMillis,
            double[] refusedAfterMillis,
            int withinDeadline,
            long promptTokens,
            long cachedTokens,
            double[] queuedMillis) {

        double p99() {
            return quantile(ttftMillis, 0.99);
        }

        double medianRefusal() {
            return quantile(refusedAfterMillis, 0.5);
        }
    }

    /** How the router and its host are set up for a run. */
    record Setup(
            String policy,
            FlowConfig flow,
            int replicas,
            int maxLoad,
            long seed,
            long deadlineMillis,
            long queueBudgetMillis,
            int retries) {}

    static final boolean TRACE = Boolean.getBoolean("flow.trace");

    private static final int ARRIVAL = 0;
    private static final int STEP_END = 1;
    private static final int TASK = 2;

    private final PreparedWorkload w;
    private final Setup setup;
    private final int[] classOf;
    private final int[] bandOf;
    private final String[] tenantOf;
    private final boolean[] include;
    private final int classes;
    private final int closedClients;

    private final VirtualClock clock = new VirtualClock();
    private final PriorityQueue<Event> events = new PriorityQueue<>();
    private long seq;
    private Engine[] engines;
    private boolean[] stepping;
    private ManagedReplicaSet set;
    private Router router;
    private FlowControl flow;
    private int nextClosed;
    private long firstArrival = Long.MAX_VALUE;
    private long lastFinish;
    private int completed;

    // per request
    private final long[] arrival;
    private final long[] firstToken;
    private final long[] refusedAt;
    private final int[] cached;
    private final long[] queued;
    private final int[] tries;

    /**
     * @param classOf       each request's class (for the figures), 0 to {@code classes - 1}
     * @param bandOf        each request's priority band
     * @param tenantOf      each request's tenant
     * @param include       which requests are sent at all (the others are left out of the run)
     * @param closedClients 0 for the workload's arrival times, n for n clients sending back to back
     */
    FlowSimulation(
            PreparedWorkload w,
            Setup setup,
            int[] classOf,
            int classes,
            int[] bandOf,
            String[] tenantOf,
            boolean[] include,
            int closedClients) {
        this.w = w;
        this.setup = setup;
        this.classOf = classOf;
        this.classes = classes;
        this.bandOf = bandOf;
        this.tenantOf = tenantOf;
        this.include = include;
        this.closedClients = closedClients;
        int n = w.size();
        arrival = new long[n];
        firstToken = new long[n];
        refusedAt = new long[n];
        cached = new int[n];
        queued = new long[n];
        tries = new int[n];
        Arrays.fill(arrival, -1);
        Arrays.fill(firstToken, -1);
        Arrays.fill(refusedAt, -1);
    }

    private static final class Event implements Comparable<Event> {
        final long time;
        final long seq;
        final int kind;
        final int index;
        final Runnable task;
        boolean cancelled;

        Event(long time, long seq, int kind, int index, Runnable task) {
            this.time = time;
            this.seq = seq;
            this.kind = kind;
            this.index = index;
            this.task = task;
        }

        @Override
        public int compareTo(Event o) {
            int c = Long.compare(time, o.time);
            return c != 0 ? c : Long.compare(seq, o.seq);
        }
    }

    private Event push(long time, int kind, int index, Runnable task) {
        Event e = new Event(time, seq++, kind, index, task);
        events.add(e);
        return e;
    }

    /** The loop's scheduler: a timer is a task event at the virtual time it is due. */
    private final Scheduler scheduler = new Scheduler() {
        @Override
        public Task schedule(Runnable task, Duration delay) {
            Event e = push(clock.nanos() + Math.max(0, delay.toNanos()), TASK, -1, task);
            return () -> e.cancelled = true;
        }
    };

    /** Requests arriving before this (virtual nanoseconds from the start) are warm-up: left out of {@link #steady}. */
    static final long WARM_UP_NANOS = 5_000_000_000L;

    private ClassResult[] steady;

    /** The results by class of the requests that arrived after the warm-up ({@link #WARM_UP_NANOS}); after {@link #run}. */
    ClassResult[] steady() {
        return steady;
    }

    /** Runs the scenario; the results by class. */
    ClassResult[] run() {
        ManagedReplicaSet.Builder sb = ManagedReplicaSet.builder().clock(clock);
        for (int i = 0; i < setup.replicas(); i++) {
            sb.add(new ReplicaSpec("replica-" + i, setup.maxLoad(), 0));
        }
        set = sb.build();
        SplittableRandom rnd = new SplittableRandom(setup.seed());
        router = Router.builder()
                .replicas(set)
                .policy(setup.policy(), Map.of())
                .random(() -> rnd)
                .clock(clock)
                .ticker(clock::nanos)
                .evictionInterval(Duration.ZERO)
                .firstTokenReports(true)
                .keyFormat(w.keyUnit(), RequestKeys.blockSize(w.keyUnit()))
                .build();
        flow = FlowControl.builder(router)
                .config(setup.flow())
                .ticker(clock::nanos)
                .scheduler(scheduler)
                .listener(
                        TRACE
                                ? new dev.cart.flow.FlowListener() {
                                    @Override
                                    public void onQueued(String model, int band) {
                                        System.out.printf(
                                                "%d queued band=%d depth=%d%n",
                                                clock.nanos() / 1_000_000, band, flow.depth(null));
                                    }

                                    @Override
                                    public void onAdmitted(
                                            String model, int band, String tenant, long queuedNanos, long cost) {
                                        System.out.printf(
                                                "%d admitted %s waited=%d%n",
                                                clock.nanos() / 1_000_000, tenant, queuedNanos / 1_000_000);
                                    }
                                }
                                : dev.cart.flow.FlowListener.NONE)
                .build();
        engines = new Engine[setup.replicas()];
        stepping = new boolean[setup.replicas()];
        for (int i = 0; i < engines.length; i++) {
            engines[i] = new Engine(EngineConfig.defaults());
        }
        int n = w.size();
        if (closedClients > 0) {
            for (int k = 0; k < closedClients; k++) {
                nextArrival(0);
            }
        } else {
            for (int i = 0; i < n; i++) {
                if (include[i]) {
                    push(w.arrivals[i], ARRIVAL, i, null);
                }
            }
        }
        Event e;
        while ((e = events.poll()) != null) {
            if (e.cancelled) {
                continue;
            }
            clock.set(Math.max(clock.nanos(), e.time));
            if (e.kind == ARRIVAL) {
                arrive(e.index);
            } else if (e.kind == STEP_END) {
                stepEnded(e.index);
            } else {
                e.task.run();
            }
        }
        flow.close();
        router.close();
        if (set.totalInFlight() != 0) {
            throw new IllegalStateException("leases left open after the run: " + set.totalInFlight());
        }
        steady = results(WARM_UP_NANOS);
        return results(0);
    }

    /** Closed loop: the next request not sent yet, at {@code t}. */
    private void nextArrival(long t) {
        while (nextClosed < w.size() && !include[nextClosed]) {
            nextClosed++;
        }
        if (nextClosed < w.size()) {
            push(t, ARRIVAL, nextClosed++, null);
        }
    }

    private void arrive(int i) {
        long now = clock.nanos();
        if (arrival[i] < 0) {
            arrival[i] = now;
        }
        firstArrival = Math.min(firstArrival, now);
        RouteRequest req = RouteRequest.of(w.keys[i]).withModel(w.models[i]);
        long budget = setup.queueBudgetMillis() - (now - arrival[i]) / 1_000_000L;
        if (budget < 1) {
            finished(now); // a retry with nothing left of its budget: the client gives up
            return;
        }
        FlowRequest fr = new FlowRequest(bandOf[i], tenantOf[i], budget, (long) w.promptTokens[i] + w.maxTokens[i]);
        FlowTicket t = flow.submit(req, fr);
        if (t.isDone()) {
            handle(i, t.join());
        } else {
            var unused = t.whenComplete((r, x) -> push(clock.nanos(), TASK, i, () -> handle(i, r)));
        }
    }

    private void handle(int i, FlowResult r) {
        long now = clock.nanos();
        if (r == null || !r.admitted()) {
            if (refusedAt[i] < 0) {
                refusedAt[i] = now;
            }
            long retryAt = r == null ? -1 : now + Math.max(1, r.retryAfterSeconds()) * 1_000_000_000L;
            if (retryAt >= 0
                    && tries[i] < setup.retries()
                    && retryAt < arrival[i] + setup.deadlineMillis() * 1_000_000L) {
                tries[i]++;
                push(retryAt, ARRIVAL, i, null); // the SDK's retry, after the answer's Retry-After
            } else {
                finished(now);
            }
            return;
        }
        RouteDecision d = r.decision();
        queued[i] = r.queuedNanos();
        int rep = indexOf(d);
        EngineRequest er = new EngineRequest(w.blocks[i], w.promptTokens[i], w.maxTokens[i], new Sink(i, d.lease()));
        if (engines[rep].submit(er, now) && !stepping[rep]) {
            startStep(rep, now);
        }
    }

    private int indexOf(RouteDecision d) {
        return set.replicas().indexOf(d.replica());
    }

    private void finished(long t) {
        lastFinish = Math.max(lastFinish, t);
        if (closedClients > 0) {
            nextArrival(t);
        }
    }

    private void startStep(int rep, long t) {
        long d = engines[rep].planStep(t);
        if (d < 0) {
            stepping[rep] = false;
            return;
        }
        stepping[rep] = true;
        push(t + d, STEP_END, rep, null);
    }

    private void stepEnded(int rep) {
        long t = clock.nanos();
        engines[rep].completeStep(t);
        if (engines[rep].hasWork()) {
            startStep(rep, t);
        } else {
            stepping[rep] = false;
        }
    }

    /** A request's life in its engine: first token and end reported to its lease, as a host does. */
    private final class Sink implements EngineRequest.Sink {
        final int index;
        final Lease lease;

        Sink(int index, Lease lease) {
            this.index = index;
            this.lease = lease;
        }

        @Override
        public void onToken(EngineRequest r, long nanos) {
            if (r.generated() == 1) {
                firstToken[index] = nanos;
                lease.firstToken();
            }
        }

        @Override
        public void onFinished(EngineRequest r, long nanos) {
            cached[index] = r.cachedTokens();
            completed++;
            try (lease) {
                lease.succeeded(new ServedUsage(r.promptTokens, r.cachedTokens()));
            }
            finished(nanos);
        }

        @Override
        public void onRejected(EngineRequest r, String message) {
            try (lease) {
                lease.succeeded();
            }
            refusedAt[index] = clock.nanos();
            finished(clock.nanos());
        }
    }

    /** Requests completed per second over the run (for the capacity of a closed loop). */
    double throughput() {
        long span = lastFinish - (firstArrival == Long.MAX_VALUE ? 0 : firstArrival);
        return span <= 0 ? 0 : completed / (span / 1e9);
    }

    private ClassResult[] results(long from) {
        ClassResult[] out = new ClassResult[classes];
        long deadline = setup.deadlineMillis() * 1_000_000L;
        for (int c = 0; c < classes; c++) {
            int sent = 0;
            int served = 0;
            int refused = 0;
            int within = 0;
            long prompt = 0;
            long hit = 0;
            double[] ttft = new double[w.size()];
            double[] refusal = new double[w.size()];
            double[] wait = new double[w.size()];
            for (int i = 0; i < w.size(); i++) {
                if (classOf[i] != c || arrival[i] < from) {
                    continue;
                }
                sent++;
                if (firstToken[i] >= 0) {
                    long t = firstToken[i] - arrival[i];
                    wait[served] = queued[i] / 1e6;
                    ttft[served++] = t / 1e6;
                    if (t <= deadline) {
                        within++;
                    }
                    prompt += w.promptTokens[i];
                    hit += Math.max(0, cached[i]);
                }
                if (refusedAt[i] >= 0) {
                    refusal[refused++] = (refusedAt[i] - arrival[i]) / 1e6;
                }
            }
            double[] t = Arrays.copyOf(ttft, served);
            double[] r = Arrays.copyOf(refusal, refused);
            double[] q = Arrays.copyOf(wait, served);
            Arrays.sort(t);
            Arrays.sort(r);
            Arrays.sort(q);
            out[c] = new ClassResult(sent, served, refused, t, r, within, prompt, hit, q);
        }
        return out;
    }

    /** The {@code q}-quantile of sorted {@code v} by nearest rank; NaN for none. */
    static double quantile(double[] v, double q) {
        if (v.length == 0) {
            return Double.NaN;
        }
        int rank = (int) Math.ceil(q * v.length);
        return v[Math.max(0, Math.min(v.length - 1, rank - 1))];
    }
}
