package dev.cart.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.core.internal.PrefixTree;
import dev.cart.core.spi.Choice;
import dev.cart.core.spi.Match;
import dev.cart.core.spi.Replica;
import dev.cart.core.spi.RoutingContext;
import dev.cart.core.spi.RoutingListener;
import dev.cart.core.spi.RoutingPolicy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** Learning: every depth of a conversation, block alignment, learning on success, and feedback. */
class LearningTest {

    static final String SYSTEM = "You are a careful assistant for a travel agency. ".repeat(12);

    /** A chat key as the extractor builds it: each message then a boundary. */
    static PromptKey conversation(String... messages) {
        PromptKey.Builder b = PromptKey.textBuilder(64);
        for (String m : messages) {
            b.append(m).boundary();
        }
        return b.build();
    }

    private static Router router(ManagedReplicaSet set, LearnMode mode, List<CacheFeedback> feedback) {
        SplittableRandom rnd = new SplittableRandom(1);
        return Router.builder()
                .replicas(set)
                .policy(TestPolicies.followTheTree())
                .random(() -> rnd)
                .evictionInterval(Duration.ZERO)
                .learn(mode)
                .listener(new RoutingListener() {
                    @Override
                    public void onCacheFeedback(RouteDecision d, CacheFeedback f) {
                        feedback.add(f);
                    }
                })
                .build();
    }

    private static Replica route(Router router, PromptKey key) {
        RouteDecision d = router.choose(RouteRequest.of(key));
        try (Lease lease = d.lease()) {
            lease.succeeded();
            return d.replica();
        }
    }

    @Test
    void branchingContinuingAndResumedConversationsFindTheReplicaThatServedTheOriginal() {
        ManagedReplicaSet set =
                ManagedReplicaSet.builder().add("a").add("b").add("c").add("d").build();
        try (Router router = router(set, LearnMode.ON_ROUTE, new ArrayList<>())) {
            String u1 = "user: I want to fly from Oslo to Lisbon in May, what are my options? ".repeat(3);
            String a1 = "assistant: There are direct flights on Tuesdays and Saturdays, and connections. ".repeat(3);
            String u2 = "user: Which one is cheapest if I can travel any day of the week? ".repeat(3);
            Replica original = route(router, conversation(SYSTEM, u1, a1, u2));
            // Other traffic lands elsewhere meanwhile.
            for (int i = 0; i < 6; i++) {
                route(router, conversation("another system prompt entirely " + i + " ".repeat(80), "user: hi"));
            }
            Replica branching =
                    route(router, conversation(SYSTEM, "user: A different first question, about trains. ".repeat(3)));
            Replica continuing = route(
                    router,
                    conversation(SYSTEM, u1, a1, u2, "assistant: The Tuesday flight. ".repeat(3), "user: Book it."));
            Replica resumed =
                    route(router, conversation(SYSTEM, u1, a1, "user: Actually, what about June? ".repeat(3)));
            assertSame(original, branching, "same system prompt, different question");
            assertSame(original, continuing, "the next turn");
            assertSame(original, resumed, "history cut in the middle");
        }
    }

    @Test
    void boundariesInsideOneBlockMakeOneRoute() {
        ManagedReplicaSet set = ManagedReplicaSet.builder().add("a").build();
        PrefixTree tree = PrefixTree.builder().build();
        String head = "x".repeat(128); // two full blocks
        // Three short messages ending inside the third block, then different endings.
        tree.insert(
                conversation(head, "yes", "ok", "no" + "p".repeat(200)),
                set.replicas().get(0));
        tree.insert(
                conversation(head, "yes", "ok", "no" + "q".repeat(200)),
                set.replicas().get(0));
        // The keys agree up to inside block 3 (128 + 3 + 2 + 2 chars): the shared route ends at block 2.
        // Three message boundaries fall inside block 3, yet the tree has one shared node (blocks 1-2) and
        // the two endings: no node per boundary.
        assertEquals(3, tree.stats().nodes());
        Match m = tree.match(conversation(head, "yes", "ok", "nor"));
        assertEquals(128, m.matchedLength(), "matches stop at the block boundary before the divergence");
    }

