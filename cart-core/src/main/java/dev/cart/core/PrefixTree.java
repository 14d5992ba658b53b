package dev.cart.core;

import java.time.Clock;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReentrantLock;
import java.util.concurrent.locks.StampedLock;

/**
 * A concurrent radix tree over the block hashes of {@link PromptKey}s that remembers which replicas were
 * sent which prefixes, and when.
 *
 * <h2>Shape</h2>
 * Edges are compressed: each edge carries a run of block hashes (its label) and leads to a node. A node
 * holds the replicas that were sent a prompt passing through it, each with the time it was last used.
 * A replica recorded for a key holds every prefix of that key, so {@link #insert} refreshes the whole
 * path. The edges out of a node live in one immutable {@code Edges} snapshot, sorted by the first block
 * of each label and searched by binary search.
 *
 * <h2>Concurrency contract</h2>
 * {@link #insert} and {@link #match} are linearizable: every match sees each insert either wholly or
 * not at all, in an order consistent with real time. How:
 * <ul>
 *   <li>Every node carries a version, even when stable. A writer makes a node's version odd before it
 *       changes the node's edges or holders and even again after; all the nodes one insert changes are
 *       made odd before the first change and even after the last, so the insert is one step for anyone
 *       who checks the versions.</li>
 *   <li>{@link #match} takes no lock and writes nothing. It reads each node's version before its fields
 *       and checks every version again at the end; if one was odd or has moved, a writer touched a node
 *       on <em>this</em> path meanwhile and the match walks again. Writes elsewhere in the tree never
 *       make it retry, and a pass of maintenance never makes it wait.</li>
 *   <li>{@link #insert} of a key the replica already holds entirely only refreshes last-use times: no
 *       lock, no version change, and no write at all when the stored time would not change (nodes near
 *       the root are touched by every request). Any other insert takes the shared side of a
 *       {@link StampedLock} with {@code tryReadLock} and then a writer mutex: inserts that change what a
 *       match can see are serialised with each other (each takes about a microsecond).</li>
 *   <li>Maintenance ({@link #evict}, {@link #removeReplica}, {@link #clear}) takes the exclusive side of
 *       the stamped lock. While it runs, an insert that would change the tree is skipped and counted
 *       rather than made to wait. Each of its steps is versioned like an insert.</li>
 * </ul>
 *
 * <h2>Size and eviction</h2>
 * The size is the number of blocks stored on edges, one budget for the whole tree. A maintenance pass
 * drops entries older than the TTL, then (if still above {@code maxSize}) drops (node, replica) entries
 * least recently used first, deepest first among equals. A node no replica holds is detached when it has
 * no children and merged with its child when it has one, so memory returns to baseline under churn.
 */
public final class PrefixTree {

    /** Default {@code max_tree_size} in blocks: about 64 million characters of distinct prompt text. */
    public static final long DEFAULT_MAX_SIZE = 1_000_000;

    private static final Holder[] NO_HOLDERS = new Holder[0];

