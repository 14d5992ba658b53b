package dev.cart.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.quicktheories.QuickTheory.qt;
import static org.quicktheories.generators.SourceDSL.integers;
import static org.quicktheories.generators.SourceDSL.lists;

import dev.cart.core.spi.LeaseCompletion;
import dev.cart.core.spi.ReplicaSet;
import dev.cart.core.spi.RoutingListener;
import dev.cart.testing.ReplicaSets;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Every in-flight count returns to zero whatever happens to the leases: success, failure, an exception
 * in the caller, closing twice, closing from another thread; for the managed replica set and for one a
 * host wrote against the SPI alone.
 */
class LeaseAccountingTest {

    private static ReplicaSet pool(ReplicaSets kind) {
        return kind.build(
                List.of(new ReplicaSpec("a", 3, 0), new ReplicaSpec("b", 5, 1), new ReplicaSpec("c", 2, 0)),
                new CircuitBreaker.Config(1000, 1, Duration.ofSeconds(1), 1),
                Clock.systemUTC());
    }

    /** One step of a sequential interleaving: open a lease, or act on one of the open leases. */
    record Step(int action, int which) {}

    @ParameterizedTest
    @EnumSource(ReplicaSets.class)
    void randomInterleavingsReturnEveryCountToZero(ReplicaSets kind) {
        qt().withFixedSeed(5L)
                .withExamples(300)
                .forAll(lists().of(integers().between(0, 6).zip(integers().between(0, 20), Step::new))
                        .ofSizeBetween(1, 80))
                .checkAssert(steps -> {
                    ReplicaSet set = pool(kind);
                    SplittableRandom rnd = new SplittableRandom(3);
                    try (Router router = Router.builder()
                            .replicas(set)
                            .policy(TestPolicies.followTheTree())
                            .random(() -> rnd)
                            .evictionInterval(Duration.ZERO)
                            .build()) {
                        List<Lease> open = new ArrayList<>();
                        for (Step s : steps) {
                            if (s.action() <= 1 || open.isEmpty()) {
                                RouteDecision d = router.choose(RouteRequest.of(PromptKey.ofText("k" + s.which(), 1)));
                                if (d.routed()) {
                                    open.add(d.lease());
                                }
                                continue;
                            }
                            Lease l = open.get(s.which() % open.size());
                            switch (s.action()) {
                                case 2 -> l.succeeded();
                                case 3 -> l.failed();
                                case 4 -> l.close();
                                case 5 -> {
                                    try (Lease auto = l) {
                                        auto.succeeded();
                                        throw new IllegalStateException("caller failed mid-request");
                                    } catch (IllegalStateException expected) {
                                        // the try-with-resources closed it anyway
                                    }
                                }
                                default -> {
                                    l.close();
                                    l.close();
                                }
                            }
                            int inFlight = ReplicaSets.totalInFlight(set);
                            long openCount =
                                    open.stream().filter(x -> !x.isClosed()).count();
                            assertEquals(openCount, inFlight, "in flight equals open leases");
                        }
                        open.forEach(Lease::close);
                        assertEquals(0, ReplicaSets.totalInFlight(set));
                    }
                });
    }

    @ParameterizedTest
    @EnumSource(ReplicaSets.class)
    void concurrentCloseReleasesExactlyOnce(ReplicaSets kind) throws Exception {
        ReplicaSet set = kind.build(List.of(new ReplicaSpec("a", 1_000_000, 0)));
        AtomicInteger closedEvents = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try (Router router = Router.builder()
                .replicas(set)
                .policy(TestPolicies.followTheTree())
                .evictionInterval(Duration.ZERO)
                .listener(new RoutingListener() {
                    @Override
                    public void onLeaseCompleted(LeaseCompletion c) {
                        closedEvents.incrementAndGet();
                    }
                })
                .build()) {
            int n = 2_000;
            List<Lease> leases = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                leases.add(router.choose(RouteRequest.empty()).lease());
            }
            assertEquals(n, ReplicaSets.totalInFlight(set));
            CountDownLatch start = new CountDownLatch(1);
            List<Future<?>> fs = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                fs.add(pool.submit(() -> {
                    start.await();
                    for (Lease l : leases) {
                        l.close();
                    }
                    return null;
                }));
            }
            start.countDown();
            for (Future<?> f : fs) {
                f.get(30, TimeUnit.SECONDS);
            }
            assertEquals(0, ReplicaSets.totalInFlight(set));
            assertEquals(n, closedEvents.get());
            assertTrue(leases.stream().allMatch(Lease::isClosed));
        } finally {
            pool.shutdownNow();
        }
    }
}
