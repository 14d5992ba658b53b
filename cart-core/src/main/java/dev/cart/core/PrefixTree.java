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
 * <ul>
 *   <li>{@link #match} takes no lock and writes nothing. It reads volatile snapshots; every structural
 *       change publishes a new {@code Edges} snapshot with one volatile store, so a reader sees either
 *       the old or the new shape, both consistent.</li>
 *   <li>{@link #insert} refreshes timestamps on the existing path without any lock, and skips the write
 *       when the stored time would not change (hot nodes near the root are touched by every request).
 *       Adding a replica to a node's holders takes that node's monitor only. A structural change (a new
 *       leaf or a split edge) takes the shared side of a {@link StampedLock} with {@code tryReadLock}
 *       and the monitor of the node it changes; structural inserts in different parts of the tree run
 *       in parallel.</li>
 *   <li>Maintenance ({@link #evict}, {@link #removeReplica}, {@link #clear}) takes the exclusive side.
 *       While it runs, an insert that needs a structural change is skipped and counted rather than
 *       made to wait; matches are not affected at all.</li>
 *   <li>Nodes removed by maintenance are marked detached; an insert that reaches one after the fact
 *       restarts from the root, so nothing is ever added to a node outside the tree and the size
 *       accounting stays exact.</li>
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
     * never waits for an insert or a maintenance pass.
     */
    public Match match(PromptKey key) {
        long[] b = key.blocks();
        int n = b.length;
        if (n == 0) {
            return Match.none(key.length());
        }
        Node[] path = new Node[8];
        int[] reach = new int[8];
        int depth = 0;
        Node node = root;
        int i = 0;
        while (i < n) {
            Edges e = node.edges;
            int idx = e.find(b[i]);
            if (idx < 0) {
                break;
            }
            long[] label = e.labels[idx];
            Node target = e.targets[idx];
            int m = commonPrefix(label, b, i);
            if (depth == path.length) {
                path = Arrays.copyOf(path, depth * 2);
                reach = Arrays.copyOf(reach, depth * 2);
            }
            path[depth] = target;
            reach[depth++] = i + m;
            if (m < label.length) {
                i += m;
                break;
            }
            i += m;
            node = target;
        }
        if (depth == 0) {
            return Match.none(key.length());
        }
        int unit = key.blockSize();
        List<Match.Holding> holders = new ArrayList<>(4);
        int matched = 0;
        for (int d = depth - 1; d >= 0; d--) {
            for (Holder h : path[d].holders) {
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
     * @return false if the insert needed a structural change while a maintenance pass held the tree,
     *         and was skipped (counted in {@link TreeStats#skippedInserts()})
     */
    public boolean insert(PromptKey key, Replica replica) {
        Objects.requireNonNull(replica, "replica");
        long[] b = key.blocks();
        int n = b.length;
        if (n == 0) {
            return true;
        }
        long now = clock.millis();
        long stamp = 0L;
        try {
            restart:
            for (;;) {
                Node start = root;
                Node node = start;
                int i = 0;
                while (i < n) {
                    Edges e = node.edges;
                    int idx = e.find(b[i]);
                    if (idx >= 0) {
                        long[] label = e.labels[idx];
                        if (commonPrefix(label, b, i) == label.length) {
                            Node target = e.targets[idx];
                            touch(target, replica, now);
                            node = target;
                            i += label.length;
                            continue;
                        }
                    }
                    // The key leaves the stored path here: a new leaf or a split is needed.
                    if (stamp == 0L) {
                        stamp = structure.tryReadLock();
                        if (stamp == 0L) {
                            skipped.increment();
                            return false;
                        }
                        if (root != start) {
                            continue restart; // cleared meanwhile
                        }
                    }
                    synchronized (node) {
                        if (node.detached) {
                            continue restart; // removed by maintenance before we locked it
                        }
                        Edges cur = node.edges;
                        int at = cur.find(b[i]);
                        if (at < 0) {
                            Node leaf = new Node(n);
                            leaf.parent = node;
                            leaf.edgeFirst = b[i];
                            leaf.holders = new Holder[] {new Holder(replica, now)};
                            node.edges = cur.insert(Arrays.copyOfRange(b, i, n), leaf);
                            size.addAndGet(n - i);
                            nodes.incrementAndGet();
                            entries.incrementAndGet();
                            return true;
                        }
                        long[] label = cur.labels[at];
                        int m = commonPrefix(label, b, i);
                        if (m < label.length) {
                            split(node, at, m);
                        }
                        // else another insert extended the path meanwhile; walk on from here
                    }
                }
                return true;
            }
        } finally {
            if (stamp != 0L) {
                structure.unlockRead(stamp);
            }
        }
    }

    /**
     * Splits the edge {@code at} of {@code parent} after {@code m} blocks: a new node takes the first
     * {@code m} blocks and inherits the old target's holders (they hold every prefix). Caller holds the
     * shared structure lock and the parent's monitor.
     */
    private void split(Node parent, int at, int m) {
        Edges cur = parent.edges;
        long[] label = cur.labels[at];
        Node target = cur.targets[at];
        Node mid = new Node(target.depth - (label.length - m));
        mid.parent = parent;
        mid.edgeFirst = label[0];
        Holder[] th = target.holders;
        Holder[] copy = new Holder[th.length];
        for (int k = 0; k < th.length; k++) {
            copy[k] = new Holder(th[k].replica, th[k].lastAccess);
        }
        mid.holders = copy;
        long[] tail = Arrays.copyOfRange(label, m, label.length);
        mid.edges = Edges.EMPTY.insert(tail, target);
        synchronized (target) {
            target.parent = mid;
            target.edgeFirst = tail[0];
        }
        parent.edges = cur.replace(at, Arrays.copyOf(label, m), mid);
        nodes.incrementAndGet();
        entries.addAndGet(copy.length);
    }

    /** Marks {@code replica} as holding {@code node}, used at {@code now}. */
    private void touch(Node node, Replica replica, long now) {
        for (Holder h : node.holders) {
            if (h.replica == replica) {
                if (h.lastAccess < now) {
                    h.lastAccess = now;
                }
                return;
            }
        }
        synchronized (node) {
            Holder[] hs = node.holders;
            for (Holder h : hs) {
                if (h.replica == replica) {
                    if (h.lastAccess < now) {
                        h.lastAccess = now;
                    }
                    return;
                }
            }
            if (node.detached) {
                return;
            }
            Holder[] grown = Arrays.copyOf(hs, hs.length + 1);
            grown[hs.length] = new Holder(replica, now);
            node.holders = grown;
            entries.incrementAndGet();
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
            Node old = root;
            root = new Node(0);
            // Mark every old node, so a holder refresh racing with the reset cannot count an entry
            // in a tree that is gone; the counters are zeroed only after that.
            ArrayDeque<Node> stack = new ArrayDeque<>();
            stack.push(old);
            while (!stack.isEmpty()) {
                Node node = stack.pop();
                synchronized (node) {
                    node.detached = true;
                }
                for (Node t : node.edges.targets) {
                    stack.push(t);
                }
            }
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
     * Removes one entry and repairs the shape around it. Caller holds the exclusive lock, so no structural
     * insert runs; concurrent holder refreshes are serialised by the node's monitor.
     *
     * @return true if the entry was still there
     */
    private boolean removeHolder(Node node, Holder holder) {
        synchronized (node) {
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
            node.holders = less.length == 0 ? NO_HOLDERS : less;
            entries.decrementAndGet();
        }
        tidy(node);
        return true;
    }

    /**
     * Detaches {@code node} if nobody holds it and it has no children, or merges it into its only child if
     * nobody holds it; then looks at the parent, whose shape may have changed too.
     */
    private void tidy(Node node) {
        while (node != root && node.parent != null) {
            Node parent = node.parent;
            synchronized (node) {
                if (node.detached || node.holders.length > 0) {
                    return;
                }
                Edges own = node.edges;
                if (own.size() > 1) {
                    return;
                }
                Edges pe = parent.edges;
                int at = pe.find(node.edgeFirst);
                if (at < 0 || pe.targets[at] != node) {
                    throw new IllegalStateException("tree corrupted: node not found under its parent");
                }
                long[] label = pe.labels[at];
                if (own.size() == 0) {
                    parent.edges = pe.remove(at);
                    size.addAndGet(-label.length);
                    nodes.decrementAndGet();
                    node.detached = true;
                } else {
                    Node child = own.targets[0];
                    long[] joined = Arrays.copyOf(label, label.length + own.labels[0].length);
                    System.arraycopy(own.labels[0], 0, joined, label.length, own.labels[0].length);
                    synchronized (child) {
                        child.parent = parent;
                        child.edgeFirst = node.edgeFirst;
                    }
                    parent.edges = pe.replace(at, joined, child);
                    nodes.decrementAndGet();
                    node.detached = true;
                    return; // the parent kept as many children as before
                }
            }
            node = parent;
        }
    }

    // ------------------------------------------------------------------------------------------------
    // internals

    /** A node: the end of one edge. Its edge label lives in the parent's {@link Edges}. */
    static final class Node {
        /** Blocks from the root to the end of this node's edge; fixed for the node's life. */
        final int depth;
        volatile Edges edges = Edges.EMPTY;
        volatile Holder[] holders = NO_HOLDERS;
        /** Set under this node's monitor; once true the node is no longer reachable from the root. */
        volatile boolean detached;
        /** Maintained under structural locks; read by maintenance under the exclusive lock. */
        Node parent;
        long edgeFirst;

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