    @Test
    void learningOnSuccessRecordsOnlyWhatWasServed() {
        ManagedReplicaSet set = ManagedReplicaSet.builder().add("a").add("b").build();
        try (Router router = router(set, LearnMode.ON_SUCCESS, new ArrayList<>())) {
            PromptKey key = conversation(SYSTEM, "user: question");
            RouteDecision failed = router.choose(RouteRequest.of(key));
            failed.lease().failed();
            failed.lease().close();
            assertEquals(0, router.tree().stats().size(), "a failed request teaches nothing");
            RouteDecision ok = router.choose(RouteRequest.of(key));
            assertEquals(0, router.tree().stats().size(), "nothing before the answer");
            ok.lease().succeeded();
            assertTrue(router.tree().stats().size() > 0);
            ok.lease().close();
            RouteDecision next = router.choose(RouteRequest.of(key));
            assertSame(ok.replica(), next.replica());
            assertEquals(Reason.CACHE_HIT, next.reason());
            next.lease().close();
        }
    }

    @Test
    void aPredictedHitTheReplicaDidNotDeliverKeepsItsOwnRouteAndDropsWhatHungBelowTheLoss() {
        ManagedReplicaSet set = ManagedReplicaSet.builder().add("a").add("b").build();
        List<CacheFeedback> feedback = new ArrayList<>();
        try (Router router = router(set, LearnMode.ON_ROUTE, feedback)) {
            String u1 = "user: question one about the itinerary and the hotels on the way ".repeat(6);
            String a1 = "assistant: an answer about the itinerary that goes on for a while ".repeat(2);
            PromptKey key = conversation(SYSTEM, u1);
            PromptKey longer = conversation(SYSTEM, u1, a1, "user: and the trains?");
            PromptKey sibling = conversation(SYSTEM, "user: something else entirely, about the weather ".repeat(2));
            RouteDecision first = router.choose(RouteRequest.of(longer));
            first.lease().succeeded(new ServedUsage(300, 0));
            first.lease().close();
            assertEquals(1, feedback.size());
            assertFalse(feedback.get(0).stale(), "a miss predicted nothing");
            Replica holder = first.replica();
            router.tree().insert(sibling, holder);

            // The replica evicted the conversation behind the router's back: a hit was predicted for the
            // shorter key, but only the system prompt's blocks were still there.
            RouteDecision second = router.choose(RouteRequest.of(key));
            assertEquals(Reason.CACHE_HIT, second.reason());
            assertSame(holder, second.replica());
            int systemTokens = SYSTEM.length() / 4;
            second.lease().succeeded(new ServedUsage(key.length() / 4, systemTokens));
            second.lease().close();
            CacheFeedback f = feedback.get(1);
            assertTrue(f.stale());
            assertTrue(f.predictedTokens() > f.deliveredTokens() + 32, f.toString());

            Match after = router.tree().match(key);
            assertEquals(
                    key.blockCount() * 64,
                    after.matchedLength(holder),
                    "the replica has just computed this prompt again: its route stays");
            int lostAt = (SYSTEM.length() / 64) * 64;
            assertTrue(
                    router.tree().match(longer).matchedLength(holder) <= key.blockCount() * 64,
                    "what continued through the lost blocks beyond this prompt went with them");
            assertTrue(router.tree().match(longer).matchedLength(holder) >= lostAt);
            assertEquals(
                    sibling.blockCount() * 64,
                    router.tree().match(sibling).matchedLength(holder),
                    "a prefix that left before the lost block is not affected");

            RouteDecision third = router.choose(RouteRequest.of(key));
            assertSame(holder, third.replica());
            third.lease().succeeded(new ServedUsage(key.length() / 4, key.length() / 4 - 10));
            third.lease().close();
            assertFalse(feedback.get(2).stale(), "a delivered hit is not stale");
        }
    }

