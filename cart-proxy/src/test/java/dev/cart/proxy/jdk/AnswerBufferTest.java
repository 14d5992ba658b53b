package dev.cart.proxy.jdk;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.proxy.http.AnswerBudget;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Flow;
import org.junit.jupiter.api.Test;

/** The JDK front's answer buffer: bounded reading from the replica, resumed as the client takes bytes. */
class AnswerBufferTest {

    /** A subscription that counts what was requested. */
    static final class Counting implements Flow.Subscription {
        long requested;
        boolean cancelled;

        @Override
        public void request(long n) {
            requested += n;
        }

        @Override
        public void cancel() {
            cancelled = true;
        }
    }

    static final class Recorder implements AnswerBuffer.Events {
        final List<Integer> sizes = new ArrayList<>();
        int complete;
        int failed;

        @Override
        public void bytes(byte[] b) {
            sizes.add(b.length);
        }

        @Override
        public void complete() {
            complete++;
        }

        @Override
        public void failed(Throwable t) {
            failed++;
        }
    }

    static List<ByteBuffer> chunk(int n) {
        return List.of(ByteBuffer.wrap(new byte[n / 2]), ByteBuffer.wrap(new byte[n - n / 2]));
    }

    @Test
    void readingPausesAtTheBoundAndResumesWhenHalfIsTaken() throws Exception {
        Recorder events = new Recorder();
        AnswerBuffer b = new AnswerBuffer(events, 100, new AnswerBudget(1_000_000));
        Counting sub = new Counting();
        b.onSubscribe(sub);
        assertEquals(1, sub.requested);
        for (int i = 0; i < 3; i++) {
            b.onNext(chunk(30)); // 30, 60, 90 held: below the bound, more is asked for each time
        }
        assertEquals(4, sub.requested);
        b.onNext(chunk(30)); // 120: at the bound, reading pauses
        assertEquals(4, sub.requested, "no more asked of the replica while 120 bytes wait for the client");
        assertEquals(List.of(30, 30, 30, 30), events.sizes, "the bytes were seen as they arrived");
        assertEquals(30, ((byte[]) b.take(1)).length); // 90 held: above half the bound
        assertEquals(4, sub.requested);
        assertEquals(30, b.poll().length); // 60 held
        assertEquals(4, sub.requested);
        assertEquals(30, b.poll().length); // 30 held: reading resumes
        assertEquals(5, sub.requested);
        b.onComplete();
        assertEquals(1, events.complete, "complete when the replica is, before the client has the rest");
        assertEquals(30, b.poll().length);
        assertNull(b.poll(), "the end is not bytes");
        assertSame(AnswerBuffer.END, b.take(1));
        assertEquals(0, b.held());
    }

    @Test
    void aCancelWakesTheTakerAndSilencesTheEvents() throws Exception {
        Recorder events = new Recorder();
        AnswerBuffer b = new AnswerBuffer(events, 100, new AnswerBudget(1_000_000));
        Counting sub = new Counting();
        b.onSubscribe(sub);
        b.cancel("the client went away");
        assertTrue(sub.cancelled);
        assertInstanceOf(AnswerBuffer.Broken.class, b.take(1));
        b.onNext(chunk(10));
        b.onComplete();
        assertEquals(List.of(), events.sizes);
        assertEquals(0, events.complete);
        assertSame(AnswerBuffer.END, b.take(1), "no bytes queued after a cancel, only the end");
    }

    @Test
    void aFailureIsToldAndTaken() throws Exception {
        Recorder events = new Recorder();
        AnswerBuffer b = new AnswerBuffer(events, 100, new AnswerBudget(1_000_000));
        b.onSubscribe(new Counting());
        b.onNext(List.of(ByteBuffer.wrap(new byte[] {1, 2, 3})));
        b.onError(new java.io.IOException("reset"));
        assertEquals(1, events.failed);
        assertArrayEquals(new byte[] {1, 2, 3}, (byte[]) b.take(1));
        assertInstanceOf(AnswerBuffer.Broken.class, b.take(1));
    }

    @Test
    void atTheTotalsLimitAClientThatHasNotTakenWhatWaitsGetsNoMore() throws Exception {
        AnswerBudget total = new AnswerBudget(50);
        AnswerBuffer other = new AnswerBuffer(new Recorder(), 100, total);
        other.onSubscribe(new Counting());
        other.onNext(chunk(40)); // another connection's slow reader holds 40 of the 50
        AnswerBuffer b = new AnswerBuffer(new Recorder(), 100, total);
        Counting sub = new Counting();
        b.onSubscribe(sub);
        b.onNext(chunk(20)); // 60 in all: over; this client has 20 waiting
        assertEquals(1, sub.requested, "paused although its own bound is far");
        assertEquals(60, total.held());
        b.take(1); // this client takes all it had: reading resumes, the total notwithstanding
        assertEquals(2, sub.requested);
        assertEquals(40, total.held());
        b.cancel("done");
        other.cancel("done");
        assertEquals(0, total.held(), "everything given back");
    }
}
