package dev.cart.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.core.spi.Replica;
import dev.cart.core.spi.ReplicaSet;
import dev.cart.core.spi.RoutingListener;
import dev.cart.testing.ReplicaSets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Usage feedback against a replica still computing a shared prefix. A replica serves a prefix from its
 * cache only once the request computing it has finished its prefill, so a request sent meanwhile reports
 * the prefix uncached though nothing was evicted: that report must not make the router forget the
 * prefixes the replica is computing. A report that the replica could have served and did not still does.
 */
class FeedbackRaceTest {

    /** Shared instructions, then a document: the RAG shape where the race was seen. */
    static final String INSTRUCTIONS = "Answer from the document below and cite the section you used. ".repeat(16);

    static PromptKey rag(String document) {
        return PromptKey.textBuilder(64)
                .append(INSTRUCTIONS)
                .boundary()
                .append(document.repeat(10))
                .boundary()
                .build();
    }

    static final PromptKey A = rag("Document one: the hotel's cancellation policy, in full detail. ");
    static final PromptKey B = rag("Document two: the airline's luggage rules, with every exception. ");
    static final PromptKey C = rag("Document three: the museum's opening hours over the holidays. ");

    /** Tokens per key unit the fake replica reports with (4 characters per token). */
    static long tokens(int units) {
        return units / 4;
    }

    private final List<CacheFeedback> feedback = new ArrayList<>();

    private Router router(ReplicaSet set) {
        SplittableRandom rnd = new SplittableRandom(1);
        return Router.builder()
                .replicas(set)
                .policy(TestPolicies.followTheTree())
                .random(() -> rnd)
                .evictionInterval(Duration.ZERO)
                .firstTokenReports(true)
                .listener(new RoutingListener() {
                    @Override
                    public void onCacheFeedback(RouteDecision d, CacheFeedback f) {
                        feedback.add(f);
                    }
                })
                .build();
    }

    private static int shared() {
        return (INSTRUCTIONS.length() / 64) * 64;
    }

    @ParameterizedTest
    @EnumSource(ReplicaSets.class)
    void aZeroReportWhileTheSharedPrefixIsStillInPrefillForgetsNothing(ReplicaSets kind) {
        ReplicaSet set = kind.of("r");
        try (Router router = router(set)) {
            RouteDecision a = router.choose(RouteRequest.of(A)); // computing the instructions, no first token
            RouteDecision b = router.choose(RouteRequest.of(B));
            assertEquals(Reason.CACHE_HIT, b.reason());
            assertSame(a.replica(), b.replica());
            assertTrue(b.matchedLength() >= shared(), "the tree credits the replica with A's instructions");

            b.lease().firstToken();
            b.lease().succeeded(new ServedUsage(tokens(B.length()), 0));
            b.lease().close();

            CacheFeedback f = feedback.get(0);
            assertFalse(f.stale(), f.toString());
            assertTrue(f.inconclusive(), f.toString());
            assertEquals(
                    A.blockCount() * 64,
                    router.tree().match(A).matchedLength(a.replica()),
                    "A's route survives: the replica is computing it");
            a.lease().close();
        }
    }

    @ParameterizedTest
    @EnumSource(ReplicaSets.class)
    void aZeroReportAfterThePrefixWasComputedStillForgets(ReplicaSets kind) {
        ReplicaSet set = kind.of("r");
        try (Router router = router(set)) {
            RouteDecision a = router.choose(RouteRequest.of(A));
            a.lease().firstToken(); // the replica has computed A: it held the instructions from here on
            RouteDecision b = router.choose(RouteRequest.of(B));
            assertEquals(Reason.CACHE_HIT, b.reason());

            b.lease().firstToken();
            b.lease().succeeded(new ServedUsage(tokens(B.length()), 0));
            b.lease().close();

            CacheFeedback f = feedback.get(0);
            assertTrue(f.stale(), f.toString());
            assertFalse(f.inconclusive(), f.toString());
            assertEquals(
                    shared(),
                    router.tree().match(A).matchedLength(a.replica()),
                    "the replica lost the instructions and A's document with them; B's own route stays");
            a.lease().close();
        }
    }

