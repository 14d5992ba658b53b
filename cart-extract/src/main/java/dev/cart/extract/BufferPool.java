package dev.cart.extract;

import com.fasterxml.jackson.core.util.BufferRecycler;
import com.fasterxml.jackson.core.util.JsonRecyclerPools;
import com.fasterxml.jackson.core.util.RecyclerPool;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.ref.SoftReference;
import org.jspecify.annotations.Nullable;

/**
 * The extractor's pool of Jackson buffers: one {@link BufferRecycler} per platform thread, a shared
 * concurrent deque for virtual threads.
 *
 * <p>Why: a parser takes a recycler when it is made and gives it back when it is closed, once per request.
 * Through a concurrent deque that is a poll and a link (and the unlinked node's garbage) on every request;
 * the proxy's event loops are a few long-lived platform threads, for which a recycler of the thread's own
 * costs one thread-local read and nothing on release: as Jackson's own thread-local pool
 * ({@link JsonRecyclerPools#threadLocalPool()}), the recyclers are softly held, so that a pool of many
 * platform threads (the JDK front's on Java 17) gives its buffers up under memory pressure. A virtual thread
 * is never reused, so a recycler of its own would be made for each request and its buffers with it: those
 * take and give back through the deque, as before.
 *
 * <p>A platform thread's recycler is a {@link ThreadBuffers}, this pool's own (not the one Jackson's pool
 * shares with every other parser of the thread), which also keeps the key segment's first chunk between
 * extractions ({@link ThreadBuffers#takeChunk}): a plain field, since only its thread ever reads it, where a
 * slot of Jackson's recycler is an atomic exchange to take and a volatile write to give back (together about
 * a twentieth of a small body's extraction).
 *
 * <p>Concurrency: a thread's own recycler is only used by that thread; two parsers open at once on it (a
 * re-read of one object inside the body's) share it: {@link BufferRecycler} hands out each buffer slot
 * atomically, so the second gets a fresh buffer. Recyclers of the thread-local kind are not linked to a pool,
 * so a parser's close releases nothing. The chunk is taken and given back by the extraction alone (one at a
 * time per thread). The deque's recyclers are Jackson's own: one of them goes back to the deque when its
 * parser closes, before the extraction is done with its chunk, so their chunk is taken from an atomic slot.
 * {@code Thread.isVirtual()} is found once by reflection (the code is built for Java 17, which has no
 * virtual threads: there every thread is a platform thread).
 */
final class BufferPool implements RecyclerPool<BufferRecycler> {

    private static final long serialVersionUID = 1L;

    /** {@code Thread.isVirtual()}, or null on a Java without virtual threads. */
    private static final @Nullable MethodHandle IS_VIRTUAL = isVirtualHandle();

    /** Each platform thread's recycler, softly held. */
    private static final ThreadLocal<SoftReference<ThreadBuffers>> OWN = new ThreadLocal<>();

    private final RecyclerPool<BufferRecycler> shared = JsonRecyclerPools.newConcurrentDequePool();

    /** A platform thread's recycler: Jackson's buffers, and the key segment's first chunk. Thread-confined. */
    static final class ThreadBuffers extends BufferRecycler {
        private byte @Nullable [] chunk;

        /**
         * A chunk of at least {@code size} bytes, the one kept when it is large enough; give it back with
         * {@link #giveChunk}. Its contents are whatever the last extraction left.
         */
        byte[] takeChunk(int size) {
            byte[] c = chunk;
            chunk = null;
            return c != null && c.length >= size ? c : new byte[size];
        }

        /** Keeps {@code c} for the thread's next extraction (the larger of it and the one kept). */
        void giveChunk(byte[] c) {
            byte[] kept = chunk;
            if (kept == null || c.length > kept.length) {
                chunk = c;
            }
        }
    }

    /** The calling platform thread's recycler, made on first use (and again if it was collected). */
    private static ThreadBuffers own() {
        SoftReference<ThreadBuffers> ref = OWN.get();
        ThreadBuffers b = ref == null ? null : ref.get();
        if (b == null) {
            b = new ThreadBuffers();
            OWN.set(new SoftReference<>(b));
        }
        return b;
    }

    private static @Nullable MethodHandle isVirtualHandle() {
        try {
            return MethodHandles.publicLookup()
                    .findVirtual(Thread.class, "isVirtual", MethodType.methodType(boolean.class));
        } catch (NoSuchMethodException | IllegalAccessException e) {
            return null;
        }
    }

    /** Whether the calling thread is a virtual thread. */
    static boolean onVirtualThread() {
        if (IS_VIRTUAL == null) {
            return false;
        }
        try {
            return (boolean) IS_VIRTUAL.invokeExact(Thread.currentThread());
        } catch (Throwable e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public BufferRecycler acquireAndLinkPooled() {
        return onVirtualThread() ? shared.acquireAndLinkPooled() : own();
    }

    @Override
    public BufferRecycler acquirePooled() {
        return onVirtualThread() ? shared.acquirePooled() : own();
    }

    /** A virtual thread's recycler goes back to the deque; a platform thread keeps its own. */
    @Override
    public void releasePooled(BufferRecycler recycler) {
        if (onVirtualThread()) {
            shared.releasePooled(recycler);
        }
    }

    /** Recyclers in the shared deque (those of the threads' own are not counted). */
    @Override
    public int pooledCount() {
        return shared.pooledCount();
    }

    private Object readResolve() {
        return new BufferPool();
    }
}
