package dev.cart.kvevents;

import static dev.cart.kvevents.TestBatches.concat;
import static dev.cart.kvevents.TestBatches.tokens;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The sequence state machine against an engine model in process: a replay buffer that may have dropped its
 * oldest batches, answers given when the test says. The same scenarios run over real ZMQ sockets against the
 * simulated replica in cart-sim's tests.
 */
class KvFeedTest {

    private final AtomicLong now = new AtomicLong(1_000);
    private final KvIndex index = KvIndex.builder().ticker(now::get).build();

    /** An engine: its batches by sequence number, the oldest {@code dropped} gone from its buffer. */
    private final List<byte[]> published = new ArrayList<>();

    private int dropped;
    private final List<Long> requests = new ArrayList<>();

    private KvFeed feed;

    /** Whether a replay asked for is answered at once (when the feed was connected so). */
    private boolean answerNext = true;

    private KvFeed connect(boolean answerAtOnce) {
        feed = index.feed(KvStream.of("a", "tcp://unused:1", "tcp://unused:2", "m"), from -> {
            requests.add(from);
            if (answerAtOnce && answerNext) {
                answer(from);
            }
        });
        feed.start();
        return feed;
    }

    private void answer(long from) {
        for (int s = (int) Math.max(from, dropped); s < published.size(); s++) {
            feed.replayed(s, published.get(s));
        }
        feed.replayEnded();
    }

    private long publish(TestBatches b) {
        published.add(b.build(1.0));
        return published.size() - 1;
    }

    private void deliver(long seq) {
        feed.live(seq, published.get((int) seq));
    }

    private int held(int[] prompt) {
        return index.lookup(prompt, "m", null).confirmedTokens("a");
    }

    private static final int[] B0 = tokens(100, 1), B1 = tokens(200, 1), B2 = tokens(300, 1);
    private static final int[] PROMPT = concat(B0, B1, B2, new int[] {1});

    private ReplicaMode mode() {
        return index.mode("a");
    }

    @Test
    void connectReplaysTheHistoryThenAppliesLiveBatchesOnce() {
        publish(TestBatches.positional().stored(new long[] {1}, null, B0));
        publish(TestBatches.positional().stored(new long[] {2}, 1L, B1));
        connect(false);
        assertEquals(List.of(0L), requests);
        assertEquals(ReplicaMode.CATCHING_UP, mode());
        long s2 = publish(TestBatches.positional().stored(new long[] {3}, 2L, B2));
        deliver(1); // the subscriber saw the end of the history live too
        deliver(s2);
        answer(0);
        assertEquals(ReplicaMode.PRECISE, mode());
        assertEquals(48, held(PROMPT));
        StreamStatus st = index.status("a").streams().get(0);
        assertEquals(3, st.batches()); // 0 and 1 replayed, 2 live; the held copy of 1 skipped
        assertFalse(st.incomplete());
    }

    @Test
    void aGapIsFilledByAReplay() {
        connect(true);
        long s0 = publish(TestBatches.positional().stored(new long[] {1}, null, B0));
        long s1 = publish(TestBatches.positional().stored(new long[] {2}, 1L, B1));
        long s2 = publish(TestBatches.positional().stored(new long[] {3}, 2L, B2));
        deliver(s0);
        deliver(s2); // s1 lost on the wire
        assertEquals(List.of(0L, s1), requests);
        assertEquals(48, held(PROMPT));
        assertEquals(ReplicaMode.PRECISE, mode());
        StreamStatus st = index.status("a").streams().get(0);
        assertEquals(1, st.gaps());
        assertEquals(0, st.resets());
        assertEquals(3, st.nextSeq());
    }

    @Test
    void aGapTheBufferNoLongerHoldsResetsAndHoldsTheReplicaApproximate() {
        connect(true);
        long s0 = publish(TestBatches.positional().stored(new long[] {1}, null, B0));
        deliver(s0);
        publish(TestBatches.positional().removed(new long[] {1}, "GPU")); // lost, and gone from the buffer
        long s2 = publish(TestBatches.positional().stored(new long[] {7}, null, B2));
        dropped = 2;
        deliver(s2);
        assertEquals(0, held(PROMPT)); // block 1 is not claimed any more: its removal was lost
        assertEquals(ReplicaMode.APPROXIMATE, mode());
        StreamStatus st = index.status("a").streams().get(0);
        assertTrue(st.incomplete());
        assertEquals(1, st.resets());
        now.addAndGet(TimeUnit.SECONDS.toNanos(6)); // past the hold
        assertEquals(ReplicaMode.PRECISE, mode());
        assertEquals(16, index.lookup(concat(B2, new int[] {1}), "m", null).confirmedTokens("a"));
    }

