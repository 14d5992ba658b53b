package dev.cart.core.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.quicktheories.QuickTheory.qt;
import static org.quicktheories.generators.SourceDSL.integers;
import static org.quicktheories.generators.SourceDSL.lists;

import dev.cart.core.EvictionReport;
import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.MutableClock;
import dev.cart.core.TreeStats;
import dev.cart.core.spi.Match;
import dev.cart.core.spi.Replica;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.quicktheories.core.Gen;

/**
 * Model-based test: random sequences of insert / match / removeReplica / evict / clear / forgetBranches /
 * insertRemote (a peer's route, possibly older than now) / dropUntil (a peer's reset) applied to the
 * real tree and to a naive model (a map from every block prefix to the replicas holding it and when),
 * compared after every step. QuickTheories shrinks a failing sequence to a minimal one.
 */
class PrefixTreeModelTest {

    private static final int BLOCK = 4;

    /** One operation: kind, a key over a tiny alphabet (lots of sharing), a replica, a time step. */
    record Op(int kind, List<Integer> key, int replica, int step) {
        @Override
        public String toString() {
            return switch (kind) {
                case 0, 1, 2, 3 -> "insert(" + key + ", r" + replica + ") +" + step + "ms";
                case 4, 5 -> "match(" + key + ")";
                case 6 -> "removeReplica(r" + replica + ")";
                case 7 -> "evict +" + step + "ms";
                case 8 -> "clear";
                case 9 -> "forgetBranches(" + key + ", r" + replica + ", keep " + step % (key.size() + 1) + ")";
                case 10, 11 -> "insertRemote(" + key + ", r" + replica + ") at now-" + step % 20 + "ms";
                case 12 -> "dropUntil(now-" + step + "ms)";
                default -> "noop";
            };
        }
    }

    static Gen<Op> ops() {
        return integers()
                .between(0, 13)
                .zip(
                        lists().of(integers().between(1, 3)).ofSizeBetween(1, 7),
                        integers().between(0, 2),
                        integers().between(0, 40),
                        Op::new);
    }

    /** An entry of the model: last use, and whether only a peer ever reported it. */
    record T(long time, boolean remote) {
        T merge(T o) {
            return new T(Math.max(time, o.time), remote && o.remote);
        }
    }

    static final class Model {
        final Map<List<Long>, Map<Replica, T>> routes = new HashMap<>();

        void insert(long[] key, Replica r, long t, boolean remote) {
            List<Long> p = new ArrayList<>();
            for (long b : key) {
                p.add(b);
                routes.computeIfAbsent(List.copyOf(p), x -> new HashMap<>()).merge(r, new T(t, remote), T::merge);
            }
        }

        void dropUntil(long cutoff) {
            routes.values().forEach(m -> m.values().removeIf(t -> t.time() <= cutoff));
            routes.values().removeIf(Map::isEmpty);
        }

        /** Per replica, the longest prefix of key it holds. */
        Map<Replica, Integer> match(long[] key) {
            Map<Replica, Integer> out = new HashMap<>();
            List<Long> p = new ArrayList<>();
            for (int i = 0; i < key.length; i++) {
                p.add(key[i]);
                Map<Replica, T> m = routes.get(p);
                if (m == null) {
                    break;
                }
                for (Replica r : m.keySet()) {
                    out.put(r, i + 1);
                }
            }
            return out;
        }

        void removeReplica(Replica r) {
            routes.values().forEach(m -> m.remove(r));
            routes.values().removeIf(Map::isEmpty);
        }

        /** Drops r from every prefix that shares more than keep blocks with key but is not one of its prefixes. */
        void forgetBranches(long[] key, Replica r, int keep) {
            for (Map.Entry<List<Long>, Map<Replica, T>> e : routes.entrySet()) {
                List<Long> q = e.getKey();
                int lcp = 0;
                while (lcp < q.size() && lcp < key.length && q.get(lcp) == key[lcp]) {
                    lcp++;
                }
                if (lcp < q.size() && lcp > keep) {
                    e.getValue().remove(r);
                }
            }
            routes.values().removeIf(Map::isEmpty);
        }

