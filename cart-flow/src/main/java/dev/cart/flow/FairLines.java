package dev.cart.flow;

import dev.cart.core.spi.Replica;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeSet;
import java.util.function.Predicate;
import org.jspecify.annotations.Nullable;

/**
 * The order of a model's waiting requests: by priority band (0 first), then within a band by a virtual
 * token counter per tenant (the tenant with the least work served goes next: start-time fair queuing over
 * costs, as AIBrix's VTC does), then first come first served within a tenant.
 *
 * <p>Design. A tenant's waiting requests form a line, an intrusive doubly linked list through
 * {@link Waiting}, so a cancelled request leaves in constant time; the tenants waiting in a band sit in a
 * tree ordered by counter. A tenant that starts waiting has its counter lifted to the least counter of the
 * tenants already waiting, or with none waiting to the counter of the tenant served last, so idle time
 * banks no credit; among equal counters the tenant that started waiting last goes first (a tenant
 * lifted to a backlogged tenant's level is not made to wait behind it). A tenant whose line empties is forgotten once its counter is at or below that floor
 * (it would be lifted to it anyway), so only tenants that recently took more than the others are
 * remembered; past {@code 2 * maxDepth + 16} remembered tenants in a band, emptied lines are forgotten
 * at once.
 *
 * <p>Not thread-safe: its {@link ModelQueue} calls it under its lock.
 */
final class FairLines {

    /** Waiting requests looked at, at most, by one {@link #first}. */
    static final int SCAN_LIMIT = 64;

    /** Tenants of a band looked at, at most, by one {@link #first}. */
    static final int SCAN_TENANTS = 16;

    /** A tenant's line in one band and its virtual token counter. */
    static final class Line {
        final String tenant;
        /** When the line last started waiting: among equal counters, the latest to start goes first. */
        long seq;

        double counter;
        int length;

        @Nullable
        Waiting head;

        @Nullable
        Waiting tail;

        Line(String tenant, long seq) {
            this.tenant = tenant;
            this.seq = seq;
        }
    }

    /** By counter; among equal counters the line that started waiting last first. */
    private static final class ByCounter implements Comparator<Line> {
        @Override
        public int compare(Line a, Line b) {
            int c = Double.compare(a.counter, b.counter);
            return c != 0 ? c : Long.compare(b.seq, a.seq);
        }
    }

    private static final Comparator<Line> BY_COUNTER = new ByCounter();

    /** One priority band: its tenants' lines, those waiting ordered by counter. */
    private static final class Band {
        final Map<String, Line> lines = new HashMap<>();
        final TreeSet<Line> waiting = new TreeSet<>(BY_COUNTER);
        int size;
        long seq;
        /** The counter of the tenant served last: the floor a tenant starting to wait is lifted to. */
        double served;
    }

    private final Band[] bands;
    private final int rememberedCap;
    private int size;
    /** Per replica, the waiting requests that hold out for it as a prefix holder. */
    private final IdentityHashMap<Replica, int[]> waitingFor = new IdentityHashMap<>();

    FairLines(int bands, int maxDepth) {
        this.bands = new Band[bands];
        for (int i = 0; i < bands; i++) {
            this.bands[i] = new Band();
        }
        this.rememberedCap = 2 * maxDepth + 16;
    }

    int size() {
        return size;
    }

    int size(int band) {
        return band >= 0 && band < bands.length ? bands[band].size : 0;
    }

    /** The waiting requests that hold out for {@code replica} as a prefix holder. */
    int waitingFor(Replica replica) {
        int[] c = waitingFor.get(replica);
        return c == null ? 0 : c[0];
    }

    /** {@code tenant}'s counter in {@code band}; NaN when it is not remembered. For tests. */
    double counter(int band, String tenant) {
        Line l = bands[band].lines.get(tenant);
        return l == null ? Double.NaN : l.counter;
    }

    /** Puts {@code w} at the end of its tenant's line. */
    void add(Waiting w) {
        Band band = bands[w.band];
        Line l = lineFor(band, w.flow.tenant());
        w.line = l;
        w.prev = l.tail;
        w.next = null;
        if (l.tail == null) {
            l.head = w;
        } else {
            l.tail.next = w;
        }
        l.tail = w;
        added(band, l, w);
    }

