package dev.cart.jmh.core;

import dev.cart.core.PromptKey;
import dev.cart.core.RouteDecision;
import dev.cart.core.RouteRequest;
import dev.cart.core.Router;
import dev.cart.core.internal.KeyAccess;
import dev.cart.core.internal.PrefixTree;
import dev.cart.core.internal.RouterAccess;
import dev.cart.policy.Policies;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * {@code Router.choose} end to end for 8 replicas and 4 KB keys with the cache-aware policy: filter,
 * match, decide, acquire, record the prefix, close the lease. The tree holds the fixed workload.
 *
 * <ul>
 *   <li>{@code chooseHit}: 1,024 keys of 4,096 characters, each a workload prompt (cut or extended with
 *       random text); after the first round each is held whole by the replica it went to, so the decision
 *       is a cache hit and the recording a refresh of last-use times.</li>
 *   <li>{@code chooseMiss}: a key never seen before every time (64 blocks, the first one new, so nothing
 *       matches): a miss placed by load and recorded as a new leaf of 64 blocks. Making the key costs a
 *       64-long array copy, included.</li>
 * </ul>
 *
 * <p>The router and its tree are rebuilt before every iteration, outside the measurement, so the leaves
 * the misses add do not pile up over the run.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(
        value = 1,
        jvmArgsAppend = {"-Xms4g", "-Xmx4g", "-XX:+AlwaysPreTouch"})
@State(Scope.Benchmark)
public class RouterBenchmark {

    TreeWorkload w;
    Router router;
    RouteRequest[] hits;
    long[] missBlocks;
    long salt;
    int i;

    @Setup(Level.Trial)
    public void setUp() {
        w = new TreeWorkload(42);
        hits = new RouteRequest[1024];
        java.util.SplittableRandom rnd = new java.util.SplittableRandom(3);
        for (int k = 0; k < hits.length; k++) {
            String text = w.texts[k];
            String four = text.length() >= 4096
                    ? text.substring(0, 4096)
                    : text + TreeWorkload.randomText(rnd, 4096 - text.length());
            hits[k] = RouteRequest.of(key(KeyAccess.blocks(PromptKey.ofText(four, TreeWorkload.BLOCK))));
        }
        missBlocks = KeyAccess.blocks(PromptKey.ofText(TreeWorkload.randomText(rnd, 4096), TreeWorkload.BLOCK))
                .clone();
    }

    @Setup(Level.Iteration)
    public void router() {
        PrefixTree tree = w.filledTree(Long.MAX_VALUE);
        router = RouterAccess.tree(Router.builder(), tree)
                .replicas(() -> w.replicas)
                .policy(Policies.cacheAware())
                .keyFormat(PromptKey.Unit.TOKENS, TreeWorkload.BLOCK)
                .evictionInterval(Duration.ZERO)
                .build();
    }

    /**
     * A key of the given block hashes. Keys made from raw blocks are in the token unit, so the router is
     * built for that format; the tree and the policy see the same 64 blocks of 64 units as a 4,096-character
     * key would give them.
     */
    static PromptKey key(long[] blocks) {
        return KeyAccess.forBlocks(blocks, TreeWorkload.BLOCK);
    }

    @TearDown(Level.Iteration)
    public void tearDown() {
        router.close();
    }

    @Benchmark
    public RouteDecision chooseHit() {
        RouteDecision d = router.choose(hits[i++ & 1023]);
        d.lease().close();
        return d;
    }

    @Benchmark
    public RouteDecision chooseMiss() {
        missBlocks[0] = TreeWorkload.mix(++salt);
        RouteDecision d = router.choose(RouteRequest.of(key(missBlocks)));
        d.lease().close();
        return d;
    }
}
