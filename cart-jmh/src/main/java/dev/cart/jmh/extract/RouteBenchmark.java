package dev.cart.jmh.extract;

import dev.cart.core.RouteDecision;
import dev.cart.core.RouteRequest;
import dev.cart.core.Router;
import dev.cart.extract.Endpoint;
import dev.cart.extract.ExtractOptions;
import dev.cart.extract.ExtractedRequest;
import dev.cart.extract.ExtractionException;
import dev.cart.extract.PromptExtractor;
import dev.cart.jmh.core.TreeWorkload;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The headline figure: routing one request from its body bytes. Per operation: {@code extract} (UTF-8
 * check, streaming parse, key building and hashing) of a chat body ({@link Bodies}), then
 * {@code Router.choose} with the cache-aware policy over 8 replicas (filter, tree match, decision, lease
 * acquire, recording the prefix), then closing the lease. Not included: reading the body from a socket,
 * forwarding it, anything the proxy does around the route.
 *
 * <p>The router's tree holds the 10,000 keys of {@link TreeWorkload} (about 400,000 blocks) and, after
 * the first operation, the benchmark's own body: every measured route is a hit on a tree of realistic
 * size, and its recording refreshes last-use times (the steady state of a conversation resent turn after
 * turn). The router is rebuilt before every iteration.
 *
 * <p>The heap is fixed and touched before the first iteration ({@code -XX:+AlwaysPreTouch}, as in the
 * other benchmarks that size their heap): on a freshly booted virtual machine the first write to each page
 * of new heap is a page fault, and without it the first iterations of a fork took 10 to 50 µs per 4 KB
 * route instead of 3 to 4.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(
        value = 1,
        jvmArgsAppend = {"-Xms2g", "-Xmx2g", "-XX:+AlwaysPreTouch"})
@State(Scope.Benchmark)
public class RouteBenchmark {

    @Param({"4096", "32768"})
    public int bytes;

    @Param({"plain", "realistic"})
    public String body;

    byte[] bodyBytes;
    PromptExtractor extractor;
    TreeWorkload workload;
    Router router;

    @Setup(Level.Trial)
    public void setUp() {
        bodyBytes = body.equals("plain") ? Bodies.plain(bytes) : Bodies.realistic(bytes);
        extractor = new PromptExtractor(ExtractOptions.defaults());
        workload = new TreeWorkload(42);
    }

    @Setup(Level.Iteration)
    public void router() {
        router = WorkloadRouter.build(workload);
    }

    @TearDown(Level.Iteration)
    public void tearDown() {
        router.close();
    }

    @Benchmark
    public RouteDecision route() throws ExtractionException {
        ExtractedRequest req = extractor.extract(Endpoint.CHAT_COMPLETIONS, bodyBytes);
        RouteDecision d = router.choose(RouteRequest.of(req.key()));
        d.lease().close();
        return d;
    }
}
