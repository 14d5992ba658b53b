package dev.cart.proxy;

import dev.cart.sim.WorkloadRequest;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.IntConsumer;

/**
 * The simulation's closed loop over HTTP, for the end-to-end replays: {@code clients} requests in flight,
 * the next one sent as one finishes, and a session's turns one at a time (a turn that arrives while its
 * session's previous turn is in flight waits for it). {@code send} starts request {@code i} and must call
 * {@link #finished} once, when it has ended however it ended. {@code send} is called with this object's
 * lock held, so what it draws from a shared random source comes in a fixed order for a given run.
 */
final class SessionLoop {

    private final List<WorkloadRequest> requests;
    private final int clients;
    private final IntConsumer send;
    private final CountDownLatch done;
    private final Map<String, ArrayDeque<Integer>> waiting = new HashMap<>();
    private final Map<String, Boolean> busy = new HashMap<>();
    private int next;

    SessionLoop(List<WorkloadRequest> requests, int clients, IntConsumer send) {
        this.requests = requests;
        this.clients = clients;
        this.send = send;
        this.done = new CountDownLatch(requests.size());
    }

    /** Sends every request and waits until all have finished. */
    void run() throws InterruptedException {
        synchronized (this) {
            for (next = 0; next < Math.min(clients, requests.size()); next++) {
                arrive(next);
            }
        }
        if (!done.await(30, TimeUnit.MINUTES)) {
            throw new IllegalStateException("the replay did not finish");
        }
    }

    /** Request {@code i} has ended: its session's next turn, or the next request, goes out. */
    synchronized void finished(int i) {
        String session = requests.get(i).session();
        if (session != null) {
            ArrayDeque<Integer> q = waiting.get(session);
            if (q != null && !q.isEmpty()) {
                send.accept(q.pollFirst());
            } else {
                busy.put(session, false);
            }
        }
        if (next < requests.size()) {
            arrive(next++);
        }
        done.countDown();
    }

    /** Called with the lock held. */
    private void arrive(int i) {
        String session = requests.get(i).session();
        if (session != null) {
            if (busy.getOrDefault(session, false)) {
                waiting.computeIfAbsent(session, k -> new ArrayDeque<>()).addLast(i);
                return;
            }
            busy.put(session, true);
        }
        send.accept(i);
    }
}