    private final long maxSize;
    private final long ttlMillis;
    private final Clock clock;
    private final StampedLock structure = new StampedLock();
    private final ReentrantLock writers = new ReentrantLock();
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
     * never waits for maintenance, and walks again only if an insert changed a node on this key's path
     * while it looked.
     */
    public Match match(PromptKey key) {
        long[] b = key.blocks();
        int n = b.length;
        if (n == 0) {
            return Match.none(key.length());
        }
        Node[] seen = new Node[8];
        int[] versions = new int[8];
        Holder[][] holders = new Holder[8][];
        int[] reach = new int[8];
        int spins = 0;
        attempt:
        for (;; backOff(++spins)) {
            Node node = root;
            int rootVersion = node.version;
            if ((rootVersion & 1) != 0) {
                continue;
            }
            int depth = 0;
            int i = 0;
            while (i < n) {
                Edges e = node.edges;
                int idx = e.find(b[i]);
                if (idx < 0) {
                    break;
                }
                long[] label = e.labels[idx];
                Node target = e.targets[idx];
                int v = target.version;
                if ((v & 1) != 0) {
                    continue attempt;
                }
                int m = commonPrefix(label, b, i);
                if (depth == seen.length) {
                    seen = Arrays.copyOf(seen, depth * 2);
                    versions = Arrays.copyOf(versions, depth * 2);
                    holders = Arrays.copyOf(holders, depth * 2);
                    reach = Arrays.copyOf(reach, depth * 2);
                }
                seen[depth] = target;
                versions[depth] = v;
                holders[depth] = target.holders;
                reach[depth++] = i + m;
                i += m;
                if (m < label.length) {
                    break;
                }
                node = target;
            }
            if (root.version != rootVersion) {
                continue;
            }
            for (int d = 0; d < depth; d++) {
                if (seen[d].version != versions[d]) {
                    continue attempt;
                }
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

    private static Match result(PromptKey key, int depth, Holder[][] path, int[] reach) {
        if (depth == 0) {
            return Match.none(key.length());
        }
        int unit = key.blockSize();
        List<Match.Holding> holders = new ArrayList<>(4);
        int matched = 0;
        for (int d = depth - 1; d >= 0; d--) {
            for (Holder h : path[d]) {
                if (!contains(holders, h.replica)) {
                    holders.add(new Match.Holding(h.replica, reach[d] * unit));
                    matched = Math.max(matched, reach[d] * unit);
                }
            }
        }
        return new Match(matched, key.length(), holders);
    }

    private static boolean contains(List<Match.Holding> holders, Replica r) {
        for (int k = 0; k < holders.size(); k++) {
            if (holders.get(k).replica() == r) {
                return true;
            }
        }
        return false;
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
     * @return false if the insert had to change the tree while a maintenance pass held it, and was
     *         skipped (counted in {@link TreeStats#skippedInserts()})
     */
    public boolean insert(PromptKey key, Replica replica) {
        Objects.requireNonNull(replica, "replica");
        long[] b = key.blocks();
        if (b.length == 0) {
            return true;
        }
        long now = clock.millis();
        if (refresh(b, replica, now)) {
            return true;
        }
        long stamp = structure.tryReadLock();
        if (stamp == 0L) {
            skipped.increment();
            return false;
        }
        writers.lock();
        try {
            write(b, replica, now);
            return true;
        } finally {
            writers.unlock();
            structure.unlockRead(stamp);
        }
    }

    /**
     * The lock-free case: the whole key is stored and the replica holds every node on it. Refreshes the
     * last-use times and returns true; returns false as soon as anything would have to change.
     */
    private boolean refresh(long[] b, Replica replica, long now) {
        Node node = root;
        int i = 0;
        Node[] path = null;
        int depth = 0;
        while (i < b.length) {
            Edges e = node.edges;
            int idx = e.find(b[i]);
            if (idx < 0) {
                return false;
            }
            long[] label = e.labels[idx];
            if (label.length > b.length - i || commonPrefix(label, b, i) < label.length) {
                return false;
            }
            node = e.targets[idx];
            if (holder(node.holders, replica) == null) {
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
            Holder h = holder(path[d].holders, replica);
            if (h != null && h.lastAccess < now) {
                h.lastAccess = now;
            }
        }
        return true;
    }

    /**
     * The writing case, under the writer mutex and the shared structure lock: adds the missing edge (a
     * new leaf, after splitting an edge if the key leaves it midway) and the replica to every node of the
     * path that lacks it, with every changed node's version odd meanwhile.
     */
    private void write(long[] b, Replica replica, long now) {
        int n = b.length;
        Node[] path = new Node[8];
        int depth = 0;
        Node node = root;
        int i = 0;
        int splitAt = -1; // edge index at the divergence point, when the key leaves an edge midway
        int splitLen = 0;
        boolean needLeaf = false;
        while (i < n) {
            Edges e = node.edges;
            int idx = e.find(b[i]);
            if (idx < 0) {
                needLeaf = true;
                break;
            }
            long[] label = e.labels[idx];
            int m = commonPrefix(label, b, i);
            if (m < label.length) {
                splitAt = idx;
                splitLen = m;
                needLeaf = i + m < n;
                break;
            }
            node = e.targets[idx];
            if (depth == path.length) {
                path = Arrays.copyOf(path, depth * 2);
            }
            path[depth++] = node;
            i += m;
        }
        Node divergence = node; // the node whose edges change, if any
        boolean structural = needLeaf || splitAt >= 0;

        // Mark every node this insert changes before changing any of them.
        boolean[] marked = new boolean[depth];
        for (int d = 0; d < depth; d++) {
            marked[d] = holder(path[d].holders, replica) == null && !(structural && path[d] == divergence);
        }
        if (structural) {
            divergence.version++;
        }
        for (int d = 0; d < depth; d++) {
            if (marked[d]) {
                path[d].version++;
            }
        }

        if (structural) {
            Edges cur = divergence.edges;
            Node parentOfLeaf = divergence;
            Edges leafEdges = cur;
            if (splitAt >= 0) {
                Node mid = split(divergence, splitAt, splitLen, replica, now);
                parentOfLeaf = mid;
                leafEdges = mid.edges;
                i += splitLen;
            }
            if (needLeaf) {
                Node leaf = new Node(n);
                leaf.parent = parentOfLeaf;
                leaf.edgeFirst = b[i];
                leaf.holders = new Holder[] {new Holder(replica, now)};
                size.addAndGet(n - i);
                nodes.incrementAndGet();
                entries.incrementAndGet();
                leafEdges = leafEdges.insert(Arrays.copyOfRange(b, i, n), leaf);
            }
            if (splitAt >= 0) {
                Node mid = parentOfLeaf;
                mid.edges = leafEdges;
                divergence.edges = cur.replace(splitAt, Arrays.copyOf(cur.labels[splitAt], splitLen), mid);
            } else {
                divergence.edges = leafEdges;
            }
        }
        for (int d = 0; d < depth; d++) {
            Holder h = holder(path[d].holders, replica);
            if (h == null) {
                Holder[] hs = path[d].holders;
                Holder[] grown = Arrays.copyOf(hs, hs.length + 1);
                grown[hs.length] = new Holder(replica, now);
                path[d].holders = grown;
                entries.incrementAndGet();
            } else if (h.lastAccess < now) {
                h.lastAccess = now;
            }
        }

        // Unmark, in the same order.
        if (structural) {
            divergence.version++;
        }
        for (int d = 0; d < depth; d++) {
            if (marked[d]) {
                path[d].version++;
            }
        }
    }

    /**
     * Builds the node that splits edge {@code at} of {@code parent} after {@code m} blocks; it holds what
     * the old target held (they hold every prefix) plus {@code replica}, and leads to the old target. Not
     * yet published: the caller stores the parent's new edges.
     */
    private Node split(Node parent, int at, int m, Replica replica, long now) {
        Edges cur = parent.edges;
        long[] label = cur.labels[at];
        Node target = cur.targets[at];
        Node mid = new Node(target.depth - (label.length - m));
        mid.parent = parent;
        mid.edgeFirst = label[0];
        Holder[] th = target.holders;
        Holder[] copy = new Holder[th.length + 1];
        int k = 0;
        for (Holder h : th) {
            if (h.replica != replica) {
                copy[k++] = new Holder(h.replica, h.lastAccess);
            }
        }
        copy[k++] = new Holder(replica, now);
        mid.holders = k == copy.length ? copy : Arrays.copyOf(copy, k);
        long[] tail = Arrays.copyOfRange(label, m, label.length);
        mid.edges = Edges.EMPTY.insert(tail, target);
        target.parent = mid;
        target.edgeFirst = tail[0];
        nodes.incrementAndGet();
        entries.addAndGet(mid.holders.length);
        return mid;
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
     * Drops {@code replica}'s claim on every node of {@code key}'s path that ends beyond
     * {@code keepLength} units (a route the replica turned out not to hold any more). Runs as a writer:
     * skipped, returning -1, while a maintenance pass holds the tree.
     *
     * @return the number of entries dropped, or -1 if skipped
     */
    public int forget(PromptKey key, Replica replica, int keepLength) {
        long[] b = key.blocks();
        int keepBlocks = Math.max(0, keepLength / key.blockSize());
        if (b.length <= keepBlocks) {
            return 0;
        }
        long stamp = structure.tryReadLock();
        if (stamp == 0L) {
            skipped.increment();
            return -1;
        }
        writers.lock();
        try {
            Node[] path = new Node[8];
            int depth = 0;
            Node node = root;
            int i = 0;
            while (i < b.length) {
                Edges e = node.edges;
                int idx = e.find(b[i]);
                if (idx < 0) {
                    break;
                }
                long[] label = e.labels[idx];
                Node target = e.targets[idx];
                if (depth == path.length) {
                    path = Arrays.copyOf(path, depth * 2);
                }
                path[depth++] = target;
                int m = commonPrefix(label, b, i);
                if (m < label.length) {
                    break;
                }
                i += m;
                node = target;
            }
            int dropped = 0;
            for (int d = depth - 1; d >= 0 && path[d].depth > keepBlocks; d--) {
                Holder h = holder(path[d].holders, replica);
                if (h != null && removeHolder(path[d], h)) {
                    dropped++;
                }
            }
            return dropped;
        } finally {
            writers.unlock();
            structure.unlockRead(stamp);
        }
    }

    // ------------------------------------------------------------------------------------------------
    // maintenance

    /**
     * One maintenance pass: drops entries idle longer than the TTL, then least-recently-used entries
     * until the size is within the cap. Holds the exclusive lock for its duration.
     */
    public EvictionReport evict() {
        long stamp = structure.writeLock();
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
            return new EvictionReport(expired, evicted, nodesBefore - nodes.get(), before, size.get(),
                    System.nanoTime() - t0);
        } finally {
            structure.unlockWrite(stamp);
        }
    }

    private static final Comparator<Entry> LRU_ORDER = (x, y) -> {
        int c = Long.compare(x.time, y.time);
        return c != 0 ? c : Integer.compare(y.node.depth, x.node.depth);
    };

    /** Forgets every entry of {@code replica}, for a replica leaving the pool. Waits for the tree. */
    public void removeReplica(Replica replica) {
        long stamp = structure.writeLock();
        try {
            for (Entry en : collectEntries()) {
                if (en.holder.replica == replica) {
                    removeHolder(en.node, en.holder);
                }
            }
        } finally {
            structure.unlockWrite(stamp);
        }
    }

    /** Drops everything (the daily reset). Waits for in-progress structural inserts. */
    public void clear() {
        long stamp = structure.writeLock();
        try {
            root = new Node(0);
            size.set(0);
            nodes.set(0);
            entries.set(0);
        } finally {
            structure.unlockWrite(stamp);
        }
    }

    /** Counters, read without locking (each exact; together they may be a moment apart). */
    public TreeStats stats() {
        return new TreeStats(size.get(), nodes.get(), entries.get(), skipped.sum());
    }

    /**
     * Walks the whole tree under the exclusive lock and counts what is really there. For diagnostics
     * and tests: the result must equal {@link #stats()} whenever no insert is running.
     */
    public TreeStats recount() {
        long stamp = structure.writeLock();
        try {
            long s = 0, nd = 0, en = 0;
            ArrayDeque<Node> stack = new ArrayDeque<>();
            stack.push(root);
            while (!stack.isEmpty()) {
                Node node = stack.pop();
                Edges e = node.edges;
                for (int k = 0; k < e.size(); k++) {
                    s += e.labels[k].length;
                    nd++;
                    en += e.targets[k].holders.length;
                    stack.push(e.targets[k]);
                }
            }
            return new TreeStats(s, nd, en, skipped.sum());
        } finally {
            structure.unlockWrite(stamp);
        }
    }

    /**
     * Draws the tree, one node per line, children in block order: {@code <label blocks> [replica@time]}.
     * Block hashes print as short ids given by {@code names}. For tests and debugging only.
     */
    public String draw(java.util.function.LongFunction<String> names) {
        StringBuilder sb = new StringBuilder("○\n");
        drawChildren(root, "", names, sb);
        return sb.toString();
    }

    private static void drawChildren(Node node, String indent, java.util.function.LongFunction<String> names,
                                     StringBuilder sb) {
        Edges e = node.edges;
        for (int k = 0; k < e.size(); k++) {
            boolean last = k == e.size() - 1;
            sb.append(indent).append(last ? "└── " : "├── ");
            for (int j = 0; j < e.labels[k].length; j++) {
                sb.append(names.apply(e.labels[k][j]));
            }
            Holder[] hs = e.targets[k].holders.clone();
            Arrays.sort(hs, Comparator.comparing(h -> h.replica.id()));
            sb.append(" [");
            for (int j = 0; j < hs.length; j++) {
                sb.append(j == 0 ? "" : " ").append(hs[j].replica.id());
            }
            sb.append("]\n");
            drawChildren(e.targets[k], indent + (last ? "    " : "│   "), names, sb);
        }
    }

    private List<Entry> collectEntries() {
        List<Entry> out = new ArrayList<>();
        ArrayDeque<Node> stack = new ArrayDeque<>();
        stack.push(root);
        while (!stack.isEmpty()) {
            Node node = stack.pop();
            Edges e = node.edges;
            for (int k = 0; k < e.size(); k++) {
                Node t = e.targets[k];
                for (Holder h : t.holders) {
                    out.add(new Entry(t, h));
                }
                stack.push(t);
            }
        }
        return out;
    }

    /**
     * Removes one entry and repairs the shape around it. Caller holds the exclusive lock, or the shared
     * lock and the writer mutex, so no other writer changes the tree meanwhile; each change is versioned
     * for concurrent matches.
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
        node.version++;
        node.holders = less.length == 0 ? NO_HOLDERS : less;
        node.version++;
        entries.decrementAndGet();
        tidy(node);
        return true;
    }

    /**
     * Detaches {@code node} if nobody holds it and it has no children, or merges it into its only child if
     * nobody holds it; then looks at the parent, whose shape may have changed too.
     */
    private void tidy(Node node) {
        while (node != root && !node.detached && node.holders.length == 0) {
            Edges own = node.edges;
            if (own.size() > 1) {
                return;
            }
            Node parent = node.parent;
            Edges pe = parent.edges;
            int at = pe.find(node.edgeFirst);
            if (at < 0 || pe.targets[at] != node) {
                throw new IllegalStateException("tree corrupted: node not found under its parent");
            }
            long[] label = pe.labels[at];
            if (own.size() == 0) {
                parent.version++;
                parent.edges = pe.remove(at);
                parent.version++;
                size.addAndGet(-label.length);
                nodes.decrementAndGet();
                node.detached = true;
                node = parent;
            } else {
                Node child = own.targets[0];
                long[] joined = Arrays.copyOf(label, label.length + own.labels[0].length);
                System.arraycopy(own.labels[0], 0, joined, label.length, own.labels[0].length);
                child.parent = parent;
                child.edgeFirst = node.edgeFirst;
                parent.version++;
                parent.edges = pe.replace(at, joined, child);
                parent.version++;
                nodes.decrementAndGet();
                node.detached = true;
                return; // the parent kept as many children as before
            }
        }
    }

    // ------------------------------------------------------------------------------------------------
    // test hooks (package-private)

    /** One route as the tree holds it, expanded per block prefix. */
    record Route(long time, int nodeDepth) {
    }

    /**
     * Every (prefix, replica) the tree holds, one entry per block prefix (a node's entries cover every
     * prefix that ends on its edge). Call only while nothing else uses the tree.
     */
    java.util.Map<List<Long>, java.util.Map<Replica, Route>> snapshot() {
        java.util.Map<List<Long>, java.util.Map<Replica, Route>> out = new java.util.HashMap<>();
        snapshot(root, new ArrayList<>(), out);
        return out;
    }

    private static void snapshot(Node node, List<Long> path, java.util.Map<List<Long>, java.util.Map<Replica, Route>> out) {
        Edges e = node.edges;
        for (int k = 0; k < e.size(); k++) {
            Node t = e.targets[k];
            List<Long> p = new ArrayList<>(path);
            for (long b : e.labels[k]) {
                p.add(b);
                if (t.holders.length > 0) {
                    java.util.Map<Replica, Route> m = out.computeIfAbsent(List.copyOf(p), x -> new java.util.HashMap<>());
                    for (Holder h : t.holders) {
                        m.put(h.replica, new Route(h.lastAccess, t.depth));
                    }
                }
            }
            snapshot(t, p, out);
        }
    }

    /**
     * Checks the shape invariants: sorted unique edges, labels non-empty and consistent with depths and
     * parent links, no holderless leaf, no holderless node with a single child. Throws on violation.
     */
    void checkInvariants() {
        check(root, 0, true);
    }

    private static void check(Node node, int depth, boolean isRoot) {
        Edges e = node.edges;
        if (node.depth != depth) {
            throw new IllegalStateException("depth " + node.depth + " != path length " + depth);
        }
        if (!isRoot && node.holders.length == 0 && e.size() < 2) {
            throw new IllegalStateException("holderless node with " + e.size() + " children at depth " + depth);
        }
        for (int k = 0; k < e.size(); k++) {
            if (k > 0 && e.first[k - 1] >= e.first[k]) {
                throw new IllegalStateException("edges not sorted");
            }
            if (e.labels[k].length == 0 || e.labels[k][0] != e.first[k]) {
                throw new IllegalStateException("bad label");
            }
            Node t = e.targets[k];
            if (t.parent != node || t.edgeFirst != e.first[k] || t.detached || (t.version & 1) != 0) {
                throw new IllegalStateException("bad parent link");
            }
            check(t, depth + e.labels[k].length, false);
        }
    }

    // ------------------------------------------------------------------------------------------------
    // internals

    /**
     * A node: the end of one edge. Its edge label lives in the parent's {@link Edges}. {@code edges} and
     * {@code holders} are replaced (never mutated) by writers, between two increments of {@code version}.
     * The other fields are only used by writers, under the writer mutex or the exclusive lock.
     */
    static final class Node {
        /** Blocks from the root to the end of this node's edge; fixed for the node's life. */
        final int depth;
        /** Even when stable, odd while a writer changes this node. */
        volatile int version;
        volatile Edges edges = Edges.EMPTY;
        volatile Holder[] holders = NO_HOLDERS;
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

    /** A replica holding a node, with the time (clock millis) it was last sent a prompt through it. */
    static final class Holder {
        final Replica replica;
        volatile long lastAccess;

        Holder(Replica replica, long lastAccess) {
            this.replica = replica;
            this.lastAccess = lastAccess;
        }
    }

    /** Immutable sorted edge list of one node. */
    static final class Edges {
        static final Edges EMPTY = new Edges(new long[0], new long[0][], new Node[0]);

        final long[] first;
        final long[][] labels;
        final Node[] targets;

        private Edges(long[] first, long[][] labels, Node[] targets) {
            this.first = first;
            this.labels = labels;
            this.targets = targets;
        }

        int size() {
            return first.length;
        }

        int find(long key) {
            long[] f = first;
            if (f.length <= 4) {
                for (int k = 0; k < f.length; k++) {
                    if (f[k] == key) {
                        return k;
                    }
                }
                return -1;
            }
            int r = Arrays.binarySearch(f, key);
            return r < 0 ? -1 : r;
        }

        Edges insert(long[] label, Node target) {
            int pos = -Arrays.binarySearch(first, label[0]) - 1;
            int n = first.length;
            long[] f = new long[n + 1];
            long[][] l = new long[n + 1][];
            Node[] t = new Node[n + 1];
            System.arraycopy(first, 0, f, 0, pos);
            System.arraycopy(labels, 0, l, 0, pos);
            System.arraycopy(targets, 0, t, 0, pos);
            f[pos] = label[0];
            l[pos] = label;
            t[pos] = target;
            System.arraycopy(first, pos, f, pos + 1, n - pos);
            System.arraycopy(labels, pos, l, pos + 1, n - pos);
            System.arraycopy(targets, pos, t, pos + 1, n - pos);
            return new Edges(f, l, t);
        }

        Edges replace(int at, long[] label, Node target) {
            long[][] l = labels.clone();
            Node[] t = targets.clone();
            l[at] = label;
            t[at] = target;
            return new Edges(first, l, t);
        }

        Edges remove(int at) {
            int n = first.length;
            if (n == 1) {
                return EMPTY;
            }
            long[] f = new long[n - 1];
            long[][] l = new long[n - 1][];
            Node[] t = new Node[n - 1];
            System.arraycopy(first, 0, f, 0, at);
            System.arraycopy(labels, 0, l, 0, at);
            System.arraycopy(targets, 0, t, 0, at);
            System.arraycopy(first, at + 1, f, at, n - at - 1);
            System.arraycopy(labels, at + 1, l, at, n - at - 1);
            System.arraycopy(targets, at + 1, t, at, n - at - 1);
            return new Edges(f, l, t);
        }
    }

    private static final class Entry {
        final Node node;
        final Holder holder;
        long time;

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

        private Builder() {
        }

        /** Size cap in blocks ({@code cache.max_tree_size}); a maintenance pass evicts above it. */
        public Builder maxSize(long maxSize) {
            Checks.atLeast("cache.max_tree_size", maxSize, 1);
            this.maxSize = maxSize;
            return this;
        }

        /** Entries idle longer than this are dropped by the next pass; zero (the default) disables. */
        public Builder ttl(Duration ttl) {
            Checks.notNegative("cache.route_ttl_secs", ttl);
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
