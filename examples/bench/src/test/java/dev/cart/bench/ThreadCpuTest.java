package dev.cart.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.cart.bench.ThreadCpu.Kind;
import dev.cart.bench.ThreadCpu.Sample;
import dev.cart.bench.ThreadCpu.Split;
import dev.cart.bench.ThreadCpu.Stat;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** How the benchmark reads {@code /proc} stat lines and splits a process's CPU by thread, on fixed strings. */
class ThreadCpuTest {

    /** A stat line as the kernel writes it, with this name, user and system ticks (fields 14 and 15). */
    private static String line(long tid, String name, long user, long system) {
        return tid + " (" + name + ") S 4581 4574 27723 0 -1 4194368 2737 306 0 0 " + user + " " + system
                + " 0 0 20 0 40 0 7082335 5312466944 12345 18446744073709551615 1 1 0 0 0 0 0 4096 17415 0 0 0 17 1"
                + " 0 0 0 0 0\n";
    }

    @Test
    void parsesTheNameBetweenTheFirstAndLastParenthesisAndTheTicksAfterIt() {
        assertEquals(new Stat("C2 CompilerThre", 760, 12), Stat.parse(line(4611, "C2 CompilerThre", 760, 12)));
        assertEquals(new Stat("a (b) c", 3, 4), Stat.parse(line(7, "a (b) c", 3, 4)));
        assertEquals(new Stat("x) 1 2 3 (y", 5, 6), Stat.parse(line(8, "x) 1 2 3 (y", 5, 6)));
        assertEquals(new Stat("", 0, 9), Stat.parse(line(9, "", 0, 9)));
        // a line read from the kernel, as it is
        assertEquals(
                new Stat("GC Thread#0", 3, 1),
                Stat.parse("4604 (GC Thread#0) S 4581 4574 27723 0 -1 4194368 2737 306 0 0 3 1 0 0 20 0 40 0"));
    }

    @Test
    void refusesWhatIsNotAStatLine() {
        assertThrows(IllegalArgumentException.class, () -> Stat.parse(""));
        assertThrows(IllegalArgumentException.class, () -> Stat.parse("12 no name S 1 2 3"));
        assertThrows(IllegalArgumentException.class, () -> Stat.parse("12 (short) S 1 2 3"));
        assertThrows(IllegalArgumentException.class, () -> Stat.parse("12 (cut)"));
    }

    @Test
    void groupsThreadsByTheirKernelNames() {
        for (String loop : List.of(
                "multiThreadIoEv",
                "epollEventLoopG",
                "nioEventLoopGro",
                "cart-extract-1",
                "cart-http-12",
                "cart-http-overf",
                "HTTP-Dispatcher",
                "HttpClient-1-Se",
                "HttpClient-1-Wo",
                "ForkJoinPool-1-",
                "pool-2-thread-7",
                "replica-loop",
                "nginx")) {
            assertEquals(Kind.LOOPS, Kind.of(loop), loop);
        }
        for (String jit : List.of("C1 CompilerThre", "C2 CompilerThre")) {
            assertEquals(Kind.JIT, Kind.of(jit), jit);
        }
        for (String gc :
                List.of("GC Thread#0", "GC Thread#1", "G1 Main Marker", "G1 Conc#0", "G1 Refine#0", "G1 Service")) {
            assertEquals(Kind.GC, Kind.of(gc), gc);
        }
        for (String other : List.of(
                "java",
                "VM Thread",
                "VM Periodic Tas",
                "Sweeper thread",
                "Common-Cleaner",
                "cart-log-flush-",
                "cart-scheduler",
                "cart-maintenanc",
                "a (b) c",
                "")) {
            assertEquals(Kind.OTHER, Kind.of(other), other);
        }
    }