    /** Sends every request that has a holder to another replica, as a guard diverting it would. */
    private static RoutingPolicy divertFromHolders() {
        return new RoutingPolicy() {
            @Override
            public Choice choose(RoutingContext ctx) {
                Match m = ctx.match();
                for (Replica r : ctx.candidates()) {
                    if (m.matchedLength(r) == 0) {
                        return Choice.of(r, m.matchedLength() > 0 ? Reason.HIT_OVERLOADED : Reason.MISS);
                    }
                }
                return Choice.of(ctx.leastLoaded(), Reason.MISS);
            }

            @Override
            public String name() {
                return "divert";
            }
        };
    }

    @Test
    void aDivertedRequestIsLearnedWhenItsFirstTokenArrivesNotWhenRouted() {
        ManagedReplicaSet set =
                ManagedReplicaSet.builder().add("a").add("b").add("c").build();
        SplittableRandom rnd = new SplittableRandom(1);
        try (Router router = Router.builder()
                .replicas(set)
                .policy(divertFromHolders())
                .random(() -> rnd)
                .evictionInterval(Duration.ZERO)
                .build()) {
            PromptKey key = conversation(SYSTEM, "user: q");
            RouteDecision miss = router.choose(RouteRequest.of(key));
            assertEquals(Reason.MISS, miss.reason());
            assertTrue(router.tree().match(key).matchedLength(miss.replica()) > 0, "a miss is learned on route");

            RouteDecision diverted = router.choose(RouteRequest.of(key));
            assertEquals(Reason.HIT_OVERLOADED, diverted.reason());
            assertEquals(
                    0,
                    router.tree().match(key).matchedLength(diverted.replica()),
                    "not a holder while it is still computing the prefix");
            diverted.lease().firstToken();
            assertTrue(router.tree().match(key).matchedLength(diverted.replica()) > 0, "a holder once it has it");

            RouteDecision again = router.choose(RouteRequest.of(key));
            assertEquals(Reason.HIT_OVERLOADED, again.reason());
            again.lease().succeeded();
            again.lease().close();
            assertTrue(
                    router.tree().match(key).matchedLength(again.replica()) > 0,
                    "a lease closed without a first token learns when it closes");

            router.tree().removeReplica(again.replica());
            RouteDecision failing = router.choose(RouteRequest.of(key));
            assertEquals(Reason.HIT_OVERLOADED, failing.reason());
            failing.lease().failed();
            failing.lease().close();
            assertEquals(
                    0,
                    router.tree().match(key).matchedLength(failing.replica()),
                    "nor does a replica that failed before answering");
            miss.lease().close();
            diverted.lease().close();
        }
    }

    @Test
    void divertedRoutesCanBeLearnedOnRouteAsSpecified() {
        ManagedReplicaSet set = ManagedReplicaSet.builder().add("a").add("b").build();
        SplittableRandom rnd = new SplittableRandom(1);
        try (Router router = Router.builder()
                .replicas(set)
                .policy(divertFromHolders())
                .random(() -> rnd)
                .evictionInterval(Duration.ZERO)
                .deferDivertedRoutes(false)
                .build()) {
            PromptKey key = conversation(SYSTEM, "user: q");
            router.choose(RouteRequest.of(key)).lease().close();
            RouteDecision diverted = router.choose(RouteRequest.of(key));
            assertEquals(Reason.HIT_OVERLOADED, diverted.reason());
            assertTrue(router.tree().match(key).matchedLength(diverted.replica()) > 0);
            diverted.lease().close();
        }
    }

    @Test
    void feedbackCanBeTurnedOffButIsStillReported() {
        ManagedReplicaSet set = ManagedReplicaSet.builder().add("a").build();
        List<CacheFeedback> feedback = new ArrayList<>();
        SplittableRandom rnd = new SplittableRandom(1);
        try (Router router = Router.builder()
                .replicas(set)
                .policy(TestPolicies.followTheTree())
                .random(() -> rnd)
                .evictionInterval(Duration.ZERO)
                .feedback(false)
                .listener(new RoutingListener() {
                    @Override
                    public void onCacheFeedback(RouteDecision d, CacheFeedback f) {
                        feedback.add(f);
                    }
                })
                .build()) {
            PromptKey key = conversation(SYSTEM, "user: q");
            router.choose(RouteRequest.of(key)).lease().close();
            long size = router.tree().stats().size();
            RouteDecision d = router.choose(RouteRequest.of(key));
            d.lease().succeeded(new ServedUsage(150, 0));
            d.lease().close();
            assertFalse(feedback.get(0).stale());
            assertEquals(size, router.tree().stats().size());
        }
    }

