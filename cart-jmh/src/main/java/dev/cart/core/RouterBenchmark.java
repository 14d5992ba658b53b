package dev.cart.core;

import dev.cart.policy.Policies;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
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
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-Xms2g", "-Xmx2g"})
@State(Scope.Benchmark)
public class RouterBenchmark {

    Router router;
    RouteRequest[] hits;
    RouteRequest[] misses;
    int i;

    @Setup
    public void setUp() {
        TreeWorkload w = new TreeWorkload(42);
        PrefixTree tree = w.filledTree(Long.MAX_VALUE);
        router = Router.builder().replicas(() -> w.replicas).policy(Policies.cacheAware()).tree(tree)
                .evictionInterval(Duration.ZERO).build();
        hits = new RouteRequest[1024];
        misses = new RouteRequest[1024];
        java.util.SplittableRandom rnd = new java.util.SplittableRandom(3);
        for (int k = 0; k < hits.length; k++) {
            String text = w.texts[k];
            String four = text.length() >= 4096 ? text.substring(0, 4096)
                    : text + TreeWorkload.randomText(rnd, 4096 - text.length());
            hits[k] = RouteRequest.of(PromptKey.ofText(four, TreeWorkload.BLOCK));
            misses[k] = RouteRequest.of(PromptKey.ofText(TreeWorkload.randomText(rnd, 4096), TreeWorkload.BLOCK));
        }
    }

    @TearDown
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
        RouteDecision d = router.choose(misses[i++ & 1023]);
        d.lease().close();
        return d;
    }
}
