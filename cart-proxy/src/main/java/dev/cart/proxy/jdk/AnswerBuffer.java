package dev.cart.proxy.jdk;

import dev.cart.proxy.http.AnswerBudget;
import dev.cart.proxy.upstream.Relay;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.Flow;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * The JDK front's buffer between a replica's answer body and the client: the JDK HTTP client pushes the
 * body in as fast as the replica sends it, up to {@link Relay#BUFFER_BYTES} held at once (beyond that no more
 * is requested from the client, which stops reading from the replica's socket: backpressure; and while the
 * {@link AnswerBudget} of all connections is spent, none until this client has taken what waits), and the
 * request thread takes it out as fast as the client reads. So the replica's answer is read whole at the
 * replica's speed when it fits, and the lease can close when it is complete ({@link Events#complete}), not
 * when a slow client has read it: a slow reader does not hold the replica's slot (the Netty front does the
 * same with its write buffer).
 *
 * <p>Concurrency: the HTTP client calls the {@link Flow.Subscriber} methods, one at a time, on its threads;
 * the request thread calls {@link #take} and {@link #cancel}. The {@link Events} are called on the client's
 * threads, before the bytes they see are queued; the front guards what they share with its own thread.
 * The count of bytes held is guarded by this object's lock; the subscription is requested from outside it.
 */
final class AnswerBuffer implements Flow.Subscriber<List<ByteBuffer>> {

    /** What happens to the answer body, told as it arrives from the replica. */
    interface Events {
        /** Bytes arrived (never empty). */
        void bytes(byte[] b);

        /** The replica's answer is complete. */
        void complete();

        /** The replica's answer failed. */
        void failed(Throwable t);
    }

    /** The end of the body. */
    static final Object END = new Object();

    /** What {@link #take} returns when the body failed or was cancelled. */
    record Broken(Throwable cause) {}

    private final Events events;
    private final long bound;
    private final AnswerBudget total;
    private final LinkedBlockingQueue<Object> queue = new LinkedBlockingQueue<>();
    private volatile Flow.Subscription subscription;
    private volatile boolean cancelled; // written under this object's lock
    private long held; // guarded by this
    private boolean paused; // guarded by this

    AnswerBuffer(Events events, long bound, AnswerBudget total) {
        this.events = events;
        this.bound = bound;
        this.total = total;
    }

    @Override
    public void onSubscribe(Flow.Subscription s) {
        subscription = s;
        if (cancelled) {
            s.cancel();
            return;
        }
        s.request(1);
    }

    @Override
    public void onNext(List<ByteBuffer> items) {
        int n = 0;
        for (ByteBuffer b : items) {
            n += b.remaining();
        }
        boolean more;
        synchronized (this) {
            if (cancelled) {
                return; // dropped with the exchange; nothing more is asked for
            }
            held += n; // counted before the bytes can be taken
            total.add(n);
            // at the total's limit, a client that has not taken what waits for it gets no more
            more = held < bound && !(total.over() && held > 0);
            paused = !more;
        }
        if (n > 0) {
            byte[] bytes = new byte[n];
            int at = 0;
            for (ByteBuffer b : items) {
                int r = b.remaining();
                b.get(bytes, at, r);
                at += r;
            }
            events.bytes(bytes);
            queue.add(bytes);
        }
        if (more) {
            subscription.request(1);
        }
    }

    @Override
    public void onError(Throwable t) {
        if (!cancelled) {
            events.failed(t);
        }
        queue.add(new Broken(t));
    }

    @Override
    public void onComplete() {
        if (!cancelled) {
            events.complete();
        }
        queue.add(END);
    }

    /**
     * The next bytes of the body, waiting at most {@code timeoutNanos}: a {@code byte[]}, {@link #END},
     * a {@link Broken}, or null when nothing came in time. Taking bytes out may resume reading from the
     * replica.
     */
    Object take(long timeoutNanos) throws InterruptedException {
        Object o = queue.poll(timeoutNanos, TimeUnit.NANOSECONDS);
        if (o instanceof byte[] b) {
            taken(b.length);
        }
        return o;
    }

    /** More bytes that have already arrived, without waiting (null when there are none yet). */
    byte[] poll() {
        if (!(queue.peek() instanceof byte[])) {
            return null;
        }
        Object o = queue.poll();
        byte[] b = (byte[]) o;
        taken(b.length);
        return b;
    }

    private void taken(int n) {
        boolean resume;
        synchronized (this) {
            if (cancelled) {
                return; // given back by cancel
            }
            held -= n;
            total.add(-n);
            resume = paused && held <= bound / 2 && (held == 0 || !total.over());
            if (resume) {
                paused = false;
            }
        }
        if (resume) {
            subscription.request(1);
        }
    }

    /** Bytes held now (arrived, not yet taken). */
    synchronized long held() {
        return held;
    }

    /**
     * Stops reading from the replica (the client went away, the deadline passed, or the relay is over): the
     * upstream exchange is cancelled, no {@link Events} follow, a waiting {@link #take} returns a
     * {@link Broken}, and the bytes still held are given back to the {@link AnswerBudget}. Idempotent.
     */
    void cancel(String why) {
        synchronized (this) {
            if (cancelled) {
                return;
            }
            cancelled = true;
            total.add(-held); // what is left is dropped with the exchange
            held = 0;
        }
        Flow.Subscription s = subscription;
        if (s != null) {
            s.cancel();
        }
        queue.add(new Broken(new java.io.IOException(why)));
    }
}