    /** Puts {@code w} back at the head of its tenant's line (its slot went elsewhere). */
    void addFirst(Waiting w) {
        Band band = bands[w.band];
        Line l = lineFor(band, w.flow.tenant());
        w.line = l;
        w.prev = null;
        w.next = l.head;
        if (l.head == null) {
            l.tail = w;
        } else {
            l.head.prev = w;
        }
        l.head = w;
        added(band, l, w);
    }

    /** Takes {@code w} (which must be in line) out. */
    void remove(Waiting w) {
        Line l = Objects.requireNonNull(w.line, "not in line");
        Band band = bands[w.band];
        if (w.prev == null) {
            l.head = w.next;
        } else {
            w.prev.next = w.next;
        }
        if (w.next == null) {
            l.tail = w.prev;
        } else {
            w.next.prev = w.prev;
        }
        w.prev = null;
        w.next = null;
        w.line = null;
        l.length--;
        band.size--;
        size--;
        if (l.length == 0) {
            band.waiting.remove(l);
            if (l.counter <= band.served || band.lines.size() > rememberedCap) {
                band.lines.remove(l.tenant);
            }
        }
        for (Replica h : w.holders) {
            int[] c = waitingFor.get(h);
            if (c != null && --c[0] == 0) {
                waitingFor.remove(h);
            }
        }
    }

    /** Replaces the holders of {@code w} (which is in line), keeping the per-holder counts. */
    void rehold(Waiting w, Replica[] holders) {
        for (Replica h : w.holders) {
            int[] c = waitingFor.get(h);
            if (c != null && --c[0] == 0) {
                waitingFor.remove(h);
            }
        }
        w.holders = holders;
        for (Replica h : holders) {
            waitingFor.computeIfAbsent(h, x -> new int[1])[0]++;
        }
    }

    /** {@code w} (out of line) was admitted: its tenant's counter grows by its cost. */
    void charge(Waiting w) {
        Band band = bands[w.band];
        Line l = band.lines.get(w.flow.tenant());
        if (l == null) {
            l = lineFor(band, w.flow.tenant());
        }
        boolean waiting = l.length > 0;
        if (waiting) {
            band.waiting.remove(l);
        }
        band.served = Math.max(band.served, l.counter);
        l.counter += w.flow.cost();
        if (waiting) {
            band.waiting.add(l);
        }
    }

    /**
     * The first waiting request, in order, that {@code accepts}; null when none of those looked at does.
     * Looks at most at {@link #SCAN_LIMIT} requests: band by band, and within a band round by round over
     * its first {@link #SCAN_TENANTS} tenants in counter order, each round one more request of each line
     * (an approximation of the order fair queuing would hand them out in).
     */
    @Nullable
    Waiting first(Predicate<Waiting> accepts) {
        int scanned = 0;
        for (Band band : bands) {
            if (band.size == 0) {
                continue;
            }
            @Nullable Waiting[] cursor = new Waiting[Math.min(SCAN_TENANTS, band.waiting.size())];
            Iterator<Line> it = band.waiting.iterator();
            for (int i = 0; i < cursor.length; i++) {
                cursor[i] = it.next().head;
            }
            boolean any = true;
            while (any) {
                any = false;
                for (int i = 0; i < cursor.length; i++) {
                    Waiting w = cursor[i];
                    if (w == null) {
                        continue;
                    }
                    any = true;
                    if (accepts.test(w)) {
                        return w;
                    }
                    cursor[i] = w.next;
                    if (++scanned >= SCAN_LIMIT) {
                        return null;
                    }
                }
            }
        }
        return null;
    }

    /**
     * How many waiting requests would go before a newcomer of {@code band} and {@code tenant}, itself
     * counted: every request of the higher bands, and in its band {@code min(length, k)} of every other
     * waiting tenant's line and {@code k} of its own, for its place {@code k} in its tenant's line.
     */
    long ahead(int band, String tenant) {
        long ahead = 0;
        for (int b = 0; b < band; b++) {
            ahead += bands[b].size;
        }
        Band bd = bands[band];
        Line mine = bd.lines.get(tenant);
        int k = (mine == null ? 0 : mine.length) + 1;
        for (Line l : bd.waiting) {
            if (l != mine) {
                ahead += Math.min(l.length, k);
            }
        }
        return ahead + k;
    }

