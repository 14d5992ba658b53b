package dev.cart.bench;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * A watched process's CPU time around a measured phase, split by the kind of thread that spent it (Linux,
 * from {@code /proc}).
 *
 * <p>How: at each of a phase's two moments, {@link #read} takes the process's own
 * {@code /proc/<pid>/stat} (user and system ticks of every thread it ever had, dead ones included: the
 * process's total, the figure the benchmark always reported) and then {@code /proc/<pid>/task/<tid>/stat}
 * of each thread alive at that moment; for a positive pid the same for every descendant process (nginx's
 * workers), for a negative one the process {@code -pid} alone (the load generator, whose children are the
 * other processes). {@link #between} takes the difference: the process's user and system ticks, and each
 * thread's ticks at the second read minus those at the first, summed by {@link Kind}. A thread born between
 * the two reads counts from zero (all its ticks fall in the phase); one that ended between them is lost
 * (its ticks stay in the process's total but in no kind: {@link Split#unseen}). Unseen also takes the
 * kernel's rounding: it gives each thread's user and system time in whole ticks, rounded down, but the
 * process's as the rounded sum of its threads' exact times, so each thread can lose up to a tick of each
 * per phase, and one started just before the phase loses half a tick on average (the load generator's 64
 * connection threads: 2–5 µs per request at 11,000–23,000 requests per second); and the odd tick that
 * lands between reading a process's stat and its threads' (unseen then goes below zero). A thread's name is
 * the kernel's, cut at 15 bytes ({@code C2 CompilerThre}, {@code multiThreadIoEv}), so kinds go by name
 * prefix.
 *
 * <p>Why: one figure per process said how much CPU a target needs per request, not where; the split says
 * whether a difference between two targets is their request handling, the JIT, the GC or something else.
 *
 * <p>Ticks are the kernel's clock ticks, 100 per second (USER_HZ on Linux); a tick is 10 ms, so in a phase
 * of {@code n} requests the resolution is {@code 10,000 / n} µs per request. Reading a process that has gone
 * gives zeros. Everything here is called by the one thread that measures a phase; {@link Sample} and
 * {@link Split} are immutable.
 */
final class ThreadCpu {

    /** Microseconds per clock tick (USER_HZ = 100). */
    static final double TICK_MICROS = 10_000;

    private ThreadCpu() {}

    /** The kinds of thread a process's CPU is split into. */
    enum Kind {
        /**
         * Event loops and request handling threads: Netty's event loops, CART's body preparation
         * ({@code cart-extract-*}) and the JDK front's handler pool ({@code cart-http-*}), the JDK
         * {@code HttpServer}'s dispatcher and {@code HttpClient}'s selector and workers (the JDK front's
         * and {@code ref-jdk}'s upstream side; on the Netty front they only carry health probes), carriers of
         * virtual threads, the {@code Executors} default pools' threads ({@code pool-*}: the load generator's
         * connections, {@code ref-jdk}'s and {@code ref-socket}'s handlers on Java 17), the fake replica's
         * loop, and nginx's processes (one thread each; the master's little CPU counts here too).
         */
        LOOPS,
        /** The JIT compilers: {@code C1 CompilerThread*}, {@code C2 CompilerThread*}. */
        JIT,
        /** The garbage collector: {@code GC Thread*}, {@code G1 *}. */
        GC,
        /**
         * Everything else: the JVM's own threads ({@code VM Thread}, {@code VM Periodic Task}, ...), a
         * JVM's main thread ({@code java}; the open loop's pacing in the load generator), CART's background
         * threads (log flush, scheduler, maintenance).
         */
        OTHER;

        private static final String[] LOOP_PREFIXES = {
            "multiThreadIo", // Netty 4.2's MultiThreadIoEventLoopGroup, the default thread factory's names
            "epollEventLoop",
            "nioEventLoop",
            "cart-extract-",
            "cart-http-",
            "HTTP-Dispatcher",
            "HttpClient-",
            "ForkJoinPool-",
            "pool-",
            FakeReplica.THREAD,
            "nginx"
        };

        static Kind of(String threadName) {
            if (threadName.startsWith("C1 Compiler") || threadName.startsWith("C2 Compiler")) {
                return JIT;
            }
            if (threadName.startsWith("GC Thread") || threadName.startsWith("G1 ")) {
                return GC;
            }
            for (String p : LOOP_PREFIXES) {
                if (threadName.startsWith(p)) {
                    return LOOPS;
                }
            }
            return OTHER;
        }
    }

    /** One line of {@code /proc/<pid>/stat} or {@code /proc/<pid>/task/<tid>/stat}: name, user and system ticks. */
    record Stat(String name, long user, long system) {

        /**
         * Parses a stat line. The name is whatever lies between the first {@code (} and the last {@code )}
         * (a name may hold spaces and parentheses); user and system time are the 14th and 15th fields, the
         * 12th and 13th after the name.
         */
        static Stat parse(String line) {
            int open = line.indexOf('(');
            int close = line.lastIndexOf(')');
            if (open < 0 || close < open || close + 2 > line.length()) {
                throw new IllegalArgumentException("not a stat line: " + line);
            }
            String[] f = line.substring(close + 2).trim().split(" ");
            if (f.length < 13) {
                throw new IllegalArgumentException("not a stat line: " + line);
            }
            return new Stat(line.substring(open + 1, close), Long.parseLong(f[11]), Long.parseLong(f[12]));
        }
    }

    /**
     * What one read saw: the process's user and system ticks (with its descendants' for a positive pid) and
     * the threads alive then, by thread id.
     */
    record Sample(long user, long system, Map<Long, Stat> threads) {
        static final Sample NONE = new Sample(0, 0, Map.of());

        long total() {
            return user + system;
        }
    }

    /** A process's CPU between two reads, in ticks. */
    record Split(long user, long system, long loops, long jit, long gc, long other) {

        long total() {
            return user + system;
        }

        /**
         * The total less the kinds: the ticks of threads that ended between the reads, the kernel's rounding
         * of each thread's time, and read skew.
         */
        long unseen() {
            return total() - loops - jit - gc - other;
        }

        /** {@code ticks} in microseconds per request; 0 with no request. */
        static double perRequest(long ticks, int requests) {
            return requests <= 0 ? 0 : ticks * TICK_MICROS / requests;
        }

        /** {@code user/sys} in µs per request, one decimal each: a table cell or the console's. */
        String userSys(int requests) {
            return cell(user, requests) + "/" + cell(system, requests);
        }

        /** {@code loops/jit/gc/other} in µs per request. */
        String kinds(int requests) {
            return String.join(
                    "/", cell(loops, requests), cell(jit, requests), cell(gc, requests), cell(other, requests));
        }

        /** user, sys, loops, jit, gc, other and unseen in µs per request: a row of {@code results.md}'s split table. */
        List<String> cells(int requests) {
            List<String> cells = new ArrayList<>();
            for (long ticks : new long[] {user, system, loops, jit, gc, other, unseen()}) {
                cells.add(cell(ticks, requests));
            }
            return cells;
        }

        private static String cell(long ticks, int requests) {
            double v = perRequest(ticks, requests);
            return String.format(Locale.ROOT, "%.1f", Math.abs(v) < 0.05 ? 0.0 : v); // never "-0.0"
        }
    }

    /** The split between two reads of one process. */
    static Split between(Sample before, Sample after) {
        long[] kinds = new long[Kind.values().length];
        after.threads().forEach((tid, now) -> {
            Stat then = before.threads().get(tid);
            long user = now.user();
            long system = now.system();
            if (then != null && then.user() <= user && then.system() <= system) {
                user -= then.user();
                system -= then.system();
            } // else born between the reads (or its id was reused): counts from zero
            kinds[Kind.of(now.name()).ordinal()] += user + system;
        });
        return new Split(
                after.user() - before.user(),
                after.system() - before.system(),
                kinds[Kind.LOOPS.ordinal()],
                kinds[Kind.JIT.ordinal()],
                kinds[Kind.GC.ordinal()],
                kinds[Kind.OTHER.ordinal()]);
    }

    /**
     * The user and system ticks, in that order, that the threads whose name {@code names} accepts spent
     * between two reads of one process (a thread born between the reads counts from zero, as in
     * {@link #between(Sample, Sample)}).
     */
    static long[] userSystem(Sample before, Sample after, java.util.function.Predicate<String> names) {
        long[] us = new long[2];
        after.threads().forEach((tid, now) -> {
            if (!names.test(now.name())) {
                return;
            }
            Stat then = before.threads().get(tid);
            long user = now.user();
            long system = now.system();
            if (then != null && then.user() <= user && then.system() <= system) {
                user -= then.user();
                system -= then.system();
            }
            us[0] += user;
            us[1] += system;
        });
        return us;
    }

    /** Reads every watched process, by the names the benchmark gives them. */
    static Map<String, Sample> read(Map<String, Long> pids) {
        Map<String, Sample> m = new LinkedHashMap<>();
        pids.forEach((name, pid) -> m.put(name, read(pid)));
        return m;
    }

    /** The splits between two reads of the same processes. */
    static Map<String, Split> between(Map<String, Sample> before, Map<String, Sample> after) {
        Map<String, Split> m = new LinkedHashMap<>();
        before.forEach((name, b) -> m.put(name, between(b, after.getOrDefault(name, Sample.NONE))));
        return m;
    }

    /**
     * Reads process {@code pid} and its descendants, or process {@code -pid} alone when {@code pid} is
     * negative; {@link Sample#NONE} when it has gone.
     */
    static Sample read(long pid) {
        List<Long> procs = new ArrayList<>();
        procs.add(Math.abs(pid));
        if (pid > 0) {
            ProcessHandle.of(pid).ifPresent(h -> h.descendants().forEach(d -> procs.add(d.pid())));
        }
        long user = 0;
        long system = 0;
        Map<Long, Stat> threads = new HashMap<>();
        for (long p : procs) {
            Path dir = Path.of("/proc", Long.toString(p));
            Stat s = stat(dir.resolve("stat"));
            if (s == null) {
                continue;
            }
            user += s.user();
            system += s.system();
            try (DirectoryStream<Path> tasks = Files.newDirectoryStream(dir.resolve("task"))) {
                for (Path t : tasks) {
                    Stat ts = stat(t.resolve("stat"));
                    if (ts != null) {
                        threads.put(Long.parseLong(t.getFileName().toString()), ts);
                    }
                }
            } catch (IOException | RuntimeException gone) {
                // the process ended after its stat was read: its threads stay unseen
            }
        }
        return new Sample(user, system, threads);
    }

    private static Stat stat(Path file) {
        try {
            return Stat.parse(Files.readString(file));
        } catch (IOException | RuntimeException gone) {
            return null; // the thread or process ended
        }
    }
}
