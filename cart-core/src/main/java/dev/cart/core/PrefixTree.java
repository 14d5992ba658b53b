package dev.cart.core;

import dev.cart.core.spi.Match;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongFunction;

/**
 * A concurrent radix tree over the block hashes of {@link PromptKey}s that remembers which replicas were
 * sent which prefixes, and when.
 *
 * <h2>Shape</h2>
 * Edges are compressed: each edge carries a run of block hashes (its label) and leads to a node. A node
 * holds the replicas that were sent a prompt passing through it, each with the time it was last used.
 * A replica recorded for a key holds every prefix of that key, so {@link #insert} marks the whole path.
 * The edges out of a node are immutable {@code Edge} objects in a small open-addressing table keyed by
 * the label's first block, so a lookup costs the same for 2 children or 100,000.
 *
 * <h2>Concurrency contract</h2>
 * {@link #insert} and {@link #match} are linearizable: every match sees each insert either wholly or
 * not at all, in an order consistent with real time. How:
 * <ul>
 *   <li>Every change a reader can see is one atomic store: a new {@code Edge} in a table slot (a new
 *       leaf, a split edge, a merged edge, a tombstone), a new table, or a new holder array (with the
 *       array of its replicas, which is what a match reads: holders are loaded only by writers).</li>
 *   <li>An insert that adds its replica to existing nodes changes several of them. Every node carries a
 *       version, even when stable; the insert makes the version of each node it will add the replica to
 *       odd before its first change and even after its last, so it is one step for anyone who checks.</li>
 *   <li>{@link #match} takes no lock and writes nothing. It reads each node's version before its fields,
 *       then looks again: every edge it followed still in its slot, every version unchanged. If not, a
 *       writer changed <em>this</em> path meanwhile and the match walks again. Writes elsewhere (most
 *       structural writes: a new leaf under another node) never make it retry, and maintenance never
 *       makes it wait.</li>
 *   <li>{@link #insert} of a key the replica already holds entirely only refreshes last-use times: no
 *       lock, no version change, no write when the stored time would not change (nodes near the root
 *       are touched by every request). Any other insert takes the writer mutex: writes are serialised.</li>
 *   <li>Maintenance ({@link #evict}, {@link #removeReplica}, {@link #clear}) raises a flag, then takes
 *       the same mutex. An insert that would write while the flag is up is skipped and counted instead
 *       of waiting for the pass; one already writing finishes first, so maintenance is never starved.</li>
 * </ul>
 *
 * <h2>Size and eviction</h2>
 * The size is the number of blocks stored on edges, one budget for the whole tree. A maintenance pass
 * drops entries older than the TTL, then (if still above {@code maxSize}) drops (node, replica) entries
 * least recently used first; among equal times, entries learned from a peer before local ones, then
 * deepest first. A node no replica holds is detached when it has no children and merged with its child
 * when it has one, so memory returns to baseline under churn.
 *
 * <h2>Routes from other instances</h2>
 * Several routers can share what they learn ({@link RouteSync}). A peer's route is applied by
 * {@link #insertRemote} through the same refresh and writer paths as a local insert (so matches never
 * wait for it, and it is skipped and counted alike under maintenance), stamped with the peer's time and
 * marked remote on the entries it creates. The mark is one flag on the entry, read by the eviction sort
 * only: a remote entry goes before a local one of the same age, and any local use of the entry clears
 * the mark (a route this instance's own traffic confirmed is worth more). A peer's reset is
 * {@link #dropUntil}: entries used up to the reset's time go, later ones stay.
 */
final class PrefixTree {

    /** Default {@code max_tree_size} in blocks: about 64 million characters of distinct prompt text. */
    public static final long DEFAULT_MAX_SIZE = 1_000_000;

    private static final Holder[] NO_HOLDERS = new Holder[0];
    private static final Replica[] NO_REPLICAS = new Replica[0];
    private static final Edge[] NO_EDGES = new Edge[0];
    /** Marks a removed slot; probes continue past it. */
    private static final Edge TOMBSTONE = new Edge(0, new long[0], null);

    private static final VarHandle SLOT = MethodHandles.arrayElementVarHandle(Edge[].class);

    private final long maxSize;
    private final long ttlMillis;
    private final Clock clock;
    private final ReentrantLock writers = new ReentrantLock();
    private final AtomicInteger maintenance = new AtomicInteger();
    private final AtomicLong size = new AtomicLong();
    private final AtomicLong nodes = new AtomicLong();
    private final AtomicLong entries = new AtomicLong();
    private final LongAdder skipped = new LongAdder();
    private volatile Node root = new Node(0);

