package dev.cart.kvevents;

import static dev.cart.kvevents.TestBatches.concat;
import static dev.cart.kvevents.TestBatches.tokens;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;

/** The subscriber over real ZMQ sockets on loopback: frames, replays in both shapes, gaps, restarts, bad frames. */
class KvSubscriberTest {

    private static final int[] B0 = tokens(100, 1), B1 = tokens(200, 1), B2 = tokens(300, 1);
    private static final int[] PROMPT = concat(B0, B1, B2, new int[] {1});

    static void await(String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out waiting for: " + what);
            }
            Thread.sleep(5);
        }
    }

    private static int held(KvIndex index) {
        return index.lookup(PROMPT, "m", null).confirmedTokens("a");
    }

    private static StreamStatus status(KvIndex index) {
        return index.status("a").streams().get(0);
    }

    @Test
    void historyGapsAndRestartsOverRealSockets() throws Exception {
        for (boolean topicInReplay : new boolean[] {false, true}) {
            // a generous replay limit: a loaded machine may take seconds to answer the first replay
            KvIndex index =
                    KvIndex.builder().replayTimeout(Duration.ofSeconds(20)).build();
            try (TestPublisher pub = new TestPublisher()) {
                pub.topicInReplay = topicInReplay;
                pub.publish(TestBatches.positional()
                        .stored(new long[] {1}, null, B0)
                        .build(1));
                try (KvSubscriber sub = KvSubscriber.builder(index).stream(pub.stream("a"))
                        .pollInterval(Duration.ofMillis(10))
                        .start()) {
                    // the history before the subscriber connected comes by replay
                    await("history replayed", () -> held(index) == 16 && index.mode("a") == ReplicaMode.PRECISE);
                    // a batch lost on the wire is replayed once the next one shows the gap
                    pub.lose(TestBatches.of(true, true)
                            .stored(new long[] {2}, 1L, B1)
                            .build(1));
                    await("a live batch is received", () -> {
                        pub.publish(TestBatches.positional()
                                .removed(new long[] {99}, "GPU")
                                .build(1));
                        return status(index).gaps() >= 1;
                    });
                    await("the gap filled", () -> held(index) == 32);
                    // the engine restarts: the blocks go, the new history comes
                    pub.restart();
                    pub.publish(TestBatches.positional()
                            .stored(new long[] {50, 51, 52}, null, concat(B0, B1, B2))
                            .build(1));
                    await(
                            "restart seen and history rebuilt",
                            () -> status(index).resets() == 1 && held(index) == 48);
                    // frames of the wrong shape are counted, not fatal
                    pub.sendRaw(new byte[] {1}, new byte[] {2});
                    pub.sendRaw(new byte[0], new byte[3], new byte[] {(byte) 0x90});
                    await("bad frames counted", () -> status(index).malformed() == 2);
                    assertEquals(ReplicaMode.PRECISE, index.mode("a"));
                    assertEquals(0, status(index).replayFailures());
                }
            }
        }
    }

    /**
     * What the engine publishes after the history replay was answered and before the subscription took effect
     * reaches no one, and an engine with nothing more to say never shows the gap: the subscriber asks for it
     * once its connection's handshake completes.
     */
    @Test
    void aBatchPublishedBeforeTheSubscriptionTookEffectArrivesByReplay() throws Exception {
        KvIndex index = KvIndex.builder().replayTimeout(Duration.ofSeconds(20)).build();
        try (TestPublisher pub = new TestPublisher(true);
                KvSubscriber sub = KvSubscriber.builder(index).stream(pub.stream("a"))
                        .pollInterval(Duration.ofMillis(10))
                        .start()) {
            await("history replayed (none)", () -> index.mode("a") == ReplicaMode.PRECISE);
            pub.publish(
                    TestBatches.positional().stored(new long[] {1}, null, B0).build(1));
            pub.bindPub();
            await("the batch caught up once the subscription took effect", () -> held(index) == 16);
            assertEquals(0, status(index).gaps());
            assertEquals(0, status(index).resets());
            assertEquals(ReplicaMode.PRECISE, index.mode("a"));
        }
    }
}
