package dev.cart.flow;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import dev.cart.core.Reason;
import dev.cart.core.RouteDecision;
import dev.cart.core.spi.Replica;
import dev.cart.core.spi.Scheduler;
import java.time.Duration;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The admission queue of one model: the requests that found no replica with room, waiting in the order
 * of {@link FairLines} for the next free slot.
 *
 * <p>Design. Handing out ({@link #dispatch}): while some replica serving the model has room, the queue
 * picks the first waiting request, in order, that accepts one of the replicas with room: a request whose
 * prefix nobody holds; one whose holder has room; one whose holders are down; one whose holders have more
 * than {@code hot_spot_depth} requests waiting for them while its prefix has fewer than
 * {@code hot_spot_max_holders} holders (spreading a hot prefix); one that has waited
 * {@code affinity_wait} since it was first offered a replica that is not its holder. A request handed to
 * a replica that did not hold its prefix makes it a holder; waiting requests look their holders up again
 * (a tree match) the next time they are offered a replica after such a spread. The picked request is
 * routed by {@code Router.choose} outside the lock; if the slot was taken meanwhile the request goes back
 * to the head of its line. A dispatcher picks only while there are more free slots than requests being
 * handed one (picked, not yet routed): two dispatchers never race for the last slot, so a request picked
 * later cannot win it from one picked earlier. A version number, bumped by every signal of room, tells a dispatcher whose
 * attempt failed whether room appeared while it was routing (it tries again) or not (the next signal
 * will). A timer per queue looks again every {@code recheck_interval} while requests wait, for room nobody
 * signalled (a replica back to health, a circuit half open), and when an affinity window ends.
 *
 * <p>Reserve: the queue counts the slots each tenant holds (the leases it admitted, until they close). When
 * no more slots are free than {@code reserve_ratio} of the model's slots, only a request of band 0 or of a
 * tenant below its even share of the other slots takes one, at once or from the line; the others wait (they
 * are skipped by the pick, and looked at again when a slot frees).
 *
 * <p>Early shedding: a newcomer's expected wait is the number of requests that would go before it
 * ({@link FairLines#ahead}, plus those being handed a slot) times the mean gap between freed slots seen while
 * requests waited, or, until {@link #MIN_GAPS} were seen, the mean time a lease of the model holds its slot
 * over the model's slots (Little's law, with the lease times measured so far); longer than its deadline, it
 * is shed at once. At {@code max_depth} a newcomer displaces a request of a lower band, or of
 * a tenant with a longer line ({@link FairLines#victimFor}), or is shed. Each waiting request has a timer
 * at its deadline.
 *
 * <p>Concurrency: one lock (this object's monitor) guards all state; it is held for list and counter
 * updates only, never while routing, completing a ticket or calling a listener.
 */
final class ModelQueue {

    /** Weight of the newest lease duration in the running mean. */
    private static final double DURATION_WEIGHT = 0.05;

    /** Gaps between freed slots seen while requests waited before the expected wait is taken from them. */
    static final int MIN_GAPS = 8;

    final @Nullable String model;
    private final FlowControl owner;
    private final FlowConfig config;

    @GuardedBy("this")
    private final FairLines lines;

    @GuardedBy("this")
    private int handing;

    @GuardedBy("this")
    private long version;

    @GuardedBy("this")
    private Scheduler.@Nullable Task wake;

    @GuardedBy("this")
    private long wakeAt = Long.MAX_VALUE;

    /** Running mean of lease durations for this model, nanoseconds; 0 until one closed. */
    @GuardedBy("this")
    private double meanLeaseNanos;

    @GuardedBy("this")
    private boolean closed;

    /** When a look first found every replica of the model down; -1 while some is up. */
    @GuardedBy("this")
    private long downSince = -1;

    /** Requests handed to a replica that did not hold their prefix: each made a new holder. */
    @GuardedBy("this")
    private long spreads;

    /** Per tenant, the leases of this model admitted here and still open (kept when a reserve is set). */
    @GuardedBy("this")
    private final Map<String, int[]> held = new HashMap<>();

    /** The tenant of each lease counted in {@link #held}, by its decision. */
    @GuardedBy("this")
    private final IdentityHashMap<RouteDecision, String> open = new IdentityHashMap<>();

    /** Running mean of the gaps between freed slots while requests waited, nanoseconds; 0 until measured. */
    @GuardedBy("this")
    private double meanGapNanos;

    @GuardedBy("this")
    private int gaps;

    /** When the last slot freed while requests waited; -1 when the last one freed with none waiting. */
    @GuardedBy("this")
    private long lastBusyRelease = -1;

    ModelQueue(@Nullable String model, FlowControl owner) {
        this.model = model;
        this.owner = owner;
        this.config = owner.config();
        this.lines = new FairLines(config.bands(), config.maxDepth());
    }

    /** True when nothing waits or is being handed a slot: a newcomer may go straight to the router. */
    synchronized boolean idle() {
        return lines.size() == 0 && handing == 0;
    }

    synchronized int depth() {
        return lines.size();
    }

    synchronized int depth(int band) {
        return lines.size(band);
    }

    /**
     * Puts {@code w} in line, or sheds it (or another request, displaced) when the queue is full or its
     * deadline cannot be met. Completes what it sheds, outside the lock.
     */
    void enqueue(Waiting w) {
        Waiting displaced = null;
        ShedReason shed = null;
        long retry = 1;
        synchronized (this) {
            if (w.withdrawn) {
                w.state = Waiting.DONE;
                return;
            }
            long now = owner.now();
            if (closed) {
                shed = ShedReason.CLOSED;
            } else {
                long expected = expectedWaitNanos(lines.ahead(w.band, w.flow.tenant()) + handing);
                if (expected >= 0 && expected > w.deadlineAt - now) {
                    shed = ShedReason.DEADLINE;
                    retry = retryAfter(expected);
                } else if (lines.size() >= config.maxDepth()) {
                    displaced = lines.victimFor(w.band, w.flow.tenant());
                    if (displaced == null) {
                        shed = ShedReason.QUEUE_FULL;
                        retry = retryAfter(expectedWaitNanos(lines.size() + 1));
                    } else {
                        lines.remove(displaced);
                        displaced.state = Waiting.DONE;
                        retry = retryAfter(expectedWaitNanos(lines.size() + 1));
                    }
                }
            }
            if (shed == null) {
                w.enqueuedAt = now;
                w.holdersAt = spreads;
                lines.add(w);
                w.state = Waiting.WAITING;
                w.expiry =
                        owner.scheduler().schedule(() -> expire(w), Duration.ofNanos(Math.max(0, w.deadlineAt - now)));
                ensureWake(now + config.recheckInterval().toNanos());
            } else {
                w.state = Waiting.DONE;
            }
        }
        if (shed != null) {
            owner.shed(this, w, shed, 0, retry);
            return;
        }
        owner.queued(this, w);
        if (displaced != null) {
            cancelTimer(displaced);
            owner.shed(this, displaced, ShedReason.DISPLACED, owner.now() - displaced.enqueuedAt, retry);
        }
    }

    /**
     * A lease of this model closed after {@code nanos}: the mean lease time learns it, and, while requests
     * wait, the mean gap between freed slots; a lease admitted here no longer counts for its tenant.
     */
    synchronized void leaseClosed(RouteDecision d, long nanos) {
        double n = Math.max(1, nanos);
        meanLeaseNanos = meanLeaseNanos == 0 ? n : meanLeaseNanos + DURATION_WEIGHT * (n - meanLeaseNanos);
        if (lines.size() > 0 || handing > 0) {
            long now = owner.now();
            if (lastBusyRelease >= 0) {
                double gap = Math.max(1, now - lastBusyRelease);
                meanGapNanos = gaps == 0 ? gap : meanGapNanos + DURATION_WEIGHT * (gap - meanGapNanos);
                gaps++;
            }
            lastBusyRelease = now;
        } else {
            lastBusyRelease = -1;
        }
        if (!open.isEmpty()) {
            String tenant = open.remove(d);
            if (tenant != null) {
                int[] c = held.get(tenant);
                if (c != null && --c[0] == 0) {
                    held.remove(tenant);
                }
            }
        }
    }

    /** {@code d} was admitted for {@code tenant}: it holds one more of the model's slots until it closes. */
    @GuardedBy("this")
    private void hold(RouteDecision d, String tenant) {
        if (config.reserveRatio() > 0 && d.routed()) {
            open.put(d, tenant);
            held.computeIfAbsent(tenant, t -> new int[1])[0]++;
        }
    }

    /** A request routed at once (nothing waited) for {@code tenant}: see {@link #hold}. */
    synchronized void admittedAtOnce(RouteDecision d, String tenant) {
        hold(d, tenant);
    }

    /**
     * Whether a newcomer of {@code band} and {@code tenant} may take a free slot now, nothing waiting: always,
     * unless the free slots are down to the reserve and it is neither of band 0 nor below its share.
     */
    synchronized boolean mayTakeNow(int band, String tenant) {
        if (config.reserveRatio() == 0 || band == 0) {
            return true;
        }
        int slots = owner.slots(model);
        return mayTake(held, band, tenant, free(owner.room(model)) - handing, slots, reserve(slots));
    }

    /** The slots held back for band 0 and tenants below their share, of {@code slots}. */
    private int reserve(int slots) {
        return (int) Math.floor(config.reserveRatio() * slots);
    }

    /**
     * Whether a request may take one of {@code free} slots (free now, less those being handed out) of
     * {@code slots}: yes while more than {@code reserve} are free; with fewer, only a request of band 0 or
     * of a tenant holding fewer than its even share of the unreserved slots ({@code held}: the slots each
     * tenant holds; called under this queue's lock).
     */
    private static boolean mayTake(Map<String, int[]> held, int band, String tenant, int free, int slots, int reserve) {
        if (reserve == 0 || band == 0 || free > reserve) {
            return true;
        }
        int[] c = held.get(tenant);
        int mine = c == null ? 0 : c[0];
        int tenants = held.size() + (c == null ? 1 : 0);
        return (long) mine * tenants < slots - reserve;
    }

    /** Room may have appeared (a slot freed): hand it out. */
    void signal() {
        synchronized (this) {
            version++;
            if (lines.size() == 0) {
                return;
            }
        }
        dispatch();
    }

    /** Hands out slots while some replica has room and some waiting request accepts one. */
    void dispatch() {
        for (; ; ) {
            Waiting w;
            long v;
            List<Waiting> unavailable = null;
            synchronized (this) {
                if (lines.size() == 0 || closed) {
                    return;
                }
                List<Replica> room = owner.room(model);
                if (room.isEmpty()) {
                    // nothing has room and nothing is full: all down. Judged on two looks a recheck apart (a
                    // slot freed between the two reads of one look would pass for a replica down)
                    if (owner.fullSlots(model) == 0 && owner.room(model).isEmpty()) {
                        long now = owner.now();
                        if (downSince < 0) {
                            downSince = now;
                        } else if (now - downSince >= config.recheckInterval().toNanos()) {
                            unavailable = lines.removeAll();
                            for (Waiting u : unavailable) {
                                u.state = Waiting.DONE;
                            }
                        }
                    } else {
                        downSince = -1;
                    }
                    w = null;
                    v = 0;
                } else if (free(room) <= handing) {
                    // every free slot is already being handed to a request picked earlier: another pick now
                    // would race it for the slot, and a later request could win it
                    downSince = -1;
                    return;
                } else {
                    downSince = -1;
                    long now = owner.now();
                    long[] nextWindow = {Long.MAX_VALUE};
                    FairLines inLine = lines; // the lambda runs here, under this lock
                    long spread = spreads;
                    int slots = owner.slots(model);
                    int reserve = config.reserveRatio() == 0 ? 0 : reserve(slots);
                    int free = free(room) - handing;
                    Map<String, int[]> holding = held;
                    w = inLine.first(x -> mayTake(holding, x.band, x.flow.tenant(), free, slots, reserve)
                            && accepts(x, inLine, room, now, spread, nextWindow));
                    if (nextWindow[0] != Long.MAX_VALUE) {
                        ensureWake(nextWindow[0]);
                    }
                    if (w == null) {
                        return;
                    }
                    lines.remove(w);
                    w.state = Waiting.HANDING;
                    handing++;
                    v = version;
                }
            }
            if (unavailable != null) {
                for (Waiting u : unavailable) {
                    cancelTimer(u);
                    owner.shed(this, u, ShedReason.UNAVAILABLE, owner.now() - u.enqueuedAt, 1);
                }
                return;
            }
            if (w == null || !handOut(w, v)) {
                return;
            }
        }
    }

    /**
     * Routes {@code w} (picked, out of its line). Returns true if the dispatcher should look for the next
     * request, false if it should stop (the slot was gone and no room was signalled meanwhile).
     */
    private boolean handOut(Waiting w, long v) {
        RouteDecision d;
        try {
            d = owner.router().choose(w.request);
        } catch (RuntimeException | Error e) {
            synchronized (this) {
                handing--;
                w.state = Waiting.DONE;
            }
            cancelTimer(w);
            w.ticket.fail(e);
            throw e;
        }
        boolean finished;
        boolean again = true;
        synchronized (this) {
            handing--;
            if (d.routed()) {
                lines.charge(w);
                hold(d, w.flow.tenant());
                Replica chosen = d.replica();
                if (w.holders.length > 0 && chosen != null && !contains(w.holders, chosen)) {
                    spreads++; // the prefix has a new holder: those waiting for it look their holders up again
                }
                finished = true;
            } else {
                finished = w.withdrawn || d.reason() == Reason.MODEL_NOT_SERVED;
            }
            if (finished) {
                w.state = Waiting.DONE;
            } else {
                lines.addFirst(w); // the slot went elsewhere: back to the head of its line
                w.state = Waiting.WAITING;
                again = version != v;
            }
        }
        if (finished) {
            cancelTimer(w);
            owner.decided(this, w, d);
        }
        return again;
    }

    /**
     * Whether {@code w} takes a slot on one of {@code room} now (see the class comment); called under this
     * queue's lock with its {@code lines}. Notes in {@code nextWindow} when a declined request's window ends.
     */
    private boolean accepts(Waiting w, FairLines lines, List<Replica> room, long now, long spreads, long[] nextWindow) {
        if (w.holders.length == 0 || config.affinityWait().isZero()) {
            return true;
        }
        if (w.holdersAt != spreads && !anyIn(w.holders, room)) {
            lines.rehold(w, owner.holders(w.request)); // a prefix spread since it looked: maybe its own
            w.holdersAt = spreads;
            if (w.holders.length == 0) {
                return true;
            }
        }
        Replica[] holders = w.holders;
        boolean canFree = false;
        int line = Integer.MAX_VALUE;
        for (Replica h : holders) {
            if (contains(room, h)) {
                return true;
            }
            // a holder at its cap frees a slot when a lease closes; one below it without room is down
            if (!w.request.isExcluded(h) && h.inFlight() >= h.maxLoad()) {
                canFree = true;
                line = Math.min(line, lines.waitingFor(h));
            }
        }
        if (!canFree) {
            return true;
        }
        if (holders.length < config.hotSpotMaxHolders() && line > config.hotSpotDepth()) {
            return true; // a hot prefix whose holders are saturated: spread it to a replica with room
        }
        if (w.affinityUntil < 0) {
            w.affinityUntil = now + config.affinityWait().toNanos();
        }
        if (now >= w.affinityUntil) {
            return true;
        }
        nextWindow[0] = Math.min(nextWindow[0], w.affinityUntil);
        return false;
    }

    /** The free slots of {@code room}. */
    private static int free(List<Replica> room) {
        int n = 0;
        for (int i = 0; i < room.size(); i++) {
            Replica r = room.get(i);
            n += Math.max(0, r.maxLoad() - r.inFlight());
        }
        return n;
    }

    private static boolean anyIn(Replica[] holders, List<Replica> room) {
        for (Replica h : holders) {
            if (contains(room, h)) {
                return true;
            }
        }
        return false;
    }

    private static boolean contains(Replica[] holders, Replica r) {
        for (Replica h : holders) {
            if (h == r) {
                return true;
            }
        }
        return false;
    }

    private static boolean contains(List<Replica> room, Replica r) {
        for (int i = 0; i < room.size(); i++) {
            if (room.get(i) == r) {
                return true;
            }
        }
        return false;
    }

    /** The request's deadline passed while it waited. */
    private void expire(Waiting w) {
        long retry;
        synchronized (this) {
            if (w.state != Waiting.WAITING) {
                return;
            }
            lines.remove(w);
            w.state = Waiting.DONE;
            w.expiry = null;
            retry = retryAfter(expectedWaitNanos(lines.size() + 1));
        }
        owner.shed(this, w, ShedReason.EXPIRED, owner.now() - w.enqueuedAt, retry);
    }

    /**
     * The host cancels {@code w}'s ticket: out of the line at once. Returns false, changing nothing, when
     * {@code w} is being handed a slot (it will complete admitted); true otherwise.
     */
    boolean withdraw(Waiting w) {
        boolean removed = false;
        synchronized (this) {
            if (w.state == Waiting.HANDING && !w.ticket.isDone()) {
                return false;
            }
            w.withdrawn = true;
            if (w.state == Waiting.WAITING) {
                lines.remove(w);
                w.state = Waiting.DONE;
                removed = true;
            }
        }
        if (removed) {
            cancelTimer(w);
            owner.cancelled(this, w);
        }
        return true;
    }

    /** Sheds everything waiting ({@link ShedReason#CLOSED}); later submissions are shed too. */
    void close() {
        List<Waiting> all;
        Scheduler.Task t;
        synchronized (this) {
            closed = true;
            all = lines.removeAll();
            for (Waiting w : all) {
                w.state = Waiting.DONE;
            }
            t = wake;
            wake = null;
        }
        if (t != null) {
            t.cancel();
        }
        for (Waiting w : all) {
            cancelTimer(w);
            owner.shed(this, w, ShedReason.CLOSED, owner.now() - w.enqueuedAt, 1);
        }
    }

    // ---- the wake timer ----

    @GuardedBy("this")
    private void ensureWake(long at) {
        if (wake != null && wakeAt <= at) {
            return;
        }
        if (wake != null) {
            wake.cancel();
        }
        wakeAt = at;
        wake = owner.scheduler().schedule(this::woken, Duration.ofNanos(Math.max(0, at - owner.now())));
    }

    private void woken() {
        synchronized (this) {
            wake = null;
            wakeAt = Long.MAX_VALUE;
            version++;
        }
        dispatch();
        synchronized (this) {
            if (lines.size() > 0 && !closed) {
                ensureWake(owner.now() + config.recheckInterval().toNanos());
            }
        }
    }

    // ---- expected wait ----

    /**
     * The wait of the {@code place}-th request to be served, nanoseconds; -1 when unknown: {@code place}
     * times the mean gap between freed slots seen while requests waited, once {@link #MIN_GAPS} were seen;
     * before that, Little's law over the mean lease time and the model's slots.
     */
    @GuardedBy("this")
    private long expectedWaitNanos(long place) {
        if (gaps >= MIN_GAPS) {
            return (long) (place * meanGapNanos);
        }
        int slots = owner.slots(model);
        if (meanLeaseNanos == 0 || slots == 0) {
            return -1;
        }
        return (long) (place * meanLeaseNanos / slots);
    }

    private static long retryAfter(long nanos) {
        if (nanos <= 0) {
            return 1;
        }
        return Math.max(1, Math.min(60, (nanos + 999_999_999L) / 1_000_000_000L));
    }

    private void cancelTimer(Waiting w) {
        Scheduler.Task t;
        synchronized (this) {
            t = w.expiry;
            w.expiry = null;
        }
        if (t != null) {
            t.cancel();
        }
    }

    /** For tests: the lines' invariants, and nothing left being handed out. */
    synchronized void check() {
        lines.check();
    }

    /** For tests: requests being handed a slot now. */
    synchronized int handing() {
        return handing;
    }

    /** For tests: the fair lines themselves (call under no other lock). */
    synchronized double counter(int band, String tenant) {
        return lines.counter(band, tenant);
    }
}
