package dev.cart.proxy.jdk;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The Java 17 request pool: nothing handed to it is lost when every thread is busy, and it stops whole. */
class HandOffPoolTest {

    private static final ThreadFactory DAEMONS = r -> {
        Thread t = new Thread(r, "hand-off-test");
        t.setDaemon(true);
        return t;
    };

    @Test
    void exchangesBeyondEveryBusyThreadRunOnTheOverflowThreadsInsteadOfWaitingOrFailing() throws Exception {
        ServerRuntime.HandOffPool pool = new ServerRuntime.HandOffPool(2, 1, DAEMONS);
        CountDownLatch release = new CountDownLatch(1);
        CountDownLatch holding = new CountDownLatch(2);
        Set<Boolean> mainMarked = ConcurrentHashMap.newKeySet();
        for (int i = 0; i < 2; i++) {
            pool.execute(() -> {
                mainMarked.add(ServerRuntime.onOverflowThread());
                holding.countDown();
                await(release);
            });
        }
        assertTrue(holding.await(10, TimeUnit.SECONDS), "both threads of the pool are held");
        assertEquals(Set.of(false), mainMarked, "the pool's own threads may carry streams");

        CountDownLatch done = new CountDownLatch(5);
        Set<String> ranOn = ConcurrentHashMap.newKeySet();
        Set<Boolean> markedOverflow = ConcurrentHashMap.newKeySet();
        for (int i = 0; i < 5; i++) {
            pool.execute(() -> {
                ranOn.add(Thread.currentThread().getName() + "@" + System.identityHashCode(Thread.currentThread()));
                markedOverflow.add(ServerRuntime.onOverflowThread());
                done.countDown();
            });
        }
        assertTrue(done.await(10, TimeUnit.SECONDS), "all five ran while the pool's own threads were held");
        assertEquals(1, ranOn.size(), "one overflow thread ran them in turn");
        assertEquals(
                Set.of(true), markedOverflow, "the handler can tell it is on an overflow thread (and refuse a stream)");
        assertEquals(2, pool.getPoolSize(), "the pool itself never grows past its limit");

        release.countDown();
        pool.shutdown();
        assertTrue(pool.awaitTermination(10, TimeUnit.SECONDS));
        assertTrue(pool.isTerminated());
        assertThrows(RejectedExecutionException.class, () -> pool.execute(() -> {}));
    }

    @Test
    void shutdownNowInterruptsHeldThreadsAndReturnsWhatNeverStarted() throws Exception {
        ServerRuntime.HandOffPool pool = new ServerRuntime.HandOffPool(1, 1, DAEMONS);
        CountDownLatch holding = new CountDownLatch(2);
        CountDownLatch never = new CountDownLatch(1);
        for (int i = 0; i < 2; i++) {
            pool.execute(() -> {
                holding.countDown();
                await(never);
            });
        }
        assertTrue(holding.await(10, TimeUnit.SECONDS), "the pool's thread and the overflow thread are held");
        pool.execute(() -> {});

        assertEquals(1, pool.shutdownNow().size(), "the queued exchange is handed back");
        assertTrue(pool.awaitTermination(10, TimeUnit.SECONDS), "held threads were interrupted and ended");
    }

    private static void await(CountDownLatch latch) {
        try {
            latch.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