    @ParameterizedTest
    @EnumSource(ReplicaSets.class)
    void aRequestInPrefillThatReliedOnTheSamePrefixExplainsNothing(ReplicaSets kind) {
        ReplicaSet set = kind.of("r");
        try (Router router = router(set)) {
            RouteDecision a = router.choose(RouteRequest.of(A));
            a.lease().firstToken();
            a.lease().close();
            // C is in prefill, but it was predicted the instructions too: it computes only its document
            RouteDecision c = router.choose(RouteRequest.of(C));
            assertTrue(c.matchedLength() >= shared());
            RouteDecision b = router.choose(RouteRequest.of(B));

            b.lease().succeeded(new ServedUsage(tokens(B.length()), 0));
            b.lease().close();

            assertTrue(feedback.get(0).stale(), feedback.get(0).toString());
            assertEquals(shared(), router.tree().match(A).matchedLength(a.replica()));
            c.lease().close();
        }
    }

    @ParameterizedTest
    @EnumSource(ReplicaSets.class)
    void aChainOfRequestsInPrefillExplainsTheWholePrediction(ReplicaSets kind) {
        ReplicaSet set = kind.of("r");
        try (Router router = router(set)) {
            PromptKey longer = PromptKey.textBuilder(64)
                    .append(INSTRUCTIONS)
                    .boundary()
                    .append("Document one: the hotel's cancellation policy, in full detail. ".repeat(10))
                    .boundary()
                    .append("user: and if I cancel the day before? ".repeat(4))
                    .boundary()
                    .build();
            RouteDecision a = router.choose(RouteRequest.of(A)); // computing instructions and document
            RouteDecision next = router.choose(RouteRequest.of(longer)); // predicted A's part, computes its own
            assertTrue(next.matchedLength() >= A.blockCount() * 64 - 64);
            PromptKey third = PromptKey.textBuilder(64)
                    .append(INSTRUCTIONS)
                    .boundary()
                    .append("Document one: the hotel's cancellation policy, in full detail. ".repeat(10))
                    .boundary()
                    .append("user: and if I cancel the day before? ".repeat(4))
                    .boundary()
                    .append("user: and the deposit?")
                    .boundary()
                    .build();
            RouteDecision d = router.choose(RouteRequest.of(third));
            assertTrue(d.matchedLength() > A.length(), "predicted the part only the second request computes");

            d.lease().succeeded(new ServedUsage(tokens(third.length()), 0));
            d.lease().close();

            assertTrue(feedback.get(0).inconclusive(), feedback.get(0).toString());
            assertEquals(longer.blockCount() * 64, router.tree().match(longer).matchedLength(a.replica()));
            a.lease().close();
            next.lease().close();
        }
    }

    @ParameterizedTest
    @EnumSource(ReplicaSets.class)
    void aReportPartlyExplainedForgetsOnlyBeyondTheExplainedPart(ReplicaSets kind) {
        ReplicaSet set = kind.of("r");
        try (Router router = router(set)) {
            RouteDecision a = router.choose(RouteRequest.of(A)); // in prefill: computing instructions and document
            Replica r = a.replica();
            String question = "user: a long follow-up question about the hotel's rules ".repeat(10);
            PromptKey followUp = extend(A, question + "and the pool ".repeat(60));
            PromptKey otherFollowUp = extend(A, question + "and breakfast ".repeat(60));
            // routes the host taught the tree as held (answers it learned): the replica's cache says otherwise
            router.record(followUp, r);
            router.record(otherFollowUp, r);
            router.record(C, r);

            RouteDecision d = router.choose(RouteRequest.of(followUp));
            assertEquals(followUp.blockCount() * 64, d.matchedLength());
            d.lease().succeeded(new ServedUsage(tokens(followUp.length()), 0));
            d.lease().close();

            CacheFeedback f = feedback.get(0);
            assertTrue(f.stale(), "A explains its own part, not the follow-up beyond it: " + f);
            int kept = router.tree().match(otherFollowUp).matchedLength(r);
            assertTrue(
                    kept > A.blockCount() * 64 && kept < otherFollowUp.blockCount() * 64,
                    "what branched off the follow-up's lost part is forgotten, the follow-up's own route kept: "
                            + kept);
            assertEquals(
                    C.blockCount() * 64,
                    router.tree().match(C).matchedLength(r),
                    "a branch within the part A is computing is not judged");
            a.lease().close();
        }
    }