        boolean storesWhole(long[] key) {
            List<Long> p = new ArrayList<>();
            for (long b : key) {
                p.add(b);
            }
            return routes.containsKey(p);
        }

        void resetFrom(Map<List<Long>, Map<Replica, PrefixTree.Route>> snap) {
            routes.clear();
            snap.forEach((k, v) -> {
                Map<Replica, T> m = new HashMap<>();
                v.forEach((r, route) -> m.put(r, new T(route.time(), route.remote())));
                routes.put(k, m);
            });
        }

        Map<List<Long>, Map<Replica, T>> view() {
            return routes;
        }
    }

    private static long[] blocks(List<Integer> key) {
        long[] b = new long[key.size()];
        for (int i = 0; i < b.length; i++) {
            b[i] = key.get(i);
        }
        return b;
    }

    private static Map<List<Long>, Map<Replica, T>> times(Map<List<Long>, Map<Replica, PrefixTree.Route>> snap) {
        Map<List<Long>, Map<Replica, T>> out = new HashMap<>();
        snap.forEach((k, v) -> {
            Map<Replica, T> m = new HashMap<>();
            v.forEach((r, route) -> m.put(r, new T(route.time(), route.remote())));
            out.put(k, m);
        });
        return out;
    }

    private void run(List<Op> ops, long maxSize, Duration ttl) {
        MutableClock clock = new MutableClock();
        PrefixTree tree =
                PrefixTree.builder().maxSize(maxSize).ttl(ttl).clock(clock).build();
        ManagedReplicaSet set =
                ManagedReplicaSet.builder().add("r0").add("r1").add("r2").build();
        List<? extends Replica> reps = set.replicas();
        Model model = new Model();
        for (Op op : ops) {
            long[] key = blocks(op.key());
            switch (op.kind()) {
                case 0, 1, 2, 3 -> {
                    clock.advance(Duration.ofMillis(op.step()));
                    assertTrue(tree.insert(KeyAccess.forBlocks(key, BLOCK), reps.get(op.replica())));
                    model.insert(key, reps.get(op.replica()), clock.millis(), false);
                }
                case 10, 11 -> {
                    long t = clock.millis() - op.step() % 20;
                    assertTrue(tree.insertRemote(key, reps.get(op.replica()), t));
                    model.insert(key, reps.get(op.replica()), t, true);
                }
                case 12 -> {
                    long cutoff = clock.millis() - op.step();
                    tree.dropUntil(cutoff);
                    model.dropUntil(cutoff);
                }
                case 4, 5 -> {} // match is checked after every step below
                case 6 -> {
                    tree.removeReplica(reps.get(op.replica()));
                    model.removeReplica(reps.get(op.replica()));
                }
                case 7 -> {
                    clock.advance(Duration.ofMillis(op.step()));
                    Map<List<Long>, Map<Replica, PrefixTree.Route>> before = tree.snapshot();
                    EvictionReport report = tree.evict();
                    Map<List<Long>, Map<Replica, PrefixTree.Route>> after = tree.snapshot();
                    checkEviction(before, after, clock.millis(), ttl, report);
                    assertTrue(tree.stats().size() <= maxSize, "size within the cap after a pass");
                    model.resetFrom(after);
                }
                case 8 -> {
                    tree.clear();
                    model.routes.clear();
                }
                case 9 -> {
                    // as the router uses it: for a key the tree stores whole (it was learned when routed)
                    if (model.storesWhole(key)) {
                        int keep = op.step() % (key.length + 1);
                        tree.forgetBranches(KeyAccess.forBlocks(key, BLOCK), reps.get(op.replica()), keep * BLOCK);
                        model.forgetBranches(key, reps.get(op.replica()), keep);
                    }
                }
                default -> {}
            }
            assertEquals(model.view(), times(tree.snapshot()), "routes after " + op);
            TreeStats stats = tree.stats();
            TreeStats recount = tree.recount();
            assertEquals(recount.size(), stats.size(), "size accounting after " + op);
            assertEquals(recount.nodes(), stats.nodes(), "node accounting after " + op);
            assertEquals(recount.entries(), stats.entries(), "entry accounting after " + op);
            tree.checkInvariants();
            Match m = tree.match(KeyAccess.forBlocks(key, BLOCK));
            Map<Replica, Integer> expected = model.match(key);
            Map<Replica, Integer> actual = new HashMap<>();
            for (Match.Holding h : m.holders()) {
                actual.put(h.replica(), h.matchedLength() / BLOCK);
            }
            assertEquals(expected, actual, "match holders after " + op);
            int longest =
                    expected.values().stream().mapToInt(Integer::intValue).max().orElse(0);
            assertEquals(longest * BLOCK, m.matchedLength(), "matched length after " + op);
            for (int i = 1; i < m.holders().size(); i++) {
                assertTrue(
                        m.holders().get(i - 1).matchedLength()
                                >= m.holders().get(i).matchedLength(),
                        "holders longest first");
            }
        }
    }