    @Test
    void unknownUsageIsNotZero() {
        ManagedReplicaSet set = ManagedReplicaSet.builder().add("a").build();
        List<CacheFeedback> feedback = new ArrayList<>();
        try (Router router = router(set, LearnMode.ON_ROUTE, feedback)) {
            PromptKey key = conversation(SYSTEM, "user: q");
            router.choose(RouteRequest.of(key)).lease().close();
            RouteDecision d = router.choose(RouteRequest.of(key));
            d.lease().succeeded(ServedUsage.unknown());
            d.lease().succeeded(new ServedUsage(100, ServedUsage.UNKNOWN));
            d.lease().close();
            assertTrue(feedback.isEmpty());
            assertTrue(router.tree().match(key).matchedLength() > 0);
        }
    }

    @Test
    void aKeyInAnotherFormatIsRoutedAsAMissAndNeverLearned() {
        ManagedReplicaSet set = ManagedReplicaSet.builder().add("a").add("b").build();
        SplittableRandom rnd = new SplittableRandom(1);
        try (Router router = Router.builder()
                .replicas(set)
                .policy(TestPolicies.followTheTree())
                .random(() -> rnd)
                .evictionInterval(Duration.ZERO)
                .keyFormat(PromptKey.Unit.TOKENS, 16)
                .build()) {
            int[] tokens = new int[100];
            java.util.Arrays.fill(tokens, 7);
            PromptKey tokenKey = PromptKey.ofTokens(tokens, new int[0], 16, 256);
            router.choose(RouteRequest.of(tokenKey)).lease().close();
            long learned = router.tree().stats().size();
            assertTrue(learned > 0, "a token key is learned");
            // The extractor fell back to characters (tokenization saturated): same prompt, other format.
            RouteDecision d = router.choose(RouteRequest.of(conversation(SYSTEM, "user: q"))
                    .withTokenization(new Tokenization(Tokenization.Status.SATURATED, 2, 0, 0)));
            assertEquals(Reason.MISS, d.reason());
            assertEquals(0, d.matchedLength());
            assertEquals(Tokenization.Status.SATURATED, d.tokenization().status());
            d.lease().close();
            assertEquals(learned, router.tree().stats().size(), "the character key was not learned");
        }
    }

    @Test
    void tokenKeysBuiltInRunsEqualKeysBuiltOneByOne() {
        int[] tokens = new int[300];
        for (int i = 0; i < tokens.length; i++) {
            tokens[i] = i * 7919;
        }
        PromptKey bulk = PromptKey.tokenBuilder(16, 64)
                .append(tokens, 0, 123)
                .boundary()
                .append(tokens, 123, 177)
                .build();
        assertEquals(PromptKey.ofTokens(tokens, new int[] {123}, 16, 64), bulk);
    }

    @Test
    void recordTeachesTheTreeWhatAReplicaHolds() {
        ManagedReplicaSet set = ManagedReplicaSet.builder().add("a").add("b").build();
        try (Router router = router(set, LearnMode.ON_ROUTE, new ArrayList<>())) {
            PromptKey withReply = conversation(SYSTEM, "user: q", "assistant: a long answer ".repeat(10));
            router.record(withReply, set.replicas().get(1));
            RouteDecision d = router.choose(RouteRequest.of(
                    conversation(SYSTEM, "user: q", "assistant: a long answer ".repeat(10), "user: thanks")));
            assertSame(set.replicas().get(1), d.replica());
            assertTrue(d.matchedLength() >= withReply.blockCount() * 64);
            d.lease().close();
        }
    }
}
