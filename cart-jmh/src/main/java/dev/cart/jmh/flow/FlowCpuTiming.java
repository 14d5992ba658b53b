package dev.cart.jmh.flow;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;
import java.util.Locale;
import java.util.function.LongSupplier;

/**
 * The admission queue's cost per admitted request by the thread's CPU time: rounds of {@value #PER_ROUND}
 * operations of each kind ({@link FlowSetup}), the kinds interleaved round by round in rotating order, so
 * a busy machine slows all three alike; prints per kind the minimum, median and maximum nanoseconds per
 * operation over the rounds, and per round the ratios to {@code choose} (median and range). Run:
 * {@code java -cp cart-jmh/target/benchmarks.jar dev.cart.jmh.flow.FlowCpuTiming [rounds]}.
 */
public final class FlowCpuTiming {

    private static final int PER_ROUND = 20_000;

    private FlowCpuTiming() {}

    public static void main(String[] args) {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 40;
        FlowSetup s = new FlowSetup();
        String[] names = {"choose", "atOnce", "queued"};
        LongSupplier[] ops = {s::choose, s::atOnce, s::queued};
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long sink = 0;
        for (int w = 0; w < 10; w++) {
            for (LongSupplier op : ops) {
                for (int k = 0; k < PER_ROUND; k++) {
                    sink += op.getAsLong();
                }
            }
        }
        double[][] t = new double[3][rounds];
        for (int r = 0; r < rounds; r++) {
            for (int j = 0; j < 3; j++) {
                int k = (j + r) % 3;
                long c0 = mx.getCurrentThreadCpuTime();
                for (int n = 0; n < PER_ROUND; n++) {
                    sink += ops[k].getAsLong();
                }
                t[k][r] = (mx.getCurrentThreadCpuTime() - c0) / (double) PER_ROUND;
            }
        }
        s.close();
        for (int k = 0; k < 3; k++) {
            double[] v = t[k].clone();
            Arrays.sort(v);
            System.out.printf(
                    Locale.ROOT,
                    "%-7s ns/op CPU: min %.0f median %.0f max %.0f%n",
                    names[k],
                    v[0],
                    v[v.length / 2],
                    v[v.length - 1]);
        }
        for (int k = 1; k < 3; k++) {
            double[] ratio = new double[rounds];
            for (int r = 0; r < rounds; r++) {
                ratio[r] = t[k][r] / t[0][r];
            }
            Arrays.sort(ratio);
            System.out.printf(
                    Locale.ROOT,
                    "%s / choose per round: median %.2f [%.2f-%.2f]%n",
                    names[k],
                    ratio[rounds / 2],
                    ratio[0],
                    ratio[rounds - 1]);
        }
        System.out.println("(checksum " + sink + ")");
    }
}
