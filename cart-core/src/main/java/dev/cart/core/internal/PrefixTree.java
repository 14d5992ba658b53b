package dev.cart.core.internal;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import com.google.errorprone.annotations.concurrent.LockMethod;
import dev.cart.core.EvictionReport;
import dev.cart.core.PromptKey;
import dev.cart.core.TreeStats;
import dev.cart.core.spi.Match;
import dev.cart.core.spi.Replica;
import dev.cart.core.sync.RouteEvent;
import dev.cart.core.sync.RouteSync;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongFunction;
import org.jspecify.annotations.Nullable;

/**
 * A concurrent radix tree over the block hashes of {@link PromptKey}s that remembers which replicas were
 * sent which prefixes, and when.
 *
 * <h2>Shape</h2>
 * Edges are compressed: each edge carries a run of block hashes (its label) and leads to a node. A node
 * holds the replicas that were sent a prompt passing through it, each with the time it was last used.
 * A replica recorded for a key holds every prefix of that key, so {@link #insert} marks the whole path.
 * The time, though, is stamped on one node only: the deepest of the key's path that the replica held
 * (or the new leaf). An entry was last used when the latest key through it was, so its last use is the
 * latest of its own time and those of the same replica's entries below it, which maintenance works out
 * in its walk over the tree (and hands up to the parent's entry when it drops one). An insert thus
 * writes one time, not one per level, and loads no holder on its way down (nodes near the root, on
 * every request's path, are not written at all).
 * The edge into a node is stored in the node itself (its label and first block, both final). A node's
 * first two children sit in the node too (each beside its first block: most nodes of a long prompt's
 * path have one or two), and stay there; a third and later ones go to a small open-addressing table
 * keyed by their first block, so a lookup costs the same for 3 children or 100,000 (the node keeps the
 * table's mask, so the slot's load does not wait for the table's length). A shared prompt's
 * path was there before the prompts that branch off it, so a walk along it finds its way in the slots.
 * Which replicas hold a node is a bit mask in the node itself: the tree numbers the replicas it has seen
 * (the first 63 get a bit; any further ones, rare, are listed in an overflow array the mask flags), so
 * one level of a walk loads the child and its label, and the table only for a child past the first two. Since a
 * label never changes, an edge that changes (split, merge) changes by replacing its node with a copy
 * (see below). A node one replica holds (every new leaf, most nodes of a tree) keeps that replica's
 * {@link Holder} itself, without an array; a second holder makes the array. A label of one or two blocks
 * has no array either: the node's first and second blocks are the label.
 *
 * <h2>Concurrency contract</h2>
 * {@link #insert} and {@link #match} are linearizable: every match sees each insert either wholly or
 * not at all, in an order consistent with real time. How:
 * <ul>
 *   <li>Every change a reader can see is one atomic store: a new node in a child slot of the node or
 *       of its table (a new leaf, the node that splits an edge, the copy of a node whose edge was
 *       merged, a tombstone), a new table (published before the node's own two slots are emptied),
 *       or new holders (the one holder itself, or a new array of several, with the node's holder
 *       mask, which is what a match reads: holders are loaded only by writers). A match reads the replica numbering once and looks again at the end:
 *       a replica numbered meanwhile (or a number freed by {@link #removeReplica}) makes it walk again,
 *       so a bit always names the replica it was set for. A node's first block, label and depth are final, so a reader
 *       never sees a label change under it: a split publishes a new middle node whose child slot holds
 *       a copy of the old child with the rest of the label; a merge publishes a copy of the child with
 *       the joined label. A copy shares the original's table, holders and version (and takes its
 *       child slots), and the original is retired ({@code replacedBy}), so a writer that still holds
 *       the original (an eviction pass's entry list) finds the node that took its place.</li>
 *   <li>An insert that adds its replica to existing nodes changes several of them. Every node carries a
 *       version, even when stable; the insert makes the version of each node it will add the replica to
 *       odd before its first change and even after its last, so it is one step for anyone who checks.</li>
 *   <li>{@link #match} takes no lock and writes nothing. It reads each node's version before its fields,
 *       then looks again: every node it followed still in its parent's slot, every version unchanged (the
 *       sum of the path's versions unchanged, since each only grows). If not, a
 *       writer changed <em>this</em> path meanwhile and the match walks again. Writes elsewhere (most
 *       structural writes: a new leaf under another node) never make it retry, and maintenance never
 *       makes it wait.</li>
 *   <li>{@link #insert} of a key the replica already holds entirely only stamps its time (and clears
 *       the remote marks it meets): no lock, no version change, no write when the stored time would not
 *       change. Any other insert takes the writer mutex: writes are serialised. Its lock-free walk, which
 *       tried the refresh, has already stamped the deepest node the replica held, and what can be made
 *       before the mutex is (the new leaf's label, from where that walk left the tree), so the mutex
 *       covers the second walk and the stores. The second walk is skipped when no writer ended its work
 *       between the start of the lock-free walk and the mutex ({@link #writesEnded}, read with acquire at
 *       the start, bumped with release at the end of every writer's turn): the tree is then exactly as
 *       the lock-free walk saw it, and when the replica held every node it walked, what is left is to add
 *       the leaf (splitting the edge it left midway) where that walk stopped. The usual new leaf, the
 *       replica's own next turn of a conversation, costs one walk.</li>
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
public final class PrefixTree {

    /** Default {@code max_tree_size} in blocks: about 64 million characters of distinct prompt text. */
    public static final long DEFAULT_MAX_SIZE = 1_000_000;

    private static final Holder[] NO_HOLDERS = new Holder[0];
    private static final Replica[] NO_REPLICAS = new Replica[0];
    private static final Node[] NO_CHILDREN = new Node[0];
    private static final long[] NO_LABEL = new long[0];
    /** Marks a removed slot; probes continue past it. */
    private static final Node TOMBSTONE = new Node(0, NO_LABEL, -1);

    private static final VarHandle SLOT = MethodHandles.arrayElementVarHandle(Node[].class);
    private static final VarHandle FIRST0 = field(Node.class, "first0", long.class);
    private static final VarHandle FIRST1 = field(Node.class, "first1", long.class);
    private static final VarHandle CHILD0 = field(Node.class, "child0", Node.class);
    private static final VarHandle CHILD1 = field(Node.class, "child1", Node.class);
    private static final VarHandle WRITES_ENDED = field(PrefixTree.class, "writesEnded", long.class);

    private static VarHandle field(Class<?> owner, String name, Class<?> type) {
        try {
            return MethodHandles.lookup().findVarHandle(owner, name, type);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }
    /** Replica numbers below this have a bit in a node's holder mask; the others are listed in its overflow. */
    private static final int MASK_BITS = 63;
    /** The mask's sign bit: the node also has holders numbered {@link #MASK_BITS} or more (see {@link Node#overflow}). */
    private static final long OVERFLOW = Long.MIN_VALUE;

    private final long maxSize;
    private final long ttlMillis;
    private final Clock clock;
    private final ReentrantLock writers = new ReentrantLock();
    private final AtomicInteger maintenance = new AtomicInteger();
    private final AtomicLong size = new AtomicLong();
    private final AtomicLong nodes = new AtomicLong();
    private final AtomicLong entries = new AtomicLong();
    private final LongAdder skipped = new LongAdder();
    private volatile Node root = newRoot();
    /**
     * How many times a writer gave the mutex back, written (with release) just before it does so, read
     * (with acquire) when an insert's lock-free walk starts: equal under the mutex to what the walk read,
     * no writer changed the tree since the walk began, nor while it ran (one running then ends after it).
     * Only an insert's fast path reads it; see the class comment.
     */
    private volatile long writesEnded;
    /**
     * The replicas by number (null where a number is free); copy-on-write, replaced under the writer
     * mutex before any holder of a new number is published, and after the last holder of a freed one is
     * gone.
     */
    private volatile Replica[] numbered = NO_REPLICAS;
    /**
     * The writer's scratch for the nodes of the path it walks (grown once for a deeper path, then kept);
     * emptied after each write.
     */
    @GuardedBy("writers")
    private Node[] writePath = new Node[16];

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
        long[] b = KeyAccess.blocks(key);
        int n = b.length;
        if (n == 0) {
            return Match.none(key.length());
        }
        // Per level only the node (for the second look) and its holder mask (read once, inside the
        // version check). A level's reach is its node's depth, except the last one's (kept aside), and
        // the versions are summed rather than kept: each only grows, so the path's sum is unchanged
        // exactly when every node's version is.
        Node[] seen = new Node[16];
        long[] masks = new long[16];
        Replica[][] overflow = null; // per depth, only where a node's mask says it has some
        int spins = 0;
        attempt:
        for (; ; backOff(++spins)) {
            Replica[] names = numbered;
            Node start = root;
            Node node = start;
            int depth = 0;
            int i = 0;
            long versions = 0;
            while (i < n) {
                Node child = find(node, b[i]);
                if (child == null) {
                    break;
                }
                int v = child.version;
                if ((v & 1) != 0) {
                    continue attempt;
                }
                int m = matched(child, b, i);
                if (depth == seen.length) {
                    seen = Arrays.copyOf(seen, depth * 2);
                    masks = Arrays.copyOf(masks, depth * 2);
                    if (overflow != null) {
                        overflow = Arrays.copyOf(overflow, depth * 2);
                    }
                }
                long mask = child.mask;
                if (mask < 0) {
                    if (overflow == null) {
                        overflow = new Replica[seen.length][];
                    }
                    overflow[depth] = child.overflow; // written before the mask: this one or a later one
                }
                seen[depth] = child;
                masks[depth++] = mask;
                versions += v;
                i += m;
                if (m < child.span) {
                    break;
                }
                node = child;
            }
            // Second look: every node still in its slot and unchanged means all that was read was
            // current at once (nodes, labels and holder arrays are never reused, versions only grow).
            if (root != start || numbered != names) {
                continue;
            }
            Node parent = start;
            for (int d = 0; d < depth; d++) {
                Node child = seen[d];
                if (find(parent, child.first) != child) {
                    continue attempt;
                }
                versions -= child.version;
                parent = child;
            }
            if (versions != 0) {
                continue;
            }
            return result(key, depth, seen, masks, overflow, names, i);
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
     * Each replica on the path once, with the depth of the deepest node it holds there (deepest first;
     * among replicas of one node, by number). Reads the nodes' masks and the numbering only: no holder.
     * Without overflowing holders (the usual case) the count is known up front, so the holdings go
     * straight into the list {@link Match} keeps (which then does not copy it): one or two in a small
     * list of their own, more in one array of the right size, copied once by {@link List#of}.
     */
    private static Match result(
            PromptKey key,
            int depth,
            Node[] seen,
            long[] masks,
            Replica @Nullable [][] overflow,
            Replica[] names,
            int last) {
        long all = 0;
        int extra = 0;
        for (int d = 0; d < depth; d++) {
            all |= masks[d];
            if (masks[d] < 0 && overflow != null) { // a negative mask is one with an overflow array
                extra += overflow[d].length;
            }
        }
        int bound = Long.bitCount(all & ~OVERFLOW) + extra;
        if (bound == 0) {
            return Match.none(key.length());
        }
        int unit = key.blockSize();
        Match.Holding[] found = new Match.Holding[bound];
        int count = 0;
        long taken = OVERFLOW; // the flag bit is never a replica
        int matched = 0;
        for (int d = depth - 1; d >= 0; d--) {
            long mask = masks[d];
            int reach = (d == depth - 1 ? last : seen[d].depth) * unit;
            for (long bits = mask & ~taken; bits != 0; bits &= bits - 1) {
                found[count++] = new Match.Holding(names[Long.numberOfTrailingZeros(bits)], reach);
            }
            taken |= mask;
            if (mask < 0 && overflow != null) {
                next:
                for (Replica r : overflow[d]) {
                    for (int k = 0; k < count; k++) {
                        if (found[k].replica() == r) {
                            continue next;
                        }
                    }
                    found[count++] = new Match.Holding(r, reach);
                }
            }
            if (matched == 0 && count > 0) {
                matched = reach; // deepest first: reach only shrinks going up
            }
        }
        List<Match.Holding> holders;
        if (count == 1) {
            holders = List.of(found[0]);
        } else if (count == 2) {
            holders = List.of(found[0], found[1]);
        } else {
            holders = List.of(count == found.length ? found : Arrays.copyOf(found, count));
        }
        return new Match(matched, key.length(), holders); // an immutable list: Match keeps it as it is
    }

    /**
     * How many blocks of {@code child}'s label are {@code key}'s from {@code from}, where its first block
     * is (the child was found by it): at least 1. Loads the label array only for a label longer than
     * two blocks, since the node holds its first two blocks and its length.
     */
    private static int matched(Node child, long[] key, int from) {
        int span = child.span;
        if (span == 1 || from + 1 == key.length || child.second != key[from + 1]) {
            return 1;
        }
        int len = Math.min(span, key.length - from);
        if (len == 2) {
            return 2;
        }
        int mm = Arrays.mismatch(child.blocks, 2, len, key, from + 2, from + len);
        return mm < 0 ? len : 2 + mm;
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
        long[] b = KeyAccess.blocks(key);
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
    public boolean insertRemote(long[] blocks, Replica replica, long timeMillis) {
        Objects.requireNonNull(replica, "replica");
        return blocks.length == 0 || insert(blocks, replica, Math.min(timeMillis, clock.millis()), true);
    }

    /**
     * As {@link #insert(PromptKey, Replica)}, for a router that shares its routes ({@link RouteSync}):
     * tells, in the same lock-free walk when the replica already holds the whole key (the usual hit),
     * whether {@code replica}'s claim on the first {@code probe} blocks (if more than 0) had been learned
     * only from other instances ({@link #learnedElsewhere}) before this insert made it local, and whether
     * the key's deepest node had already been used by the replica in the current window of
     * {@code windowMillis} (if more than 0): a route already shared in this window needs no new event.
     *
     * @return a combination of {@link #WAS_REMOTE}, {@link #SKIPPED} (maintenance held the tree) and
     *         {@link #USED_IN_WINDOW}; 0 for none
     */
    public int insertNoting(PromptKey key, Replica replica, int probe, long windowMillis) {
        Objects.requireNonNull(replica, "replica");
        long[] b = KeyAccess.blocks(key);
        if (b.length == 0) {
            return 0;
        }
        return refresh(b, replica, clock.millis(), false, probe, windowMillis);
    }

    /** {@link #insertNoting}: the claim on the probed blocks had been learned only from other instances. */
    public static final int WAS_REMOTE = 1;
    /** {@link #insertNoting}: skipped under maintenance. */
    public static final int SKIPPED = 2;
    /** {@link #insertNoting}: a refresh of a key whose deepest node the replica had used in this window. */
    public static final int USED_IN_WINDOW = 4;

    private boolean insert(long[] b, Replica replica, long now, boolean remote) {
        return (refresh(b, replica, now, remote, 0, 0) & SKIPPED) == 0;
    }

    /**
     * The writer path of an insert whose lock-free walk, begun when {@link #writesEnded} was {@code seen},
     * found the tree holding {@code reach} blocks of the key. When that walk found the replica holding
     * every node it walked through, {@code at} is the last of them (the root if none), below which the
     * key goes on in no child ({@code split} null) or leaves {@code split}'s edge after {@code splitLen}
     * blocks; else {@code at} is null. Returns {@link #SKIPPED} if skipped under maintenance, else 0.
     */
    private int writeRest(
            long[] b,
            Replica replica,
            long now,
            boolean remote,
            int reach,
            @Nullable Node at,
            @Nullable Node split,
            int splitLen,
            long seen) {
        // Made before the mutex: the label of the leaf the key most likely needs, from where the lock-free
        // walk left the tree (used only if the writer's walk stops at the same block); none for a label of
        // one or two blocks, which the node keeps without an array.
        long[] label = b.length - reach > 2 ? Arrays.copyOfRange(b, reach, b.length) : null;
        if (!lockForWrite()) {
            skipped.increment();
            return SKIPPED;
        }
        try {
            if (at != null && writesEnded == seen) { // the tree is as the lock-free walk saw it
                grow(at, split, splitLen, reach - splitLen, b, reach, label, replica, numberFor(replica), now, remote);
            } else {
                write(b, replica, now, remote, reach, label);
            }
            return 0;
        } finally {
            writeEnded();
            writers.unlock();
        }
    }

    /**
     * Counts a writer's turn in {@link #writesEnded}: the last store before the mutex is given back, by
     * its holder only. Every writer and maintenance operation calls it just before {@code writers.unlock()}
     * in its {@code finally} (the unlock stays written there: Error Prone's lock check recognises a held
     * mutex only by its unlock in the {@code finally}).
     */
    private void writeEnded() {
        WRITES_ENDED.setRelease(this, writesEnded + 1);
    }

    /**
     * Takes the writer mutex unless maintenance is running or waiting; never waits for maintenance.
     * Waits (parked, in short slices) only for another writer. Returns true holding the mutex, false
     * not holding it.
     */
    @SuppressWarnings("deprecation") // @LockMethod: the way to tell Error Prone's GuardedBy check
    @LockMethod("writers")
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

    /**
     * An insert: the lock-free walk every insert starts with, then the writer if the key needs more than
     * the walk may do. The walk is the whole insert when the whole key is stored and the replica holds
     * every node on it. It walks down while the replica holds the path's nodes (it holds no
     * node below the first it does not hold: a replica holding a node holds its parent) and stamps the
     * time on the deepest it held (see Shape in the class comment); a walk that then needs the writer, and
     * is skipped under maintenance, has so recorded the use of what the replica already held. A local
     * insert also makes the entries on the way local: it loads a holder only where the node's
     * {@link Node#remoteHint} says it may be marked remote, so the usual walk loads one holder, the
     * deepest's. Writes only where a stored time or mark changes.
     *
     * <p>Returns flags: {@link #SKIPPED} when the key needed the writer and maintenance held the tree;
     * {@link #WAS_REMOTE} when {@code probe} blocks are asked about (more than 0) and the
     * node holding the last of them was, before this walk, the replica's only from other instances (what
     * {@link #learnedElsewhere} tells); {@link #USED_IN_WINDOW} when the replica holds the whole key,
     * {@code windowMillis} is more than 0 and the deepest node's own time was already in the window of
     * {@code now} (a use of a longer key through it, stamped below it, does not count: such a route is
     * shared once more than it need be).
     */
    private int refresh(long[] b, Replica replica, long now, boolean remote, int probe, long windowMillis) {
        long seen = writesEnded; // before the first node is read
        long bit = bitOf(numberOf(replica));
        int n = b.length;
        int probeEnd = probe > 0 ? Math.min(probe, n) : Integer.MAX_VALUE;
        Node node = root;
        Node deepest = null; // the deepest node of the path the replica holds (it holds all above it)
        int i = 0;
        boolean heldAll = true;
        int flags = 0;
        while (i < n) {
            Node child = find(node, b[i]);
            if (child == null) {
                stamp(deepest, bit, replica, now, remote);
                return flags | writeRest(b, replica, now, remote, i, heldAll ? node : null, null, 0, seen);
            }
            int m = matched(child, b, i);
            boolean probed = i < probeEnd && i + m >= probeEnd; // the node holding block probe-1
            boolean whole = m == child.span; // a node the key ends or leaves inside is not stamped
            boolean heldAbove = heldAll;
            i += m;
            if (whole && heldAll && holds(child, bit, replica)) {
                deepest = child;
                // The entry's time is the deepest node's, stamped below; only a mark may need a change here.
                if ((probed || !remote) && maybeRemote(child, bit)) {
                    Holder h = holderOf(child, bit, replica); // null only in a race with a writer
                    if (h != null) {
                        if (probed && h.remote) {
                            flags |= WAS_REMOTE;
                        }
                        if (!remote) {
                            h.makeLocal();
                        }
                    }
                }
            } else {
                heldAll = false;
                if (probed && maybeRemote(child, bit)) {
                    Holder h = holder(child, replica);
                    if (h != null && h.remote) {
                        flags |= WAS_REMOTE;
                    }
                }
            }
            if (!whole) {
                stamp(deepest, bit, replica, now, remote);
                return flags | writeRest(b, replica, now, remote, i, heldAbove ? node : null, child, m, seen);
            }
            node = child;
        }
        long before = stamp(deepest, bit, replica, now, remote);
        if (!heldAll) {
            return flags | writeRest(b, replica, now, remote, n, null, null, 0, seen);
        }
        boolean lastInWindow = windowMillis > 0
                && before != Long.MIN_VALUE
                && Math.floorDiv(before, windowMillis) == Math.floorDiv(now, windowMillis);
        return flags | (lastInWindow ? USED_IN_WINDOW : 0);
    }

    /**
     * Stamps the use at {@code now} on {@code replica}'s entry at {@code node} (none if null); returns the
     * entry's own time before, or {@link Long#MIN_VALUE} if there was none (a race with a writer).
     */
    private static long stamp(@Nullable Node node, long bit, Replica replica, long now, boolean remote) {
        if (node == null) {
            return Long.MIN_VALUE;
        }
        Holder h = holderOf(node, bit, replica);
        if (h == null) {
            return Long.MIN_VALUE;
        }
        long before = h.lastAccess;
        h.touch(now, remote);
        return before;
    }

    /**
     * Whether {@code replica}'s entry at {@code node} may be marked remote ({@link Node#remoteHint}): false
     * means it is not, without loading the holder.
     */
    private static boolean maybeRemote(Node node, long bit) {
        long hint = node.remoteHint;
        return bit != 0 ? (hint & bit) != 0 : hint < 0;
    }

    /**
     * The writing case, under the writer mutex: adds the missing edge (a new leaf, after splitting an edge
     * if the key leaves it midway) and the replica to every node of the path that lacks it. The nodes
     * that gain the replica are odd from before the first change to after the last.
     */
    @GuardedBy("writers")
    private void write(long[] b, Replica replica, long now, boolean remote, int from, long @Nullable [] label) {
        int number = numberFor(replica);
        long bit = bitOf(number);
        int n = b.length;
        Node[] path = writePath;
        int depth = 0;
        Node node = root;
        int i = 0;
        Node split = null; // the child whose edge the key leaves midway, if any
        int splitLen = 0;
        boolean needLeaf = false;
        while (i < n) {
            Node child = find(node, b[i]);
            if (child == null) {
                needLeaf = true;
                break;
            }
            int m = matched(child, b, i);
            if (m < child.span) {
                split = child;
                splitLen = m;
                needLeaf = i + m < n;
                break;
            }
            node = child;
            if (depth == path.length) {
                path = writePath = Arrays.copyOf(path, depth * 2);
            }
            path[depth++] = node;
            i += m;
        }
        // The nodes that lack the replica are made odd; from then on their odd version is what marks them
        // (every version is even at rest, and this is the only writer).
        int marked = 0;
        try {
            for (int d = 0; d < depth; d++) {
                if (!holds(path[d], bit, replica)) {
                    path[d].version++;
                    marked++;
                }
            }
            if (split != null || needLeaf) {
                grow(node, split, splitLen, i, b, from, label, replica, number, now, remote);
            }
            for (int d = 0; d < depth; d++) {
                if ((path[d].version & 1) != 0) {
                    setHolders(path[d], with(path[d].held, new Holder(replica, number, now, remote)));
                    entries.incrementAndGet();
                } else if (!remote && maybeRemote(path[d], bit)) {
                    // a mark the lock-free walk did not see yet (the time is the deepest node's)
                    Holder h = holderOf(path[d], bit, replica); // found: the writers' mutex is held
                    if (h != null) {
                        h.makeLocal();
                    }
                }
            }
        } finally {
            if (marked > 0) {
                for (int d = 0; d < depth; d++) {
                    if ((path[d].version & 1) != 0) {
                        path[d].version++;
                    }
                }
            }
            Arrays.fill(path, 0, depth, null); // the scratch keeps no node (nor what hangs below it) alive
        }
    }

    /**
     * Adds below {@code node}, whose edge ends after block {@code i} of the key, what the key needs
     * there: the child {@code split} cut after {@code splitLen} blocks if the key leaves (or ends inside)
     * its edge, and a new leaf for the rest of the key if any. The new structure holds the replica from
     * birth and appears in one store.
     */
    @GuardedBy("writers")
    private void grow(
            Node node,
            @Nullable Node split,
            int splitLen,
            int i,
            long[] b,
            int from,
            long @Nullable [] label,
            Replica replica,
            int number,
            long now,
            boolean remote) {
        if (split != null) {
            Node mid = newMid(node, split, splitLen, replica, number, now, remote);
            if (i + splitLen < b.length) {
                addChild(mid, newLeaf(mid, b, i + splitLen, from, label, replica, number, now, remote));
            }
            replaceChild(node, mid);
        } else {
            addChild(node, newLeaf(node, b, i, from, label, replica, number, now, remote));
        }
    }

    @GuardedBy("writers")
    private Node newLeaf(
            Node parent,
            long[] b,
            int at,
            int from,
            long @Nullable [] prepared,
            Replica replica,
            int number,
            long now,
            boolean remote) {
        Node leaf = prepared != null && from == at
                ? new Node(b.length, prepared, b[at])
                : new Node(b.length, b, at, b.length);
        leaf.parent = parent;
        setHolder(leaf, new Holder(replica, number, now, remote));
        size.addAndGet(leaf.span);
        nodes.incrementAndGet();
        entries.incrementAndGet();
        return leaf;
    }

    /**
     * Builds the node that splits the edge into {@code target} (a child of {@code parent}) after {@code m}
     * blocks; it holds what the target held (they hold every prefix) plus {@code replica}, and leads to
     * a copy of the target that carries the rest of the label; the target is retired in favour of the
     * copy. Not yet published: the caller
     * replaces the target by it in the parent's table. If {@code replica} held the target already, its entry here merges both: the later time,
     * and local if either was.
     */
    @GuardedBy("writers")
    private Node newMid(Node parent, Node target, int m, Replica replica, int number, long now, boolean remote) {
        long[] label = target.label();
        Node mid = new Node(target.depth - (label.length - m), Arrays.copyOf(label, m), target.first);
        mid.parent = parent;
        Holder[] th = target.holders();
        Holder[] copy = new Holder[th.length];
        int k = 0;
        Holder own = new Holder(replica, number, now, remote);
        for (Holder h : th) {
            if (h.replica != replica) {
                copy[k++] = new Holder(h.replica, h.number, h.lastAccess, h.remote);
            } else {
                own.touch(h.lastAccess, h.remote);
            }
        }
        setHolders(mid, with(k == copy.length ? copy : Arrays.copyOf(copy, k), own));
        Node rest = copyWithLabel(target, Arrays.copyOfRange(label, m, label.length), mid);
        addChild(mid, rest);
        retire(target, rest);
        nodes.incrementAndGet();
        entries.addAndGet(mid.holderCount());
        return mid;
    }

    /**
     * A copy of {@code node} under {@code parent} with another label (same depth, so the label ends at
     * the same block): it shares the node's child table, holders (the same {@link Holder} objects, so a
     * lock-free refresh that still touches the original's updates the copy's) and version. The node's
     * children are moved under the copy. Not yet published.
     */
    @GuardedBy("writers")
    private Node copyWithLabel(Node node, long[] label, Node parent) {
        Node copy = new Node(node.depth, label, label[0]);
        copy.parent = parent;
        copy.version = node.version;
        setTable(copy, node.children);
        copy.first0 = node.first0;
        copy.first1 = node.first1;
        copy.child0 = node.child0;
        copy.child1 = node.child1;
        copy.childCount = node.childCount;
        copy.tombstones = node.tombstones;
        copy.held = node.held;
        copy.overflow = node.overflow;
        copy.remoteHint = node.remoteHint;
        copy.mask = node.mask;
        if (node.childCount > 0) {
            for (Node c : live(node)) {
                c.parent = copy;
            }
        }
        return copy;
    }

    /** Marks {@code old} as replaced by {@code copy}: writers still holding {@code old} follow it. */
    @GuardedBy("writers")
    private void retire(Node old, Node copy) {
        old.replacedBy = copy;
        old.parent = null; // left the tree
    }

    /** The node that now stands for {@code node}: itself, or the copy that replaced it. */
    private static Node current(Node node) {
        while (node.replacedBy != null) {
            node = node.replacedBy;
        }
        return node;
    }

    /**
     * Replaces a node's holders (sorted by replica number) and, with them, its mask and overflow. The
     * holders are an immutable snapshot; a match reads only the mask (and the overflow it flags, written
     * before it), once per node and inside its version check, so it sees the holders of before or of
     * after, as it would have by reading {@code holders}.
     */
    private static void setHolders(Node node, Holder[] hs) {
        if (hs.length == 1) {
            setHolder(node, hs[0]);
            return;
        }
        long mask = 0;
        long hint = 0;
        int over = 0;
        for (Holder h : hs) {
            long b = flagOf(h.number);
            mask |= b;
            hint |= h.remote ? b : 0;
            over += h.number < MASK_BITS ? 0 : 1;
        }
        Replica[] overflow = NO_REPLICAS;
        if (over > 0) {
            overflow = new Replica[over];
            int k = 0;
            for (Holder h : hs) {
                if (h.number >= MASK_BITS) {
                    overflow[k++] = h.replica;
                }
            }
        }
        node.held = hs;
        node.overflow = overflow;
        node.remoteHint = hint;
        node.mask = mask; // last: a replica seen here is in the holders and overflow read next
    }

    /** {@link #setHolders} for a node one replica holds: the holder itself, no array. */
    private static void setHolder(Node node, Holder h) {
        long b = flagOf(h.number);
        node.held = h;
        node.overflow = h.number < MASK_BITS ? NO_REPLICAS : new Replica[] {h.replica};
        node.remoteHint = h.remote ? b : 0;
        node.mask = b; // last, as above
    }

    /** The holders {@code held} stands for ({@link Node#held}) with {@code h} added in order of replica number (a new array). */
    private static Holder[] with(Object held, Holder h) {
        if (held instanceof Holder one) {
            return one.number < h.number ? new Holder[] {one, h} : new Holder[] {h, one};
        }
        Holder[] hs = (Holder[]) held;
        int at = 0;
        while (at < hs.length && hs[at].number < h.number) {
            at++;
        }
        Holder[] out = new Holder[hs.length + 1];
        System.arraycopy(hs, 0, out, 0, at);
        out[at] = h;
        System.arraycopy(hs, at, out, at + 1, hs.length - at);
        return out;
    }

    /** What a holder numbered {@code number} sets in a node's mask: its bit, or {@link #OVERFLOW} past the bits. */
    private static long flagOf(int number) {
        return number < MASK_BITS ? 1L << number : OVERFLOW;
    }

    /** The mask bit of a replica number: 0 when it has none (numbered past the mask, or not numbered: -1). */
    private static long bitOf(int number) {
        return number >= 0 && number < MASK_BITS ? 1L << number : 0;
    }

    /** The replica's number in this tree, or -1 if it has none (it holds nothing). Lock-free. */
    private int numberOf(Replica replica) {
        Replica[] names = numbered;
        for (int k = 0; k < names.length; k++) {
            if (names[k] == replica) {
                return k;
            }
        }
        return -1;
    }

    /** The replica's number, given the lowest free one if it has none yet. */
    @GuardedBy("writers")
    private int numberFor(Replica replica) {
        Replica[] names = numbered;
        int free = -1;
        for (int k = 0; k < names.length; k++) {
            if (names[k] == replica) {
                return k;
            }
            if (free < 0 && names[k] == null) {
                free = k;
            }
        }
        Replica[] more = Arrays.copyOf(names, free < 0 ? names.length + 1 : names.length);
        int k = free < 0 ? names.length : free;
        more[k] = replica;
        numbered = more; // before any holder with this number is published
        return k;
    }

    /** Frees the replica's number; it must hold nothing any more. */
    @GuardedBy("writers")
    private void unnumber(Replica replica) {
        int k = numberOf(replica);
        if (k >= 0) {
            Replica[] less = numbered.clone();
            less[k] = null;
            numbered = less;
        }
    }

    /**
     * Whether {@code replica} (whose mask bit is {@code bit}, 0 if none) holds {@code node}; reads the
     * node's mask only, unless the replica has no bit and the node flags an overflow.
     */
    private static boolean holds(Node node, long bit, Replica replica) {
        long mask = node.mask;
        if (bit != 0) {
            return (mask & bit) != 0;
        }
        if (mask < 0) {
            for (Replica r : node.overflow) {
                if (r == replica) {
                    return true;
                }
            }
        }
        return false;
    }

    /**
     * The holder of {@code replica} at {@code node}, or null: found by its position in the holders
     * (sorted by number, so the bits below its own count the holders before it), so only that one holder
     * is loaded. Without the writer mutex the mask and the holders may be of different snapshots for a
     * moment; then it searches the holders themselves.
     */
    private static @Nullable Holder holderOf(Node node, long bit, Replica replica) {
        long mask = node.mask;
        Object held = node.held;
        if (held instanceof Holder one) {
            return one.replica == replica ? one : null;
        }
        Holder[] hs = (Holder[]) held;
        if (bit != 0 && (mask & bit) != 0) {
            int k = Long.bitCount(mask & (bit - 1));
            if (k < hs.length && hs[k].replica == replica) {
                return hs[k];
            }
        }
        return holder(hs, replica);
    }

    /** The holder of {@code replica} at {@code node}, or null. */
    private static @Nullable Holder holder(Node node, Replica replica) {
        Object held = node.held;
        if (held instanceof Holder one) {
            return one.replica == replica ? one : null;
        }
        return holder((Holder[]) held, replica);
    }

    private static @Nullable Holder holder(Holder[] hs, Replica replica) {
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
        long[] b = KeyAccess.blocks(key);
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
                Node child = find(node, b[i]);
                if (child == null) {
                    break;
                }
                int m = matched(child, b, i);
                if (m < child.span) {
                    // The key ends or leaves inside this edge: what the edge goes on to is a branch. If the
                    // replica holds it below the lost block, split the edge where the key stops following
                    // it (one store, as an insert does), so the key's part can be kept and the rest dropped.
                    Holder below = holder(child, replica);
                    if (i + m > keepBlocks && below != null) {
                        Node mid = newMid( // as it was
                                node, child, m, replica, below.number, below.lastAccess, below.remote);
                        replaceChild(node, mid);
                        path.add(mid);
                    }
                    break;
                }
                path.add(child);
                i += m;
                node = child;
            }
            List<Node> doomed = new ArrayList<>();
            for (int k = 0; k < path.size(); k++) {
                Node p = path.get(k);
                if (p.depth <= keepBlocks) {
                    continue; // branches off here start at or before the lost block: not below it
                }
                Node next = k + 1 < path.size() ? path.get(k + 1) : null;
                for (Node c : live(p)) {
                    if (c != next) {
                        heldBelow(c, replica, doomed);
                    }
                }
            }
            // Odd from before the first removal to after the last, as an insert does: a match through
            // these nodes walks again rather than see the branch half dropped. A node merged meanwhile
            // is replaced by a copy that carries its (odd) version: the copy is made even again.
            for (Node v : doomed) {
                v.version++;
            }
            int dropped = 0;
            try {
                for (Node v : doomed) {
                    Node at = current(v);
                    Holder h = holder(at, replica);
                    if (h != null && removeHolder(at, h)) {
                        dropped++;
                    }
                }
            } finally {
                for (Node v : doomed) {
                    current(v).version++;
                }
            }
            return dropped;
        } finally {
            writeEnded();
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
            if (holder(n, replica) == null) {
                continue; // a replica holding a node holds its parent: nothing of it below either
            }
            order.push(n);
            for (Node c : live(n)) {
                stack.push(c);
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
        maintenance.incrementAndGet(); // new writes are refused from now on, running ones finish
        writers.lock();
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
                    if (en.time < cutoff) {
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
            maintenance.decrementAndGet();
            writeEnded();
            writers.unlock();
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
    public long dropUntil(long cutoffMillis) {
        maintenance.incrementAndGet(); // new writes are refused from now on, running ones finish
        writers.lock();
        try {
            long dropped = 0;
            for (Entry en : collectEntries()) {
                if (en.time <= cutoffMillis && removeHolder(en.node, en.holder)) {
                    dropped++;
                }
            }
            return dropped;
        } finally {
            maintenance.decrementAndGet();
            writeEnded();
            writers.unlock();
        }
    }

    /** Forgets every entry of {@code replica}, for a replica leaving the pool. */
    public void removeReplica(Replica replica) {
        maintenance.incrementAndGet(); // new writes are refused from now on, running ones finish
        writers.lock();
        try {
            for (Entry en : collectEntries()) {
                if (en.holder.replica == replica) {
                    removeHolder(en.node, en.holder);
                }
            }
            unnumber(replica); // it holds nothing now; a match that read the old numbering walks again
        } finally {
            maintenance.decrementAndGet();
            writeEnded();
            writers.unlock();
        }
    }

    /** Drops everything (the daily reset). */
    public void clear() {
        maintenance.incrementAndGet(); // new writes are refused from now on, running ones finish
        writers.lock();
        try {
            root = newRoot();
            size.set(0);
            nodes.set(0);
            entries.set(0);
        } finally {
            maintenance.decrementAndGet();
            writeEnded();
            writers.unlock();
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
        maintenance.incrementAndGet(); // new writes are refused from now on, running ones finish
        writers.lock();
        try {
            long s = 0;
            long nd = 0;
            long en = 0;
            ArrayDeque<Node> stack = new ArrayDeque<>();
            stack.push(root);
            while (!stack.isEmpty()) {
                for (Node c : live(stack.pop())) {
                    s += c.span;
                    nd++;
                    en += c.holderCount();
                    stack.push(c);
                }
            }
            return new TreeStats(s, nd, en, skipped.sum());
        } finally {
            maintenance.decrementAndGet();
            writeEnded();
            writers.unlock();
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
        List<Node> children = live(node);
        children.sort(Comparator.comparingLong(c -> c.first));
        for (int k = 0; k < children.size(); k++) {
            Node e = children.get(k);
            boolean last = k == children.size() - 1;
            sb.append(indent).append(last ? "└── " : "├── ");
            for (long block : e.label()) {
                sb.append(names.apply(block));
            }
            Holder[] hs = e.holders().clone();
            Arrays.sort(hs, Comparator.comparing(h -> h.replica.id()));
            sb.append(" [");
            for (int j = 0; j < hs.length; j++) {
                sb.append(j == 0 ? "" : " ").append(hs[j].replica.id());
            }
            sb.append("]\n");
            drawChildren(e, indent + (last ? "    " : "│   "), names, sb);
        }
    }

    /**
     * Every entry of the tree, parents' before their children's, each with its last use: the latest of its
     * own time and those of the same replica's entries below it (an insert stamps only the deepest node
     * of its key that the replica held, so a node's entry was last used when the latest key through it
     * was), and its mark.
     */
    private List<Entry> collectEntries() {
        List<Entry> out = new ArrayList<>();
        ArrayDeque<Node> nodes = new ArrayDeque<>();
        ArrayDeque<Long> spans = new ArrayDeque<>(); // where each stacked node's entries lie in out
        nodes.push(root);
        spans.push(0L);
        while (!nodes.isEmpty()) {
            Node n = nodes.pop();
            long span = spans.pop();
            int from = (int) (span >>> 32);
            int to = (int) span;
            for (Node c : live(n)) {
                int start = out.size();
                for (Holder h : c.holders()) {
                    Entry en = new Entry(c, h);
                    for (int k = from; k < to; k++) {
                        if (out.get(k).holder.replica == h.replica) {
                            en.up = out.get(k);
                            break;
                        }
                    }
                    out.add(en);
                }
                nodes.push(c);
                spans.push((long) start << 32 | out.size());
            }
        }
        for (int k = out.size() - 1; k >= 0; k--) { // children before parents
            Entry en = out.get(k);
            if (en.up != null && en.up.time < en.time) {
                en.up.time = en.time;
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
    @GuardedBy("writers")
    private boolean removeHolder(Node given, Holder holder) {
        Node node = current(given);
        if (node.parent == null) {
            return false; // left the tree (or the root, which holds nothing)
        }
        Holder[] hs = node.holders();
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
        // The parent's entry was last used when this one was, at the latest; its own time may be older (an
        // insert stamps the deepest node it held), so it takes this one's before this one goes.
        Holder up = holder(node.parent, holder.replica);
        if (up != null) {
            up.touch(holder.lastAccess, true);
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
    @GuardedBy("writers")
    private void tidy(Node node) {
        while (node.parent != null && node.holderCount() == 0 && node.childCount <= 1) { // not the root, in the tree
            Node parent = node.parent;
            if (find(parent, node.first) != node) {
                throw new IllegalStateException("tree corrupted: node not found under its parent");
            }
            if (node.childCount == 0) {
                removeChild(parent, node.first);
                size.addAndGet(-node.span);
                nodes.decrementAndGet();
                node.parent = null; // left the tree
                node = parent;
            } else {
                Node only = live(node).get(0);
                long[] joined = Arrays.copyOf(node.label(), node.span + only.span);
                System.arraycopy(only.label(), 0, joined, node.span, only.span);
                Node merged = copyWithLabel(only, joined, parent);
                replaceChild(parent, merged);
                retire(only, merged);
                nodes.decrementAndGet();
                node.parent = null; // left the tree
                return; // the parent kept as many children as before
            }
        }
    }

    // ------------------------------------------------------------------------------------------------
    // children: a node's first two children sit in the node itself (their first blocks beside them), so
    // a node with one or two children (most of a long prompt's path) costs no table load; a third and
    // later ones go to a table, open addressing with linear probing keyed by the first block. The first
    // two stay in the node when the table comes, and a slot emptied by a removal takes the next new
    // child: a node on a shared prompt's path has the path's continuation among its first children, and
    // the leaves that branch off later (other prompts' own text) go to the table, so a walk along the
    // path loads no table. A child never moves between the slots and the table, so each is in one place
    // for its whole life there. Readers look at the slots, then the table, with acquire loads; the
    // single writer (under the mutex) publishes a slot's first block before its child, a table slot with
    // a release store and a whole new table with a volatile store, and a child's own first block
    // confirms every hit.

    private static int spread(long key, int mask) {
        long h = key * 0x9E3779B97F4A7C15L;
        return (int) (h ^ (h >>> 32)) & mask;
    }

    /** The live child of {@code node} whose label starts with {@code first}, or null. */
    private static @Nullable Node find(Node node, long first) {
        if ((long) FIRST0.getAcquire(node) == first) {
            Node c = (Node) CHILD0.getAcquire(node);
            if (c != null && c.first == first) {
                return c;
            }
        }
        if ((long) FIRST1.getAcquire(node) == first) {
            Node c = (Node) CHILD1.getAcquire(node);
            if (c != null && c.first == first) {
                return c;
            }
        }
        Node[] table = node.children;
        int mask = node.tableMask; // read after the table: as new as it, or newer
        if (mask < 0 || mask + 1 != table.length) { // no table, or one replaced while we looked
            return find(table, first);
        }
        // The first slot's address comes from the node's mask, not the table's length: the load of the
        // slot does not wait for that of the table's header (on another line for a table of more than a
        // dozen slots), the check above being a branch the processor runs ahead of.
        return probe(table, mask, first);
    }

    /**
     * Publishes {@code table} as {@code node}'s children, its mask first (a reader that sees the table
     * sees the mask of that table or of a later one, which it tells by the length). For writers.
     */
    private static void setTable(Node node, Node[] table) {
        node.tableMask = table.length - 1;
        node.children = table;
    }

    /** The live child in {@code table} whose label starts with {@code first}, or null. */
    private static @Nullable Node find(Node[] table, long first) {
        int len = table.length;
        return len == 0 ? null : probe(table, len - 1, first);
    }

    /** The live child in {@code table} (of {@code mask + 1} slots) whose label starts with {@code first}, or null. */
    private static @Nullable Node probe(Node[] table, int mask, long first) {
        for (int i = spread(first, mask); ; i = (i + 1) & mask) {
            Node c = (Node) SLOT.getAcquire(table, i);
            if (c == null) {
                return null;
            }
            if (c.first == first && c != TOMBSTONE) {
                return c;
            }
        }
    }

    /** Live children of a node (a snapshot list). */
    private static List<Node> live(Node node) {
        Node[] table = node.children;
        List<Node> out = new ArrayList<>(Math.min(table.length + 2, 16));
        Node c0 = (Node) CHILD0.getAcquire(node);
        Node c1 = (Node) CHILD1.getAcquire(node);
        if (c0 != null) {
            out.add(c0);
        }
        if (c1 != null) {
            out.add(c1);
        }
        for (int i = 0; i < table.length; i++) {
            Node c = (Node) SLOT.getAcquire(table, i);
            if (c != null && c != TOMBSTONE) {
                out.add(c);
            }
        }
        return out;
    }

    /** Adds a child whose first block is not yet among the node's children. */
    @GuardedBy("writers")
    private void addChild(Node node, Node child) {
        if (node.child0 == null) {
            FIRST0.setRelease(node, child.first); // before the child: a reader that sees it sees the block
            CHILD0.setRelease(node, child);
            node.childCount++;
            return;
        }
        if (node.child1 == null) {
            FIRST1.setRelease(node, child.first);
            CHILD1.setRelease(node, child);
            node.childCount++;
            return;
        }
        Node[] table = node.children;
        int inTable = inTable(node);
        if (table.length == 0) { // the first child past the slots
            Node[] made = new Node[4];
            place(made, child);
            node.tombstones = 0;
            node.childCount++;
            setTable(node, made);
            return;
        }
        if ((inTable + node.tombstones + 1) * 2 > table.length) {
            Node[] grown = rebuild(table, Math.max(4, Integer.highestOneBit((inTable + 1) * 4 - 1)));
            place(grown, child);
            node.tombstones = 0;
            node.childCount++;
            setTable(node, grown); // one volatile store publishes the new table with the new child
            return;
        }
        int mask = table.length - 1;
        int i = spread(child.first, mask);
        while (true) {
            Node c = table[i];
            if (c == null || c == TOMBSTONE) {
                if (c == TOMBSTONE) {
                    node.tombstones--;
                }
                SLOT.setRelease(table, i, child);
                node.childCount++;
                return;
            }
            i = (i + 1) & mask;
        }
    }

    /** Replaces the child with the same first block. */
    @GuardedBy("writers")
    private void replaceChild(Node node, Node child) {
        Node c0 = node.child0;
        if (c0 != null && c0.first == child.first) {
            CHILD0.setRelease(node, child);
            return;
        }
        Node c1 = node.child1;
        if (c1 != null && c1.first == child.first) {
            CHILD1.setRelease(node, child);
            return;
        }
        Node[] table = node.children;
        int mask = table.length - 1;
        for (int i = spread(child.first, mask); ; i = (i + 1) & mask) {
            Node c = table[i];
            if (c != null && c != TOMBSTONE && c.first == child.first) {
                SLOT.setRelease(table, i, child);
                return;
            }
        }
    }

    /** Removes the child starting with {@code first}. */
    @GuardedBy("writers")
    private void removeChild(Node node, long first) {
        Node c0 = node.child0;
        if (c0 != null && c0.first == first) {
            CHILD0.setRelease(node, (Node) null);
            node.childCount--;
            return;
        }
        Node c1 = node.child1;
        if (c1 != null && c1.first == first) {
            CHILD1.setRelease(node, (Node) null);
            node.childCount--;
            return;
        }
        Node[] table = node.children;
        int inTable = inTable(node);
        if (inTable == 1) { // the table's last child
            node.childCount--;
            node.tombstones = 0;
            setTable(node, NO_CHILDREN);
            return;
        }
        int mask = table.length - 1;
        for (int i = spread(first, mask); ; i = (i + 1) & mask) {
            Node c = table[i];
            if (c != null && c != TOMBSTONE && c.first == first) {
                SLOT.setRelease(table, i, TOMBSTONE);
                node.childCount--;
                node.tombstones++;
                inTable--;
                break;
            }
        }
        if (node.tombstones > inTable && table.length > 8) {
            setTable(node, rebuild(table, Math.max(4, Integer.highestOneBit(inTable * 4 - 1))));
            node.tombstones = 0;
        }
    }

    /** How many of the node's children are in its table: all but those in its two slots. For writers. */
    private static int inTable(Node node) {
        return node.childCount - (node.child0 != null ? 1 : 0) - (node.child1 != null ? 1 : 0);
    }

    private static Node[] rebuild(Node[] table, int capacity) {
        Node[] t = new Node[capacity];
        for (Node c : table) {
            if (c != null && c != TOMBSTONE) {
                place(t, c);
            }
        }
        return t;
    }

    private static void place(Node[] t, Node c) {
        int mask = t.length - 1;
        int i = spread(c.first, mask);
        while (t[i] != null) {
            i = (i + 1) & mask;
        }
        t[i] = c;
    }

    // ------------------------------------------------------------------------------------------------
    // origin of a route (several instances)

    /**
     * Whether {@code replica}'s claim on the first {@code blocks} blocks of {@code key} was learned only from
     * other instances ({@link #insertRemote}) and never confirmed by this instance's own traffic. A lock-free
     * walk like a match's first look (no second look: the answer feeds a metric, a moment's staleness is
     * fine); false when the tree does not hold it.
     */
    public boolean learnedElsewhere(long[] key, int blocks, Replica replica) {
        Node node = root;
        int i = 0;
        int end = Math.min(blocks, key.length);
        while (i < end) {
            Node child = find(node, key[i]);
            if (child == null) {
                return false;
            }
            int m = matched(child, key, i);
            i += m;
            if (i >= end) {
                Holder h = holder(child, replica);
                return h != null && h.remote;
            }
            if (m < child.span) {
                return false;
            }
            node = child;
        }
        return false;
    }

    // ------------------------------------------------------------------------------------------------
    // test hooks (package-private)

    /**
     * What the lock-free walk of {@code key} meets, as counts: the nodes it visits (each where it looks
     * for a child, the last one included), how many of those looked in their table (the child not in
     * their own two slots), and how many edges it follows are at most two blocks long (compared without
     * their label array). For the benchmarks' tools; call only while nothing else uses the tree.
     */
    public int[] walkShape(long[] key) {
        Node node = root;
        int i = 0;
        int visits = 0;
        int tables = 0;
        int shortEdges = 0;
        while (i < key.length) {
            visits++;
            Node child = find(node, key[i]);
            if (node.children.length > 0 && (child == null || (child != node.child0 && child != node.child1))) {
                tables++; // looked in the table: not found in the slots
            }
            if (child == null) {
                break;
            }
            int m = matched(child, key, i);
            if (child.span <= 2) {
                shortEdges++;
            }
            if (m < child.span) {
                break;
            }
            i += m;
            node = child;
        }
        return new int[] {visits, tables, shortEdges};
    }

    /** One route as the tree holds it, expanded per block prefix. */
    public record Route(long time, int nodeDepth, boolean remote) {}

    /**
     * Every (prefix, replica) the tree holds, one entry per block prefix (a node's entries cover every
     * prefix that ends on its edge). Call only while nothing else uses the tree.
     */
    public Map<List<Long>, Map<Replica, Route>> snapshot() {
        IdentityHashMap<Holder, Long> times = new IdentityHashMap<>();
        for (Entry en : collectEntries()) {
            times.put(en.holder, en.time);
        }
        Map<List<Long>, Map<Replica, Route>> out = new HashMap<>();
        snapshot(root, new ArrayList<>(), times, out);
        return out;
    }

    private static void snapshot(
            Node node, List<Long> path, IdentityHashMap<Holder, Long> times, Map<List<Long>, Map<Replica, Route>> out) {
        for (Node t : live(node)) {
            List<Long> p = new ArrayList<>(path);
            for (long block : t.label()) {
                p.add(block);
                if (t.holderCount() > 0) {
                    Map<Replica, Route> m = out.computeIfAbsent(List.copyOf(p), x -> new HashMap<>());
                    for (Holder h : t.holders()) {
                        m.put(h.replica, new Route(times.getOrDefault(h, h.lastAccess), t.depth, h.remote));
                    }
                }
            }
            snapshot(t, p, times, out);
        }
    }

    /**
     * Checks the shape invariants: edge tables findable and counted right, labels consistent with depths
     * and parent links, versions even, no holderless leaf, no holderless node with a single child.
     * Throws on violation.
     */
    public void checkInvariants() {
        check(root, 0, true);
    }

    private static void check(Node node, int depth, boolean isRoot) {
        List<Node> children = live(node);
        if (node.depth != depth) {
            throw new IllegalStateException("depth " + node.depth + " != path length " + depth);
        }
        if ((node.version & 1) != 0) {
            throw new IllegalStateException("odd version at rest");
        }
        if (children.size() != node.childCount) {
            throw new IllegalStateException("child count " + node.childCount + " != " + children.size());
        }
        Holder[] holders = node.holders();
        if (node.held instanceof Holder[] && holders.length == 1) {
            throw new IllegalStateException("a single holder kept in an array");
        }
        if (!isRoot && holders.length == 0 && children.size() < 2) {
            throw new IllegalStateException("holderless node with " + children.size() + " children at depth " + depth);
        }
        long mask = 0;
        int over = 0;
        for (int k = 0; k < holders.length; k++) {
            Holder h = holders[k];
            if (k > 0 && holders[k - 1].number >= h.number) {
                throw new IllegalStateException("holders not in order of replica number");
            }
            if (h.remote && !maybeRemote(node, bitOf(h.number))) {
                throw new IllegalStateException("a remote holder the node's hint does not flag");
            }
            mask |= flagOf(h.number);
            over += h.number < MASK_BITS ? 0 : 1;
        }
        if (node.mask != mask || node.overflow.length != over) {
            throw new IllegalStateException("holder mask out of step with the holders");
        }
        int tabled = 0;
        for (Node c : node.children) {
            tabled += c != null && c != TOMBSTONE ? 1 : 0;
        }
        if (tabled != inTable(node) || (node.children.length > 0 && tabled == 0)) {
            throw new IllegalStateException("table count " + tabled + " out of step with the node's");
        }
        if (node.tableMask != node.children.length - 1) {
            throw new IllegalStateException("table mask " + node.tableMask + " for " + node.children.length + " slots");
        }
        if ((node.child0 != null && node.child0.first != node.first0)
                || (node.child1 != null && node.child1.first != node.first1)) {
            throw new IllegalStateException("a child slot's first block out of step with its child");
        }
        for (Node t : children) {
            long[] label = t.label();
            if (label.length == 0
                    || label[0] != t.first
                    || (label.length > 1 && label[1] != t.second)
                    || (t.blocks == null) != (label.length <= 2)
                    || find(node, t.first) != t) {
                throw new IllegalStateException("bad edge");
            }
            if (t.parent != node || t.replacedBy != null) {
                throw new IllegalStateException("bad parent link");
            }
            check(t, depth + t.span, false);
        }
    }

    // ------------------------------------------------------------------------------------------------
    // internals

    private static Node newRoot() {
        return new Node(0, NO_LABEL, 0);
    }

    /**
     * A node with the edge that leads to it: its label (the run of block hashes from the parent, {@code
     * first} = label[0]) and depth are final for the node's life. {@code children} and {@code holders}
     * are replaced or published slot by slot, never half-written. The other fields are used only by
     * writers, under the tree's writer mutex (which a static class cannot name for {@code @GuardedBy};
     * the tree's methods that change them carry it instead).
     */
    static final class Node {
        /** First block of the label: the key of this node in its parent's table. */
        final long first;
        /**
         * The blocks of the edge from the parent to this node (its label), never changed (a change makes a
         * copy); null for an edge of one or two blocks, which {@link #first} and {@link #second} hold: an
         * array less per such node.
         */
        final long @Nullable [] blocks;
        /** Blocks from the root to the end of this node's edge; fixed for the node's life. */
        final int depth;
        /** {@code label.length} and {@code label[1]} (0 if none), so a short edge is compared without its array. */
        final int span;

        final long second;
        /** Even when stable, odd while a writer adds (or drops) a replica to this node and others. */
        volatile int version;

        /**
         * Two of the node's children (its first two, or later ones that took a slot a removal emptied) and
         * their first blocks (see {@link #find}); accessed through {@link #CHILD0} and the other handles
         * with acquire and release.
         */
        long first0;

        long first1;

        @Nullable
        Node child0;

        @Nullable
        Node child1;
        /** The node's children past its two slots; empty when it has none. */
        volatile Node[] children = NO_CHILDREN;
        /**
         * {@code children.length - 1} (-1 for none), set before {@link #children} is published: where a
         * lookup starts probing, without waiting to load the table's length. Read racily and checked
         * against the length.
         */
        int tableMask = -1;

        /**
         * The replicas holding the node: the {@link Holder} itself when there is one (a new leaf, the
         * most common node), else a {@link Holder} array sorted by replica number ({@link #NO_HOLDERS}
         * for none). Replaced whole, never changed in place; read by writers and the lock-free refresh.
         */
        volatile Object held = NO_HOLDERS;
        /**
         * The holders as bits of their replica numbers (plus {@link #OVERFLOW} when some have no bit),
         * replaced with them (see {@link #setHolders}): what {@link #match} and the holding checks read,
         * so that neither loads an array or a {@link Holder} (each a cache miss of its own) per level.
         */
        volatile long mask;
        /** The replicas of the holders numbered past the mask; read only when the mask flags some. */
        volatile Replica[] overflow = NO_REPLICAS;
        /**
         * The holders that were marked remote when the holders were last replaced, as bits like the mask's
         * ({@link #OVERFLOW} for any numbered past it): a superset of those marked now, since a mark only
         * ever goes from remote to local. A walk loads a holder to clear its mark only where this says it
         * may have one.
         */
        volatile long remoteHint;

        int childCount;
        int tombstones;
        /**
         * The node above; null for a root and once the node left the tree (removed, merged away, or
         * replaced by a copy): no flag of its own (a node is 120 bytes with compressed references).
         */
        @Nullable
        Node parent;
        /** The copy that replaced this node when its edge was split or merged, or null. */
        @Nullable
        Node replacedBy;

        /** The holders as an array (a new one of one for a single holder): for the maintenance paths. */
        Holder[] holders() {
            Object h = held;
            return h instanceof Holder one ? new Holder[] {one} : (Holder[]) h;
        }

        int holderCount() {
            Object h = held;
            return h instanceof Holder ? 1 : ((Holder[]) h).length;
        }

        /** The edge's label (a new array for one of one or two blocks, which the node keeps no array for). */
        long[] label() {
            return blocks != null
                    ? blocks
                    : span == 2 ? new long[] {first, second} : span == 1 ? new long[] {first} : NO_LABEL;
        }

        Node(int depth, long[] label, long first) {
            this.depth = depth;
            this.blocks = label.length > 2 ? label : null; // first and second hold a shorter one
            this.span = label.length;
            this.second = label.length > 1 ? label[1] : 0;
            this.first = first;
        }

        /** A node whose label is {@code key[from..to)}, copied into an array of its own only if longer than two blocks. */
        Node(int depth, long[] key, int from, int to) {
            this.depth = depth;
            this.span = to - from;
            this.blocks = span > 2 ? Arrays.copyOfRange(key, from, to) : null;
            this.second = span > 1 ? key[from + 1] : 0;
            this.first = key[from];
        }
    }

    /**
     * A replica holding a node, with the time (clock millis) it was last sent a prompt whose stamp landed
     * here (the entry's own time: see Shape in the class comment for its last use), and whether only other
     * instances ever reported it (remote: learned from a peer's event, never confirmed by this instance's
     * own traffic). Both fields only move one way: the time forward, remote to local.
     */
    static final class Holder {
        private static final VarHandle LAST_ACCESS = field(Holder.class, "lastAccess", long.class);

        final Replica replica;
        /** The replica's number in the tree (its mask bit), fixed while the replica holds anything. */
        final int number;

        volatile long lastAccess;
        volatile boolean remote;

        Holder(Replica replica, int number, long lastAccess, boolean remote) {
            this.replica = replica;
            this.number = number;
            this.lastAccess = lastAccess;
            this.remote = remote;
        }

        /**
         * A use at {@code time}: the later time wins; a local use makes the entry local. Writes only on
         * change. The time is stored with release semantics, not as a volatile store: it publishes nothing
         * else, and a full fence per node of the path is what a refresh would otherwise pay most for.
         */
        void touch(long time, boolean fromRemote) {
            if (lastAccess < time) {
                LAST_ACCESS.setRelease(this, time);
            }
            if (!fromRemote) {
                makeLocal();
            }
        }

        /** A use by this instance's own traffic: the entry is local from now on. Writes only on change. */
        void makeLocal() {
            if (remote) {
                remote = false;
            }
        }
    }

    private static final class Entry {
        final Node node;
        final Holder holder;
        /** The entry's last use: its own time, or a later one of the replica's below it. */
        long time;

        final boolean remote;
        /** The same replica's entry at the parent, if any. */
        @Nullable
        Entry up;

        Entry(Node node, Holder holder) {
            this.node = node;
            this.holder = holder;
            this.time = holder.lastAccess;
            this.remote = holder.remote;
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