    /**
     * The request a full queue gives up for a newcomer of {@code band} and {@code tenant}: the newest of the
     * longest line of the lowest band below the newcomer's that has any; in the newcomer's own band, the
     * newest of the longest line if that line is longer than the newcomer's own plus one; otherwise null
     * (shed the newcomer).
     */
    @Nullable
    Waiting victimFor(int band, String tenant) {
        for (int b = bands.length - 1; b >= band; b--) {
            Band bd = bands[b];
            if (bd.size == 0) {
                continue;
            }
            @Nullable Line longest = null;
            for (Line l : bd.waiting) {
                if (longest == null || l.length > longest.length) {
                    longest = l;
                }
            }
            if (longest == null) {
                continue; // size > 0 means some line waits: not reached
            }
            if (b > band) {
                return longest.tail;
            }
            Line mine = bd.lines.get(tenant);
            int own = mine == null ? 0 : mine.length;
            return longest != mine && longest.length > own + 1 ? longest.tail : null;
        }
        return null;
    }

    /** Takes every waiting request out, band by band, and returns them. */
    List<Waiting> removeAll() {
        List<Waiting> all = new ArrayList<>(size);
        for (Band band : bands) {
            for (Line l : new ArrayList<>(band.waiting)) {
                for (Waiting w = l.head; w != null; w = w.next) {
                    all.add(w);
                }
            }
        }
        for (Waiting w : all) {
            remove(w);
        }
        return all;
    }

    private Line lineFor(Band band, String tenant) {
        Line l = band.lines.get(tenant);
        if (l == null) {
            l = new Line(tenant, band.seq++);
            band.lines.put(tenant, l);
        }
        if (l.length == 0) {
            double floor = band.waiting.isEmpty() ? band.served : band.waiting.first().counter;
            l.counter = Math.max(l.counter, floor);
            l.seq = band.seq++; // not in the waiting tree now: its order may change
        }
        return l;
    }

    private void added(Band band, Line l, Waiting w) {
        if (l.length == 0) {
            band.waiting.add(l);
        }
        l.length++;
        band.size++;
        size++;
        for (Replica h : w.holders) {
            waitingFor.computeIfAbsent(h, x -> new int[1])[0]++;
        }
    }

    /**
     * Checks every invariant: each line a well-linked list of its length, in the band's waiting tree exactly
     * when not empty, the counts summing up, the holder counts matching.
     *
     * @throws IllegalStateException naming what is broken
     */
    void check() {
        int total = 0;
        IdentityHashMap<Replica, Integer> holders = new IdentityHashMap<>();
        for (Band band : bands) {
            int inBand = 0;
            for (Line l : band.lines.values()) {
                int n = 0;
                Waiting prev = null;
                for (Waiting w = l.head; w != null; w = w.next) {
                    if (w.prev != prev || w.line != l) {
                        throw new IllegalStateException("broken line of " + l.tenant);
                    }
                    for (Replica h : w.holders) {
                        holders.merge(h, 1, Integer::sum);
                    }
                    prev = w;
                    n++;
                }
                if (n != l.length || l.tail != prev) {
                    throw new IllegalStateException("line of " + l.tenant + " counts " + l.length + ", holds " + n);
                }
                if ((n > 0) != band.waiting.contains(l)) {
                    throw new IllegalStateException("line of " + l.tenant + " misplaced among the waiting");
                }
                inBand += n;
            }
            if (inBand != band.size || band.waiting.size() > band.lines.size()) {
                throw new IllegalStateException("band counts " + band.size + ", holds " + inBand);
            }
            total += inBand;
        }
        if (total != size) {
            throw new IllegalStateException("queue counts " + size + ", holds " + total);
        }
        for (Map.Entry<Replica, int[]> e : waitingFor.entrySet()) {
            if (holders.getOrDefault(e.getKey(), 0) != e.getValue()[0]) {
                throw new IllegalStateException("holder count of " + e.getKey().id() + " is off");
            }
        }
        if (holders.size() != waitingFor.size()) {
            throw new IllegalStateException("holder counts missing");
        }
    }
}