    /**
     * A pass drops what the TTL says, then entries in LRU order (oldest first, deepest first among
     * equals) and nothing out of order: every dropped entry sorts before every kept one.
     */
    private static void checkEviction(
            Map<List<Long>, Map<Replica, PrefixTree.Route>> before,
            Map<List<Long>, Map<Replica, PrefixTree.Route>> after,
            long now,
            Duration ttl,
            EvictionReport report) {
        long cutoff = ttl.isZero() ? Long.MIN_VALUE : now - ttl.toMillis();
        long maxRemoved = Long.MIN_VALUE; // packed (time, remote first, -depth) order
        long minKept = Long.MAX_VALUE;
        Set<String> seen = new HashSet<>();
        for (var e : before.entrySet()) {
            for (var r : e.getValue().entrySet()) {
                PrefixTree.Route route = r.getValue();
                boolean kept =
                        after.containsKey(e.getKey()) && after.get(e.getKey()).containsKey(r.getKey());
                long order = route.time() * 2_000_000L + (route.remote() ? 0 : 1_000_000L) - route.nodeDepth();
                if (route.time() < cutoff) {
                    assertTrue(!kept, "expired entry survived");
                    continue;
                }
                if (kept) {
                    assertEquals(
                            route.time(), after.get(e.getKey()).get(r.getKey()).time(), "time unchanged");
                    minKept = Math.min(minKept, order);
                } else {
                    maxRemoved = Math.max(maxRemoved, order);
                }
                seen.add(e.getKey() + "" + r.getKey());
            }
        }
        assertTrue(maxRemoved <= minKept, "eviction followed LRU order");
        for (var e : after.entrySet()) {
            assertTrue(before.containsKey(e.getKey()), "a pass never adds routes");
        }
        assertTrue(report.sizeAfter() <= report.sizeBefore());
    }

    @Test
    void matchesModelWithoutEviction() {
        qt().withFixedSeed(1L)
                .withExamples(400)
                .forAll(lists().of(ops()).ofSizeBetween(1, 60))
                .checkAssert(ops -> run(ops, Long.MAX_VALUE / 2, Duration.ZERO));
    }

    @Test
    void matchesModelUnderTightCap() {
        qt().withFixedSeed(2L)
                .withExamples(400)
                .forAll(lists().of(ops()).ofSizeBetween(1, 60))
                .checkAssert(ops -> run(ops, 6, Duration.ZERO));
    }

    @Test
    void matchesModelWithTtl() {
        qt().withFixedSeed(3L)
                .withExamples(400)
                .forAll(lists().of(ops()).ofSizeBetween(1, 60))
                .checkAssert(ops -> run(ops, 10, Duration.ofMillis(50)));
    }
}