    @Test
    void aBackwardSequenceIsARestart() {
        connect(true);
        deliver(publish(TestBatches.positional().stored(new long[] {1, 2}, null, concat(B0, B1))));
        deliver(publish(TestBatches.positional().stored(new long[] {3}, 2L, B2)));
        assertEquals(48, held(PROMPT));
        // the engine restarts: a new process, new hashes, sequence from 0
        published.clear();
        long r0 = publish(TestBatches.positional().stored(new long[] {91}, null, B0));
        deliver(r0);
        assertEquals(16, held(PROMPT));
        assertEquals(List.of(0L, 0L), requests);
        assertEquals(1, index.status("a").streams().get(0).resets());
        assertEquals(ReplicaMode.PRECISE, mode());
    }

    @Test
    void aRestartWhileAGapIsReplayedIsNotTakenForTheReplaysOverlap() {
        connect(true);
        deliver(publish(TestBatches.positional().stored(new long[] {1}, null, B0)));
        publish(TestBatches.positional().stored(new long[] {2}, 1L, B1)); // lost on the wire
        long s2 = publish(TestBatches.positional().stored(new long[] {3}, 2L, B2));
        List<byte[]> old = new ArrayList<>(published);
        requests.clear();
        KvFeed f = feed;
        // the gap asks for a replay; before it is answered the engine restarts and sends its new batch 0
        published.clear();
        published.addAll(old);
        answerNext = false;
        f.live(s2, old.get((int) s2));
        published.clear();
        long r0 = publish(TestBatches.positional().stored(new long[] {90}, null, B1));
        f.live(r0, published.get(0));
        // the old engine's replay comes back (it was asked before the restart), then ends
        f.replayed(1, old.get(1));
        f.replayed(2, old.get(2));
        answerNext = true;
        f.replayEnded();
        // held batch 0 lies below where the gap's replay began: a restart, not an overlap
        assertEquals(1, index.status("a").streams().get(0).resets());
        assertEquals(0, held(PROMPT)); // the old chain is gone
        assertEquals(16, held(concat(B1, new int[] {1})));
        assertEquals(ReplicaMode.PRECISE, mode());
    }

    @Test
    void aLateSubscriberIsPreciseButIncomplete() {
        publish(TestBatches.positional().stored(new long[] {1}, null, B0));
        publish(TestBatches.positional().stored(new long[] {2}, 1L, B1));
        publish(TestBatches.positional().stored(new long[] {3}, 2L, B2));
        dropped = 2; // the buffer kept only the last batch: its parent is unknown
        connect(true);
        StreamStatus st = index.status("a").streams().get(0);
        assertTrue(st.incomplete());
        assertEquals(1, st.orphans());
        assertEquals(0, held(PROMPT));
        assertEquals(ReplicaMode.PRECISE, mode());
        // found during the connect replay itself: no second replay is asked for (it could not help)
        assertEquals(List.of(0L), requests);
    }

    @Test
    void aReplayThatNeverAnswersTimesOut() {
        connect(false);
        assertEquals(ReplicaMode.CATCHING_UP, mode());
        deliver(publish(TestBatches.positional().stored(new long[] {1}, null, B0)));
        now.addAndGet(TimeUnit.SECONDS.toNanos(3) + 1);
        feed.tick();
        assertEquals(ReplicaMode.PRECISE, mode()); // the held batch 0 started the stream
        assertEquals(16, held(PROMPT));
        assertEquals(1, index.status("a").streams().get(0).replayFailures());
    }