    private PrefixTree(Builder b) {
        this.maxSize = b.maxSize;
        this.ttlMillis = b.ttl.toMillis();
        this.clock = b.clock;
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Size cap in blocks. */
    public long maxSize() {
        return maxSize;
    }

    // ------------------------------------------------------------------------------------------------
    // match

    /**
     * Finds the longest stored prefix of {@code key} and every replica holding part of it. Lock-free;
     * never waits for maintenance, and walks again only if an insert was adding a replica to a node on
     * this key's path while it looked.
     */
    public Match match(PromptKey key) {
        long[] b = key.blocks();
        int n = b.length;
        if (n == 0) {
            return Match.none(key.length());
        }
        Node[] seen = new Node[8];
        Edge[] via = new Edge[8];
        int[] versions = new int[8];
        Replica[][] holders = new Replica[8][];
        int[] reach = new int[8];
        int spins = 0;
        attempt:
        for (; ; backOff(++spins)) {
            Node start = root;
            Node node = start;
            int depth = 0;
            int i = 0;
            while (i < n) {
                Edge e = find(node.edges, b[i]);
                if (e == null) {
                    break;
                }
                Node target = e.target;
                int v = target.version;
                if ((v & 1) != 0) {
                    continue attempt;
                }
                int m = commonPrefix(e.label, b, i);
                if (depth == seen.length) {
                    seen = Arrays.copyOf(seen, depth * 2);
                    via = Arrays.copyOf(via, depth * 2);
                    versions = Arrays.copyOf(versions, depth * 2);
                    holders = Arrays.copyOf(holders, depth * 2);
                    reach = Arrays.copyOf(reach, depth * 2);
                }
                seen[depth] = target;
                via[depth] = e;
                versions[depth] = v;
                holders[depth] = target.replicas;
                reach[depth++] = i + m;
                i += m;
                if (m < e.label.length) {
                    break;
                }
                node = target;
            }
            // Second look: every edge still in place and every node unchanged means all that was read
            // was current at once (edges and holder arrays are never reused, versions only grow).
            if (root != start) {
                continue;
            }
            Node parent = start;
            for (int d = 0; d < depth; d++) {
                if (find(parent.edges, via[d].first) != via[d] || seen[d].version != versions[d]) {
                    continue attempt;
                }
                parent = seen[d];
            }
            return result(key, depth, holders, reach);
        }
    }

    /** Spins briefly, then yields, so a descheduled writer gets the processor back. */
    private static void backOff(int spins) {
        if (spins < 64) {
            Thread.onSpinWait();
        } else {
            Thread.yield();
        }
    }

    /**
     * Each replica on the path once, with the depth of the deepest node it holds there (deepest first).
     * Reads replica identities only, from arrays sized like the pool: no holder, no list until the end.
     */
    private static Match result(PromptKey key, int depth, Replica[][] path, int[] reach) {
        if (depth == 0) {
            return Match.none(key.length());
        }
        int unit = key.blockSize();
        Replica[] seen = new Replica[8];
        Match.Holding[] found = new Match.Holding[8];
        int count = 0;
        for (int d = depth - 1; d >= 0; d--) {
            next:
            for (Replica r : path[d]) {
                for (int k = 0; k < count; k++) {
                    if (seen[k] == r) {
                        continue next;
                    }
                }
                if (count == seen.length) {
                    seen = Arrays.copyOf(seen, count * 2);
                    found = Arrays.copyOf(found, count * 2);
                }
                seen[count] = r;
                found[count++] = new Match.Holding(r, reach[d] * unit);
            }
        }
        // Deepest first, so the first holding found is the longest: reach only shrinks going up.
        int matched = count == 0 ? 0 : found[0].matchedLength();
        return new Match(matched, key.length(), Arrays.asList(found).subList(0, count)); // Match copies it once
    }

    /** Length of the common prefix of {@code label} and {@code key[from..]}; at least 1 when called. */
    private static int commonPrefix(long[] label, long[] key, int from) {
        int len = Math.min(label.length, key.length - from);
        int mm = Arrays.mismatch(label, 0, len, key, from, from + len);
        return mm < 0 ? len : mm;
    }

    // ------------------------------------------------------------------------------------------------
    // insert

    /**
     * Records that {@code replica} was sent {@code key}: it now holds every prefix of the key, used now.
     *
     * @return false if the insert had to change the tree while maintenance held it, and was skipped
     *         (counted in {@link TreeStats#skippedInserts()})
     */
    public boolean insert(PromptKey key, Replica replica) {
        Objects.requireNonNull(replica, "replica");
        long[] b = key.blocks();
        return b.length == 0 || insert(b, replica, clock.millis(), false);
    }

    /**
     * Records a route another instance learned ({@link RouteEvent.Learned}): as {@link #insert}, through
     * the same lock-free refresh and the same writer path (skipped and counted alike under maintenance),
     * but stamped with the event's time (never later than this clock's now, so a peer's fast clock cannot
     * make an entry outlive its age) and marked remote where the replica did not already hold the node.
     * A later local insert through the same nodes makes them local.
     *
     * @return false if skipped because maintenance held the tree
     */
    boolean insertRemote(long[] blocks, Replica replica, long timeMillis) {
        Objects.requireNonNull(replica, "replica");
        return blocks.length == 0 || insert(blocks, replica, Math.min(timeMillis, clock.millis()), true);
    }

    private boolean insert(long[] b, Replica replica, long now, boolean remote) {
        if (refresh(b, replica, now, remote)) {
            return true;
        }
        if (!lockForWrite()) {
            skipped.increment();
            return false;
        }
        try {
            write(b, replica, now, remote);
            return true;
        } finally {
            writers.unlock();
        }
    }

    /**
     * Takes the writer mutex unless maintenance is running or waiting; never waits for maintenance.
     * Waits (parked, in short slices) only for another writer.
     */
    private boolean lockForWrite() {
        for (; ; ) {
            if (maintenance.get() > 0) {
                return false;
            }
            try {
                if (writers.tryLock(50, TimeUnit.MICROSECONDS)) {
                    if (maintenance.get() > 0) {
                        writers.unlock();
                        return false;
                    }
                    return true;
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        }
    }

    /** Takes the mutex for maintenance: new writes are refused from now on, running ones finish. */
    private void lockForMaintenance() {
        maintenance.incrementAndGet();
        writers.lock();
    }

    private void unlockMaintenance() {
        maintenance.decrementAndGet();
        writers.unlock();
    }

    /**
     * The lock-free case: the whole key is stored and the replica holds every node on it. Refreshes the
     * last-use times (a local insert also makes the entries local) and returns true; returns false as
     * soon as anything would have to change.
     */
    private boolean refresh(long[] b, Replica replica, long now, boolean remote) {
        Node node = root;
        int i = 0;
        Node[] path = null;
        int depth = 0;
        while (i < b.length) {
            Edge e = find(node.edges, b[i]);
            if (e == null) {
                return false;
            }
            long[] label = e.label;
            if (label.length > b.length - i || commonPrefix(label, b, i) < label.length) {
                return false;
            }
            node = e.target;
            if (!holds(node, replica)) {
                return false;
            }
            if (path == null) {
                path = new Node[4];
            } else if (depth == path.length) {
                path = Arrays.copyOf(path, depth * 2);
            }
            path[depth++] = node;
            i += label.length;
        }
        for (int d = 0; d < depth; d++) {
            Holder h = holderOf(path[d], replica);
            if (h != null) {
                h.touch(now, remote);
            }
        }
        return true;
    }

    /**
     * The writing case, under the writer mutex: adds the missing edge (a new leaf, after splitting an edge
     * if the key leaves it midway) and the replica to every node of the path that lacks it. The nodes
     * that gain the replica are odd from before the first change to after the last.
     */
    private void write(long[] b, Replica replica, long now, boolean remote) {
        int n = b.length;
        Node[] path = new Node[8];
        int depth = 0;
        Node node = root;
        int i = 0;
        Edge split = null; // the edge the key leaves midway, if any
        int splitLen = 0;
        boolean needLeaf = false;
        while (i < n) {
            Edge e = find(node.edges, b[i]);
            if (e == null) {
                needLeaf = true;
                break;
            }
            int m = commonPrefix(e.label, b, i);
            if (m < e.label.length) {
                split = e;
                splitLen = m;
                needLeaf = i + m < n;
                break;
            }
            node = e.target;
            if (depth == path.length) {
                path = Arrays.copyOf(path, depth * 2);
            }
            path[depth++] = node;
            i += m;
        }
        boolean[] lacking = new boolean[depth];
        int marked = 0;
        for (int d = 0; d < depth; d++) {
            if (!holds(path[d], replica)) {
                lacking[d] = true;
                marked++;
            }
        }
        try {
            for (int d = 0; d < depth; d++) {
                if (lacking[d]) {
                    path[d].version++;
                }
            }
            // The new structure below the path holds the replica from birth and appears in one store.
            if (split != null) {
                Node mid = newMid(node, split, splitLen, replica, now, remote);
                if (needLeaf) {
                    addEdge(mid, newLeaf(mid, b, i + splitLen, replica, now, remote));
                }
                replaceEdge(node, new Edge(split.first, Arrays.copyOf(split.label, splitLen), mid));
            } else if (needLeaf) {
                addEdge(node, newLeaf(node, b, i, replica, now, remote));
            }
            for (int d = 0; d < depth; d++) {
                if (lacking[d]) {
                    Holder[] hs = path[d].holders;
                    Holder[] grown = Arrays.copyOf(hs, hs.length + 1);
                    grown[hs.length] = new Holder(replica, now, remote);
                    setHolders(path[d], grown);
                    entries.incrementAndGet();
                } else {
                    holderOf(path[d], replica).touch(now, remote);
                }
            }
        } finally {
            if (marked > 0) {
                for (int d = 0; d < depth; d++) {
                    if (lacking[d]) {
                        path[d].version++;
                    }
                }
            }
        }
    }

    private Edge newLeaf(Node parent, long[] b, int from, Replica replica, long now, boolean remote) {
        Node leaf = new Node(b.length);
        leaf.parent = parent;
        leaf.edgeFirst = b[from];
        setHolders(leaf, new Holder[] {new Holder(replica, now, remote)});
        size.addAndGet(b.length - from);
        nodes.incrementAndGet();
        entries.incrementAndGet();
        return new Edge(b[from], Arrays.copyOfRange(b, from, b.length), leaf);
    }

    /**
     * Builds the node that splits {@code edge} of {@code parent} after {@code m} blocks; it holds what the
     * old target held (they hold every prefix) plus {@code replica}, and leads to the old target. Not yet
     * published: the caller replaces the parent's edge. If {@code replica} held the target already, its
     * entry here merges both: the later time, and local if either was.
     */
    private Node newMid(Node parent, Edge edge, int m, Replica replica, long now, boolean remote) {
        Node target = edge.target;
        Node mid = new Node(target.depth - (edge.label.length - m));
        mid.parent = parent;
        mid.edgeFirst = edge.first;
        Holder[] th = target.holders;
        Holder[] copy = new Holder[th.length + 1];
        int k = 0;
        Holder own = new Holder(replica, now, remote);
        for (Holder h : th) {
            if (h.replica != replica) {
                copy[k++] = new Holder(h.replica, h.lastAccess, h.remote);
            } else {
                own.touch(h.lastAccess, h.remote);
            }
        }
        copy[k++] = own;
        setHolders(mid, k == copy.length ? copy : Arrays.copyOf(copy, k));
        long[] tail = Arrays.copyOfRange(edge.label, m, edge.label.length);
        addEdge(mid, new Edge(tail[0], tail, target));
        target.parent = mid;
        target.edgeFirst = tail[0];
        nodes.incrementAndGet();
        entries.addAndGet(mid.holders.length);
        return mid;
    }

    /**
     * Replaces a node's holders and, with them, its replica array. Both are immutable snapshots; a match
     * reads only the replica array, once per node and inside its version check, so it sees the holders
     * of before or of after, as it would have by reading {@code holders}.
     */
    private static void setHolders(Node node, Holder[] hs) {
        Replica[] rs = new Replica[hs.length];
        for (int k = 0; k < hs.length; k++) {
            rs[k] = hs[k].replica;
        }
        node.holders = hs;
        node.replicas = hs.length == 0 ? NO_REPLICAS : rs; // after: a replica seen here is in the holders read next
    }

    /** Whether {@code replica} holds {@code node}; reads the replica array only. */
    private static boolean holds(Node node, Replica replica) {
        for (Replica r : node.replicas) {
            if (r == replica) {
                return true;
            }
        }
        return false;
    }

    /**
     * The holder of {@code replica} at {@code node}, or null: found by position in the replica array, so
     * only that one holder is loaded. Without the writer mutex the two arrays may be of different
     * snapshots for a moment; then it searches the holders themselves.
     */
    private static Holder holderOf(Node node, Replica replica) {
        Replica[] rs = node.replicas;
        Holder[] hs = node.holders;
        for (int k = 0; k < rs.length; k++) {
            if (rs[k] == replica) {
                return k < hs.length && hs[k].replica == replica ? hs[k] : holder(hs, replica);
            }
        }
        return holder(hs, replica);
    }

    private static Holder holder(Holder[] hs, Replica replica) {
        for (Holder h : hs) {
            if (h.replica == replica) {
                return h;
            }
        }
        return null;
    }

    /**
     * Drops {@code replica}'s claim on every prefix that shares {@code key}'s first {@code keepLength}
     * units and the block after them but then leaves {@code key}'s path; the path itself is kept. For a
     * replica that reported serving only {@code keepLength} units of {@code key} from its cache: it had
     * lost the block after them, and with it everything it held through that block, except what this
     * request has just computed again (its whole prompt). If the key ends or leaves the tree inside an
     * edge the replica holds beyond that point, the edge is split there first, as an insert would. Runs
     * as a writer: the nodes it changes are odd while it works, so a match through them walks again
     * rather than see a branch half dropped; skipped, returning -1, while maintenance holds the tree.
     *
     * @return the number of entries dropped, or -1 if skipped
     */
    public int forgetBranches(PromptKey key, Replica replica, int keepLength) {
        long[] b = key.blocks();
        int keepBlocks = Math.max(0, keepLength / key.blockSize());
        if (b.length <= keepBlocks) {
            return 0;
        }
        if (!lockForWrite()) {
            skipped.increment();
            return -1;
        }
        try {
            List<Node> path = new ArrayList<>();
            Node node = root;
            int i = 0;
            while (i < b.length) {
                Edge e = find(node.edges, b[i]);
                if (e == null) {
                    break;
                }
                int m = commonPrefix(e.label, b, i);
                if (m < e.label.length) {
                    // The key ends or leaves inside this edge: what the edge goes on to is a branch. If the
                    // replica holds it below the lost block, split the edge where the key stops following
                    // it (one store, as an insert does), so the key's part can be kept and the rest dropped.
                    Holder below = holder(e.target.holders, replica);
                    if (i + m > keepBlocks && below != null) {
                        Node mid = newMid(node, e, m, replica, below.lastAccess, below.remote); // as it was
                        replaceEdge(node, new Edge(e.first, Arrays.copyOf(e.label, m), mid));
                        path.add(mid);
                    }
                    break;
                }
                path.add(e.target);
                i += m;
                node = e.target;
            }
            List<Node> doomed = new ArrayList<>();
            for (int k = 0; k < path.size(); k++) {
                Node p = path.get(k);
                if (p.depth <= keepBlocks) {
                    continue; // branches off here start at or before the lost block: not below it
                }
                Node next = k + 1 < path.size() ? path.get(k + 1) : null;
                for (Edge e : live(p.edges)) {
                    if (e.target != next) {
                        heldBelow(e.target, replica, doomed);
                    }
                }
            }
            // Odd from before the first removal to after the last, as an insert does: a match through
            // these nodes walks again rather than see the branch half dropped.
            for (Node v : doomed) {
                v.version++;
            }
            int dropped = 0;
            try {
                for (Node v : doomed) {
                    Holder h = holder(v.holders, replica);
                    if (h != null && removeHolder(v, h)) {
                        dropped++;
                    }
                }
            } finally {
                for (Node v : doomed) {
                    v.version++;
                }
            }
            return dropped;
        } finally {
            writers.unlock();
        }
    }

    /** Adds the nodes under (and including) {@code top} that {@code replica} holds, children before parents. */
    private static void heldBelow(Node top, Replica replica, List<Node> out) {
        ArrayDeque<Node> stack = new ArrayDeque<>();
        ArrayDeque<Node> order = new ArrayDeque<>();
        stack.push(top);
        while (!stack.isEmpty()) {
            Node n = stack.pop();
            if (holder(n.holders, replica) == null) {
                continue; // a replica holding a node holds its parent: nothing of it below either
            }
            order.push(n);
            for (Edge e : live(n.edges)) {
                stack.push(e.target);
            }
        }
        out.addAll(order); // popped in reverse discovery order: every node after all of its descendants
    }

    // ------------------------------------------------------------------------------------------------
    // maintenance

    /**
     * One maintenance pass: drops entries idle longer than the TTL, then least-recently-used entries
     * until the size is within the cap. Inserts that would change the tree meanwhile are skipped.
     */
    public EvictionReport evict() {
        lockForMaintenance();
        long t0 = System.nanoTime();
        try {
            long before = size.get();
            if (before <= maxSize && ttlMillis <= 0) {
                return new EvictionReport(0, 0, 0, before, before, System.nanoTime() - t0);
            }
            long now = clock.millis();
            List<Entry> all = collectEntries();
            long nodesBefore = nodes.get();
            long expired = 0;
            List<Entry> live = all;
            if (ttlMillis > 0) {
                live = new ArrayList<>(all.size());
                long cutoff = now - ttlMillis;
                for (Entry en : all) {
                    if (en.holder.lastAccess < cutoff) {
                        if (removeHolder(en.node, en.holder)) {
                            expired++;
                        }
                    } else {
                        live.add(en);
                    }
                }
            }
            long evicted = 0;
            if (size.get() > maxSize) {
                for (Entry en : live) {
                    en.time = en.holder.lastAccess;
                    en.remote = en.holder.remote;
                }
                live.sort(LRU_ORDER);
                for (Entry en : live) {
                    if (size.get() <= maxSize) {
                        break;
                    }
                    if (removeHolder(en.node, en.holder)) {
                        evicted++;
                    }
                }
            }
            return new EvictionReport(
                    expired, evicted, nodesBefore - nodes.get(), before, size.get(), System.nanoTime() - t0);
        } finally {
            unlockMaintenance();
        }
    }

    /** Least recently used first; among equal times, entries learned from a peer first, then deepest first. */
    private static final Comparator<Entry> LRU_ORDER = (x, y) -> {
        int c = Long.compare(x.time, y.time);
        if (c != 0) {
            return c;
        }
        if (x.remote != y.remote) {
            return x.remote ? -1 : 1;
        }
        return Integer.compare(y.node.depth, x.node.depth);
    };

    /**
     * Drops every entry last used at or before {@code cutoffMillis}: a reset another instance made at that
     * time ({@link RouteEvent.Reset}). What this instance learned after it stays, in whatever order the
     * events arrive. A maintenance pass: waits for a running writer, skips new ones meanwhile.
     *
     * @return the number of entries dropped
     */
    long dropUntil(long cutoffMillis) {
        lockForMaintenance();
        try {
            long dropped = 0;
            for (Entry en : collectEntries()) {
                if (en.holder.lastAccess <= cutoffMillis && removeHolder(en.node, en.holder)) {
                    dropped++;
                }
            }
            return dropped;
        } finally {
            unlockMaintenance();
        }
    }

    /** Forgets every entry of {@code replica}, for a replica leaving the pool. */
    public void removeReplica(Replica replica) {
        lockForMaintenance();
        try {
            for (Entry en : collectEntries()) {
                if (en.holder.replica == replica) {
                    removeHolder(en.node, en.holder);
                }
            }
        } finally {
            unlockMaintenance();
        }
    }

    /** Drops everything (the daily reset). */
    public void clear() {
        lockForMaintenance();
        try {
            root = new Node(0);
            size.set(0);
            nodes.set(0);
            entries.set(0);
        } finally {
            unlockMaintenance();
        }
    }

    /** Counters, read without locking (each exact; together they may be a moment apart). */
    public TreeStats stats() {
        return new TreeStats(size.get(), nodes.get(), entries.get(), skipped.sum());
    }

    /**
     * Walks the whole tree while no writer runs and counts what is really there. For diagnostics and
     * tests: the result equals {@link #stats()} whenever no insert is running.
     */
    public TreeStats recount() {
        lockForMaintenance();
        try {
            long s = 0;
            long nd = 0;
            long en = 0;
            ArrayDeque<Node> stack = new ArrayDeque<>();
            stack.push(root);
            while (!stack.isEmpty()) {
                for (Edge e : live(stack.pop().edges)) {
                    s += e.label.length;
                    nd++;
                    en += e.target.holders.length;
                    stack.push(e.target);
                }
            }
            return new TreeStats(s, nd, en, skipped.sum());
        } finally {
            unlockMaintenance();
        }
    }

    /**
     * Draws the tree, one node per line, children in block order: {@code <label blocks> [replicas]}.
     * Block hashes print as short ids given by {@code names}. For tests and debugging only.
     */
    public String draw(LongFunction<String> names) {
        StringBuilder sb = new StringBuilder("○\n");
        drawChildren(root, "", names, sb);
        return sb.toString();
    }

    private static void drawChildren(Node node, String indent, LongFunction<String> names, StringBuilder sb) {
        List<Edge> edges = live(node.edges);
        edges.sort(Comparator.comparingLong(e -> e.first));
        for (int k = 0; k < edges.size(); k++) {
            Edge e = edges.get(k);
            boolean last = k == edges.size() - 1;
            sb.append(indent).append(last ? "└── " : "├── ");
            for (long block : e.label) {
                sb.append(names.apply(block));
            }
            Holder[] hs = e.target.holders.clone();
            Arrays.sort(hs, Comparator.comparing(h -> h.replica.id()));
            sb.append(" [");
            for (int j = 0; j < hs.length; j++) {
                sb.append(j == 0 ? "" : " ").append(hs[j].replica.id());
            }
            sb.append("]\n");
            drawChildren(e.target, indent + (last ? "    " : "│   "), names, sb);
        }
    }

    private List<Entry> collectEntries() {
        List<Entry> out = new ArrayList<>();
        ArrayDeque<Node> stack = new ArrayDeque<>();
        stack.push(root);
        while (!stack.isEmpty()) {
            for (Edge e : live(stack.pop().edges)) {
                for (Holder h : e.target.holders) {
                    out.add(new Entry(e.target, h));
                }
                stack.push(e.target);
            }
        }
        return out;
    }

    /**
     * Removes one entry and repairs the shape around it. Caller holds the writer mutex. Each change is
     * one store, so a concurrent match sees the tree before or after it.
     *
     * @return true if the entry was still there
     */
    private boolean removeHolder(Node node, Holder holder) {
        if (node.detached) {
            return false;
        }
        Holder[] hs = node.holders;
        int at = -1;
        for (int k = 0; k < hs.length; k++) {
            if (hs[k] == holder) {
                at = k;
                break;
            }
        }
        if (at < 0) {
            return false;
        }
        Holder[] less = new Holder[hs.length - 1];
        System.arraycopy(hs, 0, less, 0, at);
        System.arraycopy(hs, at + 1, less, at, hs.length - at - 1);
        setHolders(node, less.length == 0 ? NO_HOLDERS : less);
        entries.decrementAndGet();
        tidy(node);
        return true;
    }

    /**
     * Detaches {@code node} if nobody holds it and it has no children, or merges it into its only child if
     * nobody holds it; then looks at the parent, whose shape may have changed too.
     */
    private void tidy(Node node) {
        while (node != root && !node.detached && node.holders.length == 0 && node.edgeCount <= 1) {
            Node parent = node.parent;
            Edge own = find(parent.edges, node.edgeFirst);
            if (own == null || own.target != node) {
                throw new IllegalStateException("tree corrupted: node not found under its parent");
            }
            if (node.edgeCount == 0) {
                removeEdge(parent, own.first);
                size.addAndGet(-own.label.length);
                nodes.decrementAndGet();
                node.detached = true;
                node = parent;
            } else {
                Edge only = live(node.edges).get(0);
                long[] joined = Arrays.copyOf(own.label, own.label.length + only.label.length);
                System.arraycopy(only.label, 0, joined, own.label.length, only.label.length);
                only.target.parent = parent;
                only.target.edgeFirst = own.first;
                replaceEdge(parent, new Edge(own.first, joined, only.target));
                nodes.decrementAndGet();
                node.detached = true;
                return; // the parent kept as many children as before
            }
        }
    }

    // ------------------------------------------------------------------------------------------------
    // edge tables: open addressing with linear probing, keyed by the label's first block. Readers probe
    // with acquire loads; the single writer (under the mutex) publishes each slot with a release store,
    // or a whole new table with a volatile store when it grows or sheds tombstones.

    private static int spread(long key, int mask) {
        long h = key * 0x9E3779B97F4A7C15L;
        return (int) (h ^ (h >>> 32)) & mask;
    }

    /** The live edge whose label starts with {@code first}, or null. */
    private static Edge find(Edge[] table, long first) {
        int len = table.length;
        if (len == 0) {
            return null;
        }
        int mask = len - 1;
        for (int i = spread(first, mask); ; i = (i + 1) & mask) {
            Edge e = (Edge) SLOT.getAcquire(table, i);
            if (e == null) {
                return null;
            }
            if (e != TOMBSTONE && e.first == first) {
                return e;
            }
        }
    }

    /** Live edges of a table (a snapshot list). */
    private static List<Edge> live(Edge[] table) {
        List<Edge> out = new ArrayList<>(Math.min(table.length, 16));
        for (int i = 0; i < table.length; i++) {
            Edge e = (Edge) SLOT.getAcquire(table, i);
            if (e != null && e != TOMBSTONE) {
                out.add(e);
            }
        }
        return out;
    }

    /** Adds an edge whose first block is not yet in the node's table. Writer only. */
    private static void addEdge(Node node, Edge edge) {
        Edge[] table = node.edges;
        if ((node.edgeCount + node.tombstones + 1) * 2 > table.length) {
            Edge[] grown = rebuild(table, Math.max(2, Integer.highestOneBit((node.edgeCount + 1) * 4 - 1)));
            place(grown, edge);
            node.tombstones = 0;
            node.edgeCount++;
            node.edges = grown; // one volatile store publishes the new table with the new edge
            return;
        }
        int mask = table.length - 1;
        int i = spread(edge.first, mask);
        while (true) {
            Edge e = table[i];
            if (e == null || e == TOMBSTONE) {
                if (e == TOMBSTONE) {
                    node.tombstones--;
                }
                SLOT.setRelease(table, i, edge);
                node.edgeCount++;
                return;
            }
            i = (i + 1) & mask;
        }
    }

    /** Replaces the edge with the same first block. Writer only. */
    private static void replaceEdge(Node node, Edge edge) {
        Edge[] table = node.edges;
        int mask = table.length - 1;
        for (int i = spread(edge.first, mask); ; i = (i + 1) & mask) {
            Edge e = table[i];
            if (e != null && e != TOMBSTONE && e.first == edge.first) {
                SLOT.setRelease(table, i, edge);
                return;
            }
        }
    }

    /** Removes the edge starting with {@code first}. Writer only. */
    private static void removeEdge(Node node, long first) {
        Edge[] table = node.edges;
        if (node.edgeCount == 1) {
            node.edgeCount = 0;
            node.tombstones = 0;
            node.edges = NO_EDGES;
            return;
        }
        int mask = table.length - 1;
        for (int i = spread(first, mask); ; i = (i + 1) & mask) {
            Edge e = table[i];
            if (e != null && e != TOMBSTONE && e.first == first) {
                SLOT.setRelease(table, i, TOMBSTONE);
                node.edgeCount--;
                node.tombstones++;
                break;
            }
        }
        if (node.tombstones > node.edgeCount && table.length > 8) {
            node.edges = rebuild(table, Math.max(2, Integer.highestOneBit(node.edgeCount * 4 - 1)));
            node.tombstones = 0;
        }
    }

    private static Edge[] rebuild(Edge[] table, int capacity) {
        Edge[] t = new Edge[capacity];
        for (Edge e : table) {
            if (e != null && e != TOMBSTONE) {
                place(t, e);
            }
        }
        return t;
    }

    private static void place(Edge[] t, Edge e) {
        int mask = t.length - 1;
        int i = spread(e.first, mask);
        while (t[i] != null) {
            i = (i + 1) & mask;
        }
        t[i] = e;
    }

    // ------------------------------------------------------------------------------------------------
    // origin of a route (several instances)

    /**
     * Whether {@code replica}'s claim on the first {@code blocks} blocks of {@code key} was learned only from
     * other instances ({@link #insertRemote}) and never confirmed by this instance's own traffic. A lock-free
     * walk like a match's first look (no second look: the answer feeds a metric, a moment's staleness is
     * fine); false when the tree does not hold it.
     */
    boolean learnedElsewhere(long[] key, int blocks, Replica replica) {
        Node node = root;
        int i = 0;
        int end = Math.min(blocks, key.length);
        while (i < end) {
            Edge e = find(node.edges, key[i]);
            if (e == null) {
                return false;
            }
            int m = commonPrefix(e.label, key, i);
            i += m;
            if (i >= end) {
                Holder h = holderOf(e.target, replica);
                return h != null && h.remote;
            }
            if (m < e.label.length) {
                return false;
            }
            node = e.target;
        }
        return false;
    }

    // ------------------------------------------------------------------------------------------------
    // test hooks (package-private)

    /** One route as the tree holds it, expanded per block prefix. */
    record Route(long time, int nodeDepth, boolean remote) {}

    /**
     * Every (prefix, replica) the tree holds, one entry per block prefix (a node's entries cover every
     * prefix that ends on its edge). Call only while nothing else uses the tree.
     */
    Map<List<Long>, Map<Replica, Route>> snapshot() {
        Map<List<Long>, Map<Replica, Route>> out = new HashMap<>();
        snapshot(root, new ArrayList<>(), out);
        return out;
    }

    private static void snapshot(Node node, List<Long> path, Map<List<Long>, Map<Replica, Route>> out) {
        for (Edge e : live(node.edges)) {
            Node t = e.target;
            List<Long> p = new ArrayList<>(path);
            for (long block : e.label) {
                p.add(block);
                if (t.holders.length > 0) {
                    Map<Replica, Route> m = out.computeIfAbsent(List.copyOf(p), x -> new HashMap<>());
                    for (Holder h : t.holders) {
                        m.put(h.replica, new Route(h.lastAccess, t.depth, h.remote));
                    }
                }
            }
            snapshot(t, p, out);
        }
    }

    /**
     * Checks the shape invariants: edge tables findable and counted right, labels consistent with depths
     * and parent links, versions even, no holderless leaf, no holderless node with a single child.
     * Throws on violation.
     */
    void checkInvariants() {
        check(root, 0, true);
    }

    private static void check(Node node, int depth, boolean isRoot) {
        List<Edge> edges = live(node.edges);
        if (node.depth != depth) {
            throw new IllegalStateException("depth " + node.depth + " != path length " + depth);
        }
        if ((node.version & 1) != 0) {
            throw new IllegalStateException("odd version at rest");
        }
        if (edges.size() != node.edgeCount) {
            throw new IllegalStateException("edge count " + node.edgeCount + " != " + edges.size());
        }
        if (!isRoot && node.holders.length == 0 && edges.size() < 2) {
            throw new IllegalStateException("holderless node with " + edges.size() + " children at depth " + depth);
        }
        for (Edge e : edges) {
            if (e.label.length == 0 || e.label[0] != e.first || find(node.edges, e.first) != e) {
                throw new IllegalStateException("bad edge");
            }
            Node t = e.target;
            if (t.parent != node || t.edgeFirst != e.first || t.detached) {
                throw new IllegalStateException("bad parent link");
            }
            check(t, depth + e.label.length, false);
        }
    }

    // ------------------------------------------------------------------------------------------------
    // internals

    /**
     * A node: the end of one edge (its label lives in the parent's {@link Edge}). {@code edges} and
     * {@code holders} are replaced or published slot by slot, never half-written. The other fields are
     * only used by writers, under the writer mutex.
     */
    static final class Node {
        /** Blocks from the root to the end of this node's edge; fixed for the node's life. */
        final int depth;
        /** Even when stable, odd while an insert adds a replica to this node and others. */
        volatile int version;

        volatile Edge[] edges = NO_EDGES;
        volatile Holder[] holders = NO_HOLDERS;
        /**
         * The replicas of {@code holders}, in the same order, replaced with it (see {@link #setHolders}):
         * what {@link #match} reads, so that it never loads a {@link Holder}, each a separate object that
         * would cost a cache miss of its own.
         */
        volatile Replica[] replicas = NO_REPLICAS;

        int edgeCount;
        int tombstones;
        /** The node above; null only for a root. */
        Node parent;
        /** First block of the edge leading here. */
        long edgeFirst;
        /** True once maintenance removed the node from the tree. */
        boolean detached;

        Node(int depth) {
            this.depth = depth;
        }
    }

    /** An edge: a label (run of block hashes, {@code first} = label[0]) and the node it leads to. Immutable. */
    static final class Edge {
        final long first;
        final long[] label;
        final Node target;

        Edge(long first, long[] label, Node target) {
            this.first = first;
            this.label = label;
            this.target = target;
        }
    }

    /**
     * A replica holding a node, with the time (clock millis) it was last sent a prompt through it, and
     * whether only other instances ever reported it (remote: learned from a peer's event, never confirmed
     * by this instance's own traffic). Both fields only move one way: the time forward, remote to local.
     */
    static final class Holder {
        final Replica replica;
        volatile long lastAccess;
        volatile boolean remote;

        Holder(Replica replica, long lastAccess, boolean remote) {
            this.replica = replica;
            this.lastAccess = lastAccess;
            this.remote = remote;
        }

        /** A use at {@code time}: the later time wins; a local use makes the entry local. Writes only on change. */
        void touch(long time, boolean fromRemote) {
            if (lastAccess < time) {
                lastAccess = time;
            }
            if (!fromRemote && remote) {
                remote = false;
            }
        }
    }

    private static final class Entry {
        final Node node;
        final Holder holder;
        long time;
        boolean remote;

        Entry(Node node, Holder holder) {
            this.node = node;
            this.holder = holder;
        }
    }

    /** Builds a {@link PrefixTree}. */
    public static final class Builder {
        private long maxSize = DEFAULT_MAX_SIZE;
        private Duration ttl = Duration.ZERO;
        private Clock clock = Clock.systemUTC();

        private Builder() {}

        /** Size cap in blocks ({@code cache.max_tree_size}); a maintenance pass evicts above it. */
        public Builder maxSize(long maxSize) {
            Checks.atLeast("maxTreeSize", maxSize, 1);
            this.maxSize = maxSize;
            return this;
        }

        /** Entries idle longer than this are dropped by the next pass; zero (the default) disables. */
        public Builder ttl(Duration ttl) {
            Checks.notNegative("routeTtl", ttl);
            this.ttl = ttl;
            return this;
        }

        /** Time source for last-use stamps and the TTL. */
        public Builder clock(Clock clock) {
            this.clock = Objects.requireNonNull(clock);
            return this;
        }

        public PrefixTree build() {
            return new PrefixTree(this);
        }
    }
}
