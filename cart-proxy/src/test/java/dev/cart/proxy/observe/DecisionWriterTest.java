package dev.cart.proxy.observe;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

class DecisionWriterTest {

    private static final Duration LONG = Duration.ofSeconds(30);

    private static DecisionLog record(int i) {
        DecisionLog log = new DecisionLog(true, "/e" + i, "POST");
        log.status(200);
        return log;
    }

    /** The endpoint of a written line ({@code /eN}), which tells the records apart. */
    private static String endpoint(String line) {
        return line.substring("decision endpoint=".length(), line.indexOf(' ', "decision endpoint=".length()));
    }

    private static DecisionWriter writer(int capacity, Consumer<String> sink) {
        return new DecisionWriter(capacity, sink, r -> {
            Thread t = new Thread(r, "test-decision-writer");
            t.setDaemon(true);
            return t;
        });
    }

    private static void await(String what, java.util.function.BooleanSupplier done) throws InterruptedException {
        long deadline = System.nanoTime() + LONG.toNanos();
        while (!done.getAsBoolean()) {
            assertTrue(System.nanoTime() < deadline, "timed out waiting for " + what);
            Thread.sleep(5);
        }
    }

    @Test
    void linesFromManyThreadsComeOutWholeAndEachThreadsInItsOrder() throws Exception {
        List<String> lines = Collections.synchronizedList(new ArrayList<>());
        try (DecisionWriter w = writer(100_000, lines::add)) {
            int threads = 4;
            int each = 2_000;
            List<Thread> producers = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int base = t * each;
                Thread p = new Thread(() -> {
                    for (int i = 0; i < each; i++) {
                        assertTrue(w.submit(record(base + i)));
                    }
                });
                producers.add(p);
                p.start();
            }
            for (Thread p : producers) {
                p.join();
            }
            assertTrue(w.flush(LONG));
            assertEquals(threads * each, lines.size());
            int[] last = new int[threads];
            java.util.Arrays.fill(last, -1);
            for (String line : lines) {
                assertTrue(line.startsWith("decision endpoint=/e") && line.contains(" status=200 "), line);
                int i = Integer.parseInt(endpoint(line).substring(2));
                int t = i / each;
                assertTrue(i > last[t], "out of order: " + i + " after " + last[t]);
                last[t] = i;
            }
            assertEquals(0, w.dropped());
        }
    }

    @Test
    void linesOfOneThreadComeOutInTheOrderSubmitted() throws Exception {
        List<String> lines = Collections.synchronizedList(new ArrayList<>());
        try (DecisionWriter w = writer(64, lines::add)) {
            for (int i = 0; i < 1_000; i++) {
                while (!w.submit(record(i))) { // a full queue drops: wait for room rather than lose one here
                    Thread.onSpinWait();
                }
            }
            assertTrue(w.flush(LONG));
            List<String> expected = new ArrayList<>();
            for (int i = 0; i < 1_000; i++) {
                expected.add("/e" + i);
            }
            assertEquals(
                    expected, lines.stream().map(DecisionWriterTest::endpoint).toList());
        }
    }

    @Test
    @Timeout(60) // a submit that waited for room would wait for ever here: the writer is held
    void aFullQueueDropsAndCountsWithoutBlocking() throws Exception {
        CountDownLatch inSink = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        List<String> lines = Collections.synchronizedList(new ArrayList<>());
        try (DecisionWriter w = writer(4, line -> {
            inSink.countDown();
            try {
                release.await(); // holds the writer on the first line
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            lines.add(line);
        })) {
            assertTrue(w.submit(record(0)));
            assertTrue(inSink.await(LONG.toSeconds(), TimeUnit.SECONDS)); // the writer took it and is held
            for (int i = 1; i <= 4; i++) {
                assertTrue(w.submit(record(i)), "room for " + i);
            }
            // the queue is full and its writer held: these return (false) instead of waiting for room
            assertFalse(w.submit(record(5)));
            assertFalse(w.submit(record(6)));
            assertEquals(2, w.dropped());
            release.countDown();
            assertTrue(w.flush(LONG));
            assertEquals(
                    List.of("/e0", "/e1", "/e2", "/e3", "/e4"),
                    lines.stream().map(DecisionWriterTest::endpoint).toList());
            assertEquals(2, w.dropped());
        }
    }

    /** Metric events run on the writer thread, in their order among the lines; a full queue refuses them at once. */
    @Test
    @Timeout(60)
    void eventsRunOnTheWriterInOrderWithTheLinesAndAFullQueueRefusesThem() throws Exception {
        CountDownLatch inSink = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        List<String> seen = Collections.synchronizedList(new ArrayList<>());
        try (DecisionWriter w = writer(3, line -> {
            inSink.countDown();
            try {
                release.await(); // holds the writer on the first line
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            seen.add(endpoint(line));
        })) {
            assertTrue(w.submit(record(0)));
            assertTrue(inSink.await(LONG.toSeconds(), TimeUnit.SECONDS));
            assertTrue(w.defer(
                    () -> seen.add("event 1 on " + Thread.currentThread().getName())));
            assertTrue(w.submit(record(2)));
            assertTrue(w.defer(() -> seen.add("event 3")));
            assertFalse(w.defer(() -> seen.add("event 4")), "the queue is full: the caller runs it itself");
            assertEquals(0, w.dropped(), "a refused event is not a dropped line");
            release.countDown();
            assertTrue(w.flush(LONG));
            assertEquals(List.of("/e0", "event 1 on test-decision-writer", "/e2", "event 3"), seen);
        }
    }

    private static RequestMeters meters(PrometheusMeterRegistry registry) {
        return new RequestMeters(new Meters(registry), () -> null, new DecisionWindow(), new ModelLabels());
    }

    private static double healthRequests(PrometheusMeterRegistry registry) {
        return registry.find("cart.requests").tag("endpoint", "/health").counters().stream()
                .mapToDouble(io.micrometer.core.instrument.Counter::count)
                .sum();
    }

    /** A record whose request ended: its events (one request to /health) are counted by {@code meters}. */
    private static DecisionLog finished(int i, boolean line, RequestMeters meters) {
        DecisionLog log = new DecisionLog(line, "/e" + i, "POST");
        log.finished(meters, "/health", 200, null, 1_000);
        return log;
    }

    /**
     * A record that finds the queue full loses its line (counted as dropped) but not its events: the caller counts
     * them at once; a record without a line is no dropped line.
     */
    @Test
    @Timeout(60)
    void aFullQueueCountsTheRecordsEventsOnTheCallerAndDropsOnlyItsLine() throws Exception {
        CountDownLatch inSink = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        List<String> lines = Collections.synchronizedList(new ArrayList<>());
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        RequestMeters meters = meters(registry);
        try (DecisionWriter w = writer(1, line -> {
            inSink.countDown();
            try {
                release.await(); // holds the writer on the first line, once its events are counted
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            lines.add(endpoint(line));
        })) {
            assertTrue(w.submit(finished(0, true, meters)));
            assertTrue(inSink.await(LONG.toSeconds(), TimeUnit.SECONDS));
            assertTrue(w.submit(finished(1, true, meters))); // the queue's one place
            assertEquals(1, healthRequests(registry), "the writer counted the record it holds");
            assertFalse(w.submit(finished(2, true, meters)));
            assertEquals(2, healthRequests(registry), "counted by the caller at once");
            assertEquals(1, w.dropped());
            assertFalse(w.submit(finished(3, false, meters)));
            assertEquals(3, healthRequests(registry));
            assertEquals(1, w.dropped(), "a record without a line drops no line");
            release.countDown();
            assertTrue(w.flush(LONG));
            assertEquals(4, healthRequests(registry));
            assertEquals(List.of("/e0", "/e1"), lines);
            assertEquals(0, w.failed());
        }
    }

    /** A flush returns once the records submitted before it are counted: what a scrape shows includes them. */
    @Test
    void aFlushWaitsUntilTheRecordsSubmittedBeforeItAreCounted() throws Exception {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        RequestMeters meters = meters(registry);
        try (DecisionWriter w = writer(100_000, line -> {})) {
            List<Thread> producers = new ArrayList<>();
            for (int t = 0; t < 3; t++) {
                Thread p = new Thread(() -> {
                    for (int i = 0; i < 5_000; i++) {
                        assertTrue(w.submit(finished(i, i % 2 == 0, meters)));
                    }
                });
                producers.add(p);
                p.start();
            }
            for (Thread p : producers) {
                p.join();
            }
            assertTrue(w.flush(LONG));
            assertEquals(15_000, healthRequests(registry));
            assertEquals(0, w.dropped());
        }
    }

    @Test
    @Timeout(60)
    void closeWritesWhatIsQueuedFirst() throws Exception {
        CountDownLatch inSink = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        AtomicBoolean closing = new AtomicBoolean();
        List<String> lines = Collections.synchronizedList(new ArrayList<>());
        DecisionWriter w = writer(16, line -> {
            inSink.countDown();
            try {
                release.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            lines.add(line);
        });
        assertTrue(w.submit(record(0)));
        assertTrue(inSink.await(LONG.toSeconds(), TimeUnit.SECONDS)); // the writer holds line 0; the rest queue
        for (int i = 1; i < 10; i++) {
            assertTrue(w.submit(record(i)));
        }
        Thread closer = Thread.currentThread();
        Thread releaser = new Thread(() -> {
            while (!closing.get()) {
                Thread.onSpinWait();
            }
            // release the sink only once close() waits for the queued lines (if it returned without waiting,
            // lines are missing; if it never waits, this spins until the test's timeout fails it)
            while (closer.getState() != Thread.State.TIMED_WAITING) {
                Thread.onSpinWait();
            }
            release.countDown();
        });
        releaser.setDaemon(true);
        releaser.start();
        closing.set(true);
        w.close();
        assertEquals(10, lines.size(), lines.toString());
        assertFalse(w.flush(Duration.ofMillis(1)), "a closed writer writes nothing more");
        releaser.join();
    }

    @Test
    void aSinkThatThrowsCostsItsLineOnly() throws Exception {
        List<String> lines = Collections.synchronizedList(new ArrayList<>());
        try (DecisionWriter w = writer(16, line -> {
            if (line.contains("/e1 ")) {
                throw new IllegalStateException("appender broken");
            }
            lines.add(line);
        })) {
            for (int i = 0; i < 3; i++) {
                assertTrue(w.submit(record(i)));
            }
            assertTrue(w.flush(LONG));
            assertEquals(
                    List.of("/e0", "/e2"),
                    lines.stream().map(DecisionWriterTest::endpoint).toList());
            assertEquals(1, w.failed());
        }
    }

    @Test
    void aQuietWriterIsWokenByTheNextLine() throws Exception {
        List<String> lines = Collections.synchronizedList(new ArrayList<>());
        // parked for an hour when idle: the second line is written only if its submit wakes the writer
        try (DecisionWriter w = new DecisionWriter(
                16,
                lines::add,
                r -> {
                    Thread t = new Thread(r, "test-decision-writer");
                    t.setDaemon(true);
                    return t;
                },
                Duration.ofHours(1))) {
            assertTrue(w.submit(record(0)));
            await("first line", () -> lines.size() == 1);
            await("the writer parked until woken", w::sleeping);
            assertTrue(w.submit(record(1)));
            await("second line", () -> lines.size() == 2);
        }
    }

    /** emit() hands the line to the process's writer; the line's times end at emit, not when it is written. */
    @Test
    void emittedLineIsTheLineOfTheRecordAtEmit() throws Exception {
        DecisionLog log = new DecisionLog(true, "/v1/chat/completions", "POST");
        DecisionLog notEmitted = new DecisionLog(true, "/v1/chat/completions", "POST");
        log.emit();
        assertTrue(DecisionLog.flush(LONG));
        Thread.sleep(30); // the clock moves on: a line timed at writing would now say total_ms >= 30
        assertTrue(totalMs(log.line()) < totalMs(notEmitted.line()), log.line() + " / " + notEmitted.line());
    }

    private static long totalMs(String line) {
        int at = line.indexOf(" total_ms=") + " total_ms=".length();
        return Long.parseLong(line.substring(at, line.indexOf(' ', at)));
    }
}