    private static PromptKey extend(PromptKey base, String turn) {
        String doc = "Document one: the hotel's cancellation policy, in full detail. ".repeat(10);
        assertEquals(A, base);
        return PromptKey.textBuilder(64)
                .append(INSTRUCTIONS)
                .boundary()
                .append(doc)
                .boundary()
                .append(turn)
                .boundary()
                .build();
    }

    /**
     * Requests routed, reaching their first token, reporting short usage and closing on several threads at
     * once: the per-replica queues are copied while entries leave them, and no decision may fail for it, nor
     * any slot leak. (A copy that counted the entries still in prefill in one pass and copied them in a
     * second left a hole when one left in between, and every later request to that replica failed.)
     */
    @ParameterizedTest
    @EnumSource(ReplicaSets.class)
    void concurrentRequestsEnteringAndLeavingPrefillNeverFailADecision(ReplicaSets kind) throws Exception {
        ReplicaSet set = kind.of("r1", "r2");
        try (Router router = router(set)) {
            int threads = 4;
            int perThread = 20_000;
            PromptKey[] keys = {A, B, C};
            java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(threads);
            try {
                List<java.util.concurrent.Future<?>> done = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    int seed = t;
                    done.add(pool.submit(() -> {
                        SplittableRandom rnd = new SplittableRandom(seed);
                        java.util.ArrayDeque<RouteDecision> open = new java.util.ArrayDeque<>();
                        for (int i = 0; i < perThread; i++) {
                            open.add(router.choose(RouteRequest.of(keys[rnd.nextInt(keys.length)])));
                            while (open.size() > rnd.nextInt(4)) {
                                RouteDecision d = open.poll();
                                if (rnd.nextBoolean()) {
                                    d.lease().firstToken();
                                }
                                d.lease().succeeded(new ServedUsage(tokens(d.keyLength()), 0));
                                d.lease().close();
                            }
                        }
                        open.forEach(d -> d.lease().close());
                        return null;
                    }));
                }
                for (java.util.concurrent.Future<?> f : done) {
                    f.get(4, java.util.concurrent.TimeUnit.MINUTES); // rethrows a decision's failure
                }
            } finally {
                pool.shutdownNow();
            }
            for (Replica r : set.replicas()) {
                assertEquals(0, r.inFlight(), r.id());
                assertEquals(0, router.pendingPrefill(r), r.id());
            }
        }
    }

    @ParameterizedTest
    @EnumSource(ReplicaSets.class)
    void aReplicaWithManyRequestsInPrefillKeepsThemAll(ReplicaSets kind) {
        ReplicaSet set = kind.of("r");
        try (Router router = router(set)) {
            List<RouteDecision> open = new ArrayList<>();
            for (int i = 0; i < 80; i++) {
                open.add(router.choose(RouteRequest.of(i % 2 == 0 ? A : B)));
            }
            RouteDecision last = open.get(79);
            assertEquals(80, last.aheadInPrefill().length);
            for (int i = 0; i < 80; i += 2) {
                open.get(i).lease().firstToken(); // half of them leave prefill
            }
            RouteDecision next = router.choose(RouteRequest.of(C));
            assertEquals(41, next.aheadInPrefill().length, "the 40 still in prefill and the new one");
            for (InPrefill.Entry e : next.aheadInPrefill()) {
                assertFalse(e == null || e.done);
            }
            RouteDecision after = router.choose(RouteRequest.of(C));
            assertEquals(42, after.aheadInPrefill().length);
            open.forEach(d -> d.lease().close());
            next.lease().close();
            after.lease().close();
        }
    }

    @ParameterizedTest
    @EnumSource(ReplicaSets.class)
    void leavingPrefillTakesTheRequestOutOfItsReplicasQueue(ReplicaSets kind) {
        ReplicaSet set = kind.of("r");
        try (Router router = router(set)) {
            RouteDecision a = router.choose(RouteRequest.of(A));
            RouteDecision c = router.choose(RouteRequest.of(C));
            c.lease().close(); // closed without a first token: out of prefill too
            a.lease().firstToken();
            RouteDecision b = router.choose(RouteRequest.of(B));
            assertEquals(1, b.aheadInPrefill().length, "nothing but B in prefill when B was routed");
            b.lease().close();
            a.lease().close();
            RouteDecision after = router.choose(RouteRequest.of(B));
            assertEquals(1, after.aheadInPrefill().length);
            after.lease().close();
        }
    }
}
