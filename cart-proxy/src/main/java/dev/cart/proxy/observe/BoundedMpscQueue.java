package dev.cart.proxy.observe;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A bounded first-in first-out queue that any number of threads offer to and one thread polls, without a lock: an
 * offer is one compare-and-set and one ordered store, and never waits.
 *
 * <p>How: the elements sit in an array used as a ring. {@link #claimed} counts the slots producers have claimed,
 * {@link #taken} the elements the consumer has taken; element {@code n} lives in slot {@code n & mask}. A producer
 * claims index {@code p} by a compare-and-set of {@link #claimed} from {@code p} to {@code p + 1}, once it knows
 * the slot is free ({@code p < taken + capacity}; it reads {@link #taken}, a line the consumer writes, only when
 * its cached bound {@link #limit} says the queue may be full), then stores its element into the slot with release
 * semantics. The consumer reads the slot of {@code taken} with acquire semantics; it finds it null either when the
 * queue is empty ({@code claimed == taken}) or when a producer has claimed the slot and not stored yet: then it
 * waits for that store, a few instructions away (so that an element offered after another's claim is never taken
 * first: the queue is linearizable, as its Lincheck test checks). It clears the slot, then publishes {@code taken
 * + 1} with release semantics, which a producer reads before it stores into the slot again.
 *
 * <p>Order: elements come out in the order their offers claimed their slots; the elements of one producer, in the
 * order it offered them.
 *
 * <p>Concurrency: {@link #offer} from any thread; {@link #poll} from one thread at a time only (the consumer);
 * {@link #claimed()} and {@link #isEmpty()} from any thread.
 *
 * @param <E> the elements
 */
final class BoundedMpscQueue<E> {

    private static final VarHandle SLOT = MethodHandles.arrayElementVarHandle(Object[].class);
    private static final VarHandle TAKEN;

    static {
        try {
            TAKEN = MethodHandles.lookup().findVarHandle(BoundedMpscQueue.class, "taken", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final Object[] slots;
    private final int mask;
    private final int capacity;
    /** Slots claimed by producers since the start. */
    private final AtomicLong claimed = new AtomicLong();
    /**
     * A bound under which a claim needs no look at {@link #taken}: some past {@code taken + capacity}, never more
     * than the present one (a producer that writes an older value only makes the next look come sooner).
     */
    private volatile long limit;
    /** Elements taken by the consumer since the start; written by it only. */
    private volatile long taken;

    /**
     * @param capacity elements held at most, 1 to 2^30
     * @throws IllegalArgumentException when {@code capacity} is out of range
     */
    BoundedMpscQueue(int capacity) {
        if (capacity < 1 || capacity > 1 << 30) {
            throw new IllegalArgumentException("capacity must be 1 to 2^30: " + capacity);
        }
        this.capacity = capacity;
        int size = Integer.highestOneBit(capacity);
        if (size < capacity) {
            size <<= 1;
        }
        this.slots = new Object[size];
        this.mask = size - 1;
        this.limit = capacity;
    }

    /**
     * Adds {@code e} at the tail, or returns false at once when the queue holds {@code capacity} elements.
     *
     * @param e the element, not null
     * @return false when the queue was full
     */
    boolean offer(E e) {
        long p;
        do {
            p = claimed.get();
            if (p >= limit) {
                long bound = (long) TAKEN.getAcquire(this) + capacity;
                if (p >= bound) {
                    return false;
                }
                limit = bound;
            }
        } while (!claimed.compareAndSet(p, p + 1));
        SLOT.setRelease(slots, (int) p & mask, e);
        return true;
    }

    /**
     * Takes the element at the head; the consumer's thread only.
     *
     * @return the head, or null when the queue is empty
     */
    @SuppressWarnings("unchecked")
    E poll() {
        long t = (long) TAKEN.getOpaque(this); // this thread's own writes: no ordering needed to read them
        int i = (int) t & mask;
        Object e = SLOT.getAcquire(slots, i);
        if (e == null) {
            if (claimed.get() == t) {
                return null;
            }
            // claimed, not stored yet: the producer is between its claim and its store
            for (int spins = 1; (e = SLOT.getAcquire(slots, i)) == null; spins++) {
                if ((spins & 63) == 0) {
                    Thread.yield(); // the producer may have lost its processor between the two
                } else {
                    Thread.onSpinWait();
                }
            }
        }
        SLOT.set(slots, i, null);
        TAKEN.setRelease(this, t + 1); // after the clear: a producer that sees the new count finds the slot free
        return (E) e;
    }

    /** Offers that have claimed a slot since the start: every element offered before this call is below it. */
    long claimed() {
        return claimed.get();
    }

    /** True when every claimed slot has been taken. */
    boolean isEmpty() {
        long t = taken; // first: claimed only grows, so equal counts read in this order were equal at this read
        return claimed.get() == t;
    }
}