    @Test
    void malformedBatchesAreCountedAndTheStreamGoesOn() {
        connect(true);
        deliver(publish(TestBatches.positional().stored(new long[] {1}, null, B0)));
        published.add(new byte[] {(byte) 0x93, 0x01}); // truncated
        deliver(1);
        deliver(publish(TestBatches.positional().stored(new long[] {2}, 1L, B1)));
        assertEquals(32, held(PROMPT));
        StreamStatus st = index.status("a").streams().get(0);
        assertEquals(1, st.malformed());
        assertEquals(ReplicaMode.PRECISE, mode());
    }

    @Test
    void aSilentStreamWhileRequestsAreRoutedIsApproximateUntilItSpeaks() {
        connect(true);
        deliver(publish(TestBatches.positional().stored(new long[] {1}, null, B0)));
        StreamState st = index.entry("a").streams[0];
        for (int i = 0; i < 3; i++) {
            st.noteRouted(now.get());
        }
        now.addAndGet(TimeUnit.SECONDS.toNanos(6));
        assertEquals(ReplicaMode.APPROXIMATE, mode());
        deliver(publish(TestBatches.positional().stored(new long[] {2}, 1L, B1)));
        assertEquals(ReplicaMode.PRECISE, mode());
    }

    @Test
    void aBatchPublishedBeforeTheSubscriptionTookEffectIsCaughtUpWhenItDoes() {
        connect(true); // the history replay answered at once: nothing yet
        long s0 = publish(TestBatches.positional().stored(new long[] {1}, null, B0)); // reaches no one
        assertEquals(0, held(PROMPT));
        feed.subscribed(); // the live socket's handshake completed
        assertEquals(List.of(0L, 0L), requests);
        assertEquals(16, held(PROMPT));
        StreamStatus st = index.status("a").streams().get(0);
        assertEquals(s0 + 1, st.nextSeq());
        assertEquals(0, st.gaps());
        assertEquals(0, st.resets());
        assertFalse(st.incomplete());
        assertEquals(ReplicaMode.PRECISE, mode());
        feed.subscribed(); // a reconnect: from the batch expected next, nothing lost, nothing repeated
        assertEquals(List.of(0L, 0L, s0 + 1), requests);
        assertEquals(1, index.status("a").streams().get(0).batches());
    }

    @Test
    void aSubscriptionDuringTheHistoryReplayCatchesUpAfterIt() {
        publish(TestBatches.positional().stored(new long[] {1}, null, B0));
        connect(false);
        feed.subscribed(); // while the history replay runs: its answer may predate the subscription
        assertEquals(List.of(0L), requests);
        long s1 = publish(TestBatches.positional().stored(new long[] {2}, 1L, B1)); // after the replay's answer
        feed.replayed(0, published.get(0));
        feed.replayEnded();
        assertEquals(List.of(0L, s1), requests);
        assertEquals(ReplicaMode.CATCHING_UP, mode());
        answer(s1);
        assertEquals(32, held(PROMPT));
        assertEquals(ReplicaMode.PRECISE, mode());
    }

    @Test
    void aCatchUpTheEngineDoesNotAnswerLosesNothingAndKeepsTheSequence() {
        connect(true);
        deliver(publish(TestBatches.positional().stored(new long[] {1}, null, B0)));
        answerNext = false;
        feed.subscribed();
        now.addAndGet(TimeUnit.SECONDS.toNanos(3) + 1); // past the replay's time limit
        feed.tick();
        StreamStatus st = index.status("a").streams().get(0);
        assertEquals(1, st.replayFailures());
        assertEquals(0, st.resets());
        assertFalse(st.incomplete());
        assertEquals(1, st.nextSeq());
        assertEquals(16, held(PROMPT));
        assertEquals(ReplicaMode.PRECISE, mode());
    }

    @Test
    void aCatchUpTheBufferNoLongerHoldsLosesWhatWasPublishedMeanwhile() {
        connect(true);
        deliver(publish(TestBatches.positional().stored(new long[] {1}, null, B0)));
        publish(TestBatches.positional().stored(new long[] {2}, 1L, B1)); // reaches no one
        publish(TestBatches.positional().stored(new long[] {3}, 2L, B2));
        dropped = 2; // and the engine's buffer moved past it
        feed.subscribed();
        StreamStatus st = index.status("a").streams().get(0);
        assertEquals(1, st.resets());
        assertTrue(st.incomplete());
        assertEquals(ReplicaMode.APPROXIMATE, mode());
    }
}
