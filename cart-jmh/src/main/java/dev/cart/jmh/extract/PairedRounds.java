package dev.cart.jmh.extract;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.LongSupplier;

/**
 * What the paired timing programs ({@link PairedCpuTiming}, {@link PairedAnswerTiming}) measure alike, beside their
 * rounds. JDK types only: each build's operation is made in a class loader of its own and reaches here as a
 * {@link LongSupplier}, so nothing here may name a CART type.
 */
final class PairedRounds {

    /** Where the operations' results go, so that no call is dead code: written, never read. */
    @SuppressWarnings("UnusedVariable")
    private static volatile long sink;

    private PairedRounds() {}

    /**
     * Bytes each operation allocates per call on this thread, over {@code reps} calls each (HotSpot's counter);
     * zeros where the JVM has none.
     */
    static long[] allocatedPerCall(LongSupplier[] ops, int reps) {
        long[] allocated = new long[ops.length];
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        if (mx instanceof com.sun.management.ThreadMXBean sun && sun.isThreadAllocatedMemorySupported()) {
            long s = 0;
            for (int j = 0; j < ops.length; j++) {
                long a0 = sun.getCurrentThreadAllocatedBytes();
                for (int i = 0; i < reps; i++) {
                    s += ops[j].getAsLong();
                }
                allocated[j] = (sun.getCurrentThreadAllocatedBytes() - a0) / reps;
            }
            sink = s;
        }
        return allocated;
    }

    /** The machine's one-minute load average, as {@code /proc/loadavg} gives it. */
    static String load() throws IOException {
        return Files.readString(Path.of("/proc/loadavg")).split(" ")[0];
    }
}