    @Test
    void splitsTheTicksBetweenTwoReadsByKind() {
        Sample before = new Sample(
                300,
                40,
                Map.of(
                        11L, new Stat("multiThreadIoEv", 100, 20),
                        12L, new Stat("C2 CompilerThre", 50, 0),
                        13L, new Stat("cart-extract-1", 10, 1), // ends before the second read: lost
                        14L, new Stat("java", 5, 5)));
        Sample after = new Sample(
                400,
                60,
                Map.of(
                        11L, new Stat("multiThreadIoEv", 170, 35),
                        12L, new Stat("C2 CompilerThre", 56, 1),
                        14L, new Stat("java", 5, 5),
                        15L, new Stat("GC Thread#1", 3, 0), // born between the reads: from zero
                        16L, new Stat("G1 Conc#0", 1, 1)));
        Split s = ThreadCpu.between(before, after);
        assertEquals(new Split(100, 20, 85, 7, 5, 0), s);
        assertEquals(120, s.total());
        assertEquals(23, s.unseen());
    }

    @Test
    void aThreadIdReusedWithFewerTicksCountsFromZero() {
        Sample before = new Sample(0, 0, Map.of(21L, new Stat("pool-1-thread-1", 500, 50)));
        Sample after = new Sample(10, 2, Map.of(21L, new Stat("pool-3-thread-1", 8, 2)));
        assertEquals(new Split(10, 2, 10, 0, 0, 0), ThreadCpu.between(before, after));
    }

    @Test
    void splitsEveryWatchedProcessAndTakesAProcessGoneAsZero() {
        Sample cart0 = new Sample(10, 5, Map.of(1L, new Stat("multiThreadIoEv", 8, 4)));
        Sample cart1 = new Sample(30, 9, Map.of(1L, new Stat("multiThreadIoEv", 26, 8)));
        Sample gen0 = new Sample(7, 7, Map.of());
        Map<String, Split> m = ThreadCpu.between(Map.of("cart", cart0, "generator", gen0), Map.of("cart", cart1));
        assertEquals(new Split(20, 4, 22, 0, 0, 0), m.get("cart"));
        assertEquals(new Split(-7, -7, 0, 0, 0, 0), m.get("generator"));
    }

    @Test
    void givesMicrosecondsPerRequestAtAHundredTicksASecond() {
        // 240 ticks = 2.4 s of CPU over 120,000 requests: 20 µs each
        assertEquals(20.0, Split.perRequest(240, 120_000), 1e-9);
        assertEquals(0.0, Split.perRequest(240, 0));
        Split s = new Split(240, 60, 250, 12, 6, 24);
        assertEquals("20.0/5.0", s.userSys(120_000));
        assertEquals("20.8/1.0/0.5/2.0", s.kinds(120_000));
        assertEquals(List.of("20.0", "5.0", "20.8", "1.0", "0.5", "2.0", "0.7"), s.cells(120_000));
        // a tick of read skew over 254,952 requests: unseen -0.04 µs, shown as 0.0
        assertEquals("0.0", new Split(10, 0, 11, 0, 0, 0).cells(254_952).get(6));
        assertEquals("-20.0", new Split(1, 0, 2, 0, 0, 0).cells(500).get(6));
        // an open-loop phase of 500 requests: a tick is 20 µs per request
        assertEquals("20.0/0.0", new Split(1, 0, 1, 0, 0, 0).userSys(500));
    }

    @Test
    void splitsTheTargetsProcessOfAPhaseAndTheReplicaForDirect() {
        Split cart = new Split(1, 1, 2, 0, 0, 0);
        Split replica = new Split(3, 0, 3, 0, 0, 0);
        Map<String, Split> cpu = Map.of("cart", cart, "replica", replica);
        assertEquals(cart, phase("cart", cpu).targetCpu());
        assertEquals(replica, phase("direct", cpu).targetCpu());
        assertEquals(Map.of("cart", 0.5, "replica", 0.75), phase("cart", cpu).cpuMsPerRequest());
    }

    private static ProxyBench.Phase phase(String target, Map<String, Split> cpu) {
        return new ProxyBench.Phase(target, 1024, false, "closed", 40, 40, 0, 1.0, new long[0], new long[0], cpu, 0.5);
    }
}
