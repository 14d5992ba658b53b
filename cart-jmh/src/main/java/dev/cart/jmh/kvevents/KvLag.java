package dev.cart.jmh.kvevents;

import dev.cart.kvevents.KvEventsListener;
import dev.cart.kvevents.KvIndex;
import dev.cart.kvevents.KvStream;
import dev.cart.kvevents.KvSubscriber;
import dev.cart.kvevents.ReplicaMode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.locks.LockSupport;
import java.util.regex.Pattern;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/**
 * Publish-to-applied lag over a real ZMQ socket on loopback: a publisher sends {@code rate} event batches a
 * second (one event each: a request's 4 blocks stored, or an earlier request's 4 blocks removed), each stamped
 * with the wall clock as it is sent, like vLLM's; the subscriber's I/O thread receives, decodes and applies
 * them; the lag of each batch is the wall clock when it was applied minus its stamp. After a warm-up, the lags
 * of {@code seconds} seconds are kept and their quantiles printed. Target: p99 at most 5 ms at 10,000
 * events/s. Both ends share this JVM and the machine's two cores with whatever else runs.
 *
 * <p>Each run also names its stalls: a stretch of batches from one whose lag reaches 20 ms to one back under
 * 5 ms is a stall, counted when its worst lag is at least 50 ms. On Linux a daemon thread reads each vCPU's steal
 * time from {@code /proc/stat} every 5 ms (USER_HZ ticks of 10 ms), time the hypervisor kept that vCPU from
 * running; a stall is put down to the hypervisor when a vCPU was stolen for at least 50 ms at once during it (the
 * increment shows when the vCPU runs again, as the stall ends). A thread of the path (publisher, either ZMQ I/O
 * thread, the subscriber) caught on such a vCPU holds every batch behind it; no code in this JVM shortens that, so
 * the line printed says how many stalls the host explains, and the figures keep them. The steal printed is each
 * vCPU's over the whole sending, warm-up included.
 *
 * <p>Run: {@code java -cp cart-jmh/target/benchmarks.jar dev.cart.jmh.kvevents.KvLag [rate] [seconds] [runs]}.
 */
public final class KvLag {

    /** A stall's worst lag counted. */
    private static final long STALL_NANOS = 50_000_000L;
    /** A steal increment (USER_HZ ticks of 10 ms) that explains a stall: a vCPU kept from running 50 ms at once. */
    private static final int STOLEN_TICKS = 5;

    private KvLag() {}

    public static void main(String[] args) throws Exception {
        int rate = args.length > 0 ? Integer.parseInt(args[0]) : 10_000;
        int seconds = args.length > 1 ? Integer.parseInt(args[1]) : 10;
        int runs = args.length > 2 ? Integer.parseInt(args[2]) : 3;
        for (int r = 0; r < runs; r++) {
            run(rate, seconds);
        }
    }

    private static void run(int rate, int seconds) throws Exception {
        int total = rate * seconds;
        int warm = rate * 2;
        long[] lags = new long[total + warm + 16];
        long[] appliedAt = new long[lags.length];
        int[] count = {0};
        KvIndex index = KvIndex.builder()
                .listener(new KvEventsListener() {
                    @Override
                    public void onBatchApplied(String replica, int rank, int stored, int removed, long lagNanos) {
                        if (lagNanos >= 0 && count[0] < lags.length) {
                            appliedAt[count[0]] = System.nanoTime();
                            lags[count[0]++] = lagNanos;
                        }
                    }
                })
                .build();
        try (ZContext ctx = new ZContext(1)) {
            ZMQ.Socket pub = ctx.createSocket(SocketType.PUB);
            pub.setLinger(0);
            pub.setSndHWM(1_000_000);
            int port = pub.bindToRandomPort("tcp://127.0.0.1");
            try (KvSubscriber sub = KvSubscriber.builder(index).stream(
                            KvStream.of("r", "tcp://127.0.0.1:" + port, null, "m"))
                    .pollInterval(Duration.ofMillis(100))
                    .start()) {
                SplittableRandom rnd = new SplittableRandom(3);
                long[][] hashes = new long[64][];
                long h = 1;
                for (int i = 0; i < 64; i++) {
                    hashes[i] = new long[4];
                    for (int b = 0; b < 4; b++) {
                        hashes[i][b] = h++ * 0x9E3779B97F4A7C15L;
                    }
                }
                int[][] tokens = new int[64][];
                for (int i = 0; i < 64; i++) {
                    tokens[i] = Batches.tokens(rnd, 4);
                }
                // wait for the subscription (a late joiner loses the first batches; the stream starts on the first)
                long seq = 0;
                while (index.mode("r") != ReplicaMode.PRECISE) {
                    send(pub, seq++, Batches.removed(now(), new long[] {0}));
                    Thread.sleep(10);
                }
                count[0] = 0;
                long interval = 1_000_000_000L / rate;
                StealWatch steal = StealWatch.start();
                long start = System.nanoTime();
                for (int i = 0; i < total + warm; i++) {
                    long due = start + i * interval;
                    long wait;
                    while ((wait = due - System.nanoTime()) > 0) {
                        if (wait > 50_000) {
                            LockSupport.parkNanos(wait - 20_000);
                        }
                    }
                    int k = i & 63;
                    byte[] payload = (i & 1) == 0
                            ? Batches.stored(now(), hashes[k], null, tokens[k])
                            : Batches.removed(now(), hashes[(k + 31) & 63]);
                    send(pub, seq++, payload);
                    if (i == warm) {
                        count[0] = 0; // the warm-up's lags are not kept (racy by a few batches, harmless)
                    }
                }
                long deadline = System.nanoTime() + 5_000_000_000L;
                while (index.status("r").streams().get(0).nextSeq() < seq && System.nanoTime() < deadline) {
                    Thread.sleep(5);
                }
                steal.stop();
                int n = Math.min(count[0], lags.length);
                int stalls = 0;
                int stolen = 0;
                long worst = 0;
                long worstAt = 0;
                for (int k = 0; k <= n; k++) {
                    long lag = k < n ? lags[k] : 0;
                    if (lag >= 20_000_000L && lag > worst) {
                        worst = lag;
                        worstAt = appliedAt[k];
                    } else if (lag < 5_000_000L && worst > 0) {
                        if (worst >= STALL_NANOS) {
                            stalls++;
                            if (steal.stolenDuring(worstAt - worst, worstAt + 25_000_000L)) {
                                stolen++;
                            }
                        }
                        worst = 0;
                    }
                }
                long[] l = Arrays.copyOf(lags, n);
                Arrays.sort(l);
                double sent = (System.nanoTime() - start) / 1e9;
                System.out.printf(
                        "rate=%d/s (achieved %.0f/s) batches=%d lag p50=%.3f ms p99=%.3f ms p99.9=%.3f ms max=%.3f ms gaps=%d"
                                + " stalls>=50ms=%d (with a vCPU stolen >=50 ms meanwhile: %d) vCPU steal=%s%n",
                        rate,
                        (total + warm) / sent,
                        n,
                        q(l, 0.5) / 1e6,
                        q(l, 0.99) / 1e6,
                        q(l, 0.999) / 1e6,
                        l.length == 0 ? 0 : l[l.length - 1] / 1e6,
                        index.status("r").streams().get(0).gaps(),
                        stalls,
                        stolen,
                        steal.summary());
                if (sub.streams().isEmpty()) {
                    throw new AssertionError("keep the subscriber open until here");
                }
            }
        }
    }

    /**
     * Each vCPU's steal time, sampled from {@code /proc/stat} every 5 ms by a daemon thread: its increments (when
     * seen, how many ticks) and the totals. Without a readable {@code /proc/stat} it records nothing. The
     * increments are read after {@link #stop} (which joins the thread).
     */
    private static final class StealWatch {
        private static final Path STAT = Path.of("/proc/stat");
        private static final Pattern SPACES = Pattern.compile("\\s+");

        private final List<long[]> increments = new ArrayList<>(); // {nanoTime seen, ticks, cpu}
        private final long[] first;
        private long[] last;
        private final Thread thread; // null without /proc/stat
        private volatile boolean stop;

        private StealWatch() {
            this.first = read();
            this.last = first;
            if (first == null) {
                thread = null;
                return;
            }
            thread = new Thread(this::sample, "steal-watch");
            thread.setDaemon(true);
            thread.start();
        }

        static StealWatch start() {
            return new StealWatch();
        }

        private void sample() {
            while (!stop) {
                LockSupport.parkNanos(5_000_000L);
                long[] now = read();
                long[] prev = last;
                if (now == null || prev == null || now.length != prev.length) {
                    continue;
                }
                long t = System.nanoTime();
                for (int c = 0; c < now.length; c++) {
                    if (now[c] > prev[c]) {
                        increments.add(new long[] {t, now[c] - prev[c], c});
                    }
                }
                last = now;
            }
        }

        /** Each vCPU's steal in ticks, or null if {@code /proc/stat} cannot be read. */
        private static long[] read() {
            try {
                List<Long> steal = new ArrayList<>();
                for (String line : Files.readAllLines(STAT)) {
                    if (line.startsWith("cpu") && line.length() > 3 && Character.isDigit(line.charAt(3))) {
                        String[] f = SPACES.split(line.trim());
                        steal.add(f.length > 8 ? Long.parseLong(f[8]) : 0L);
                    }
                }
                long[] out = new long[steal.size()];
                for (int i = 0; i < out.length; i++) {
                    out[i] = steal.get(i);
                }
                return out.length == 0 ? null : out;
            } catch (IOException | RuntimeException e) {
                return null;
            }
        }

        /** Whether some vCPU was stolen for {@link #STOLEN_TICKS} or more at once, seen in [from, to]. */
        boolean stolenDuring(long from, long to) {
            for (long[] inc : increments) {
                if (inc[1] >= STOLEN_TICKS && inc[0] >= from && inc[0] <= to) {
                    return true;
                }
            }
            return false;
        }

        /** Each vCPU's steal over the run in ms (ticks of 10 ms), or "n/a". */
        String summary() {
            long[] a = first;
            long[] b = last;
            if (a == null || b == null) {
                return "n/a";
            }
            StringBuilder sb = new StringBuilder("[");
            for (int c = 0; c < b.length; c++) {
                sb.append(c == 0 ? "" : ", ").append((b[c] - a[c]) * 10).append(" ms");
            }
            return sb.append(']').toString();
        }

        /** Stops the sampling thread and waits for it. */
        void stop() throws InterruptedException {
            stop = true;
            if (thread != null) {
                thread.join();
            }
        }
    }

    private static double q(long[] sorted, double q) {
        if (sorted.length == 0) {
            return Double.NaN;
        }
        return sorted[Math.min(sorted.length - 1, (int) Math.ceil(q * sorted.length) - 1)];
    }

    private static double now() {
        Instant t = Instant.now();
        return t.getEpochSecond() + t.getNano() / 1e9;
    }

    private static void send(ZMQ.Socket pub, long seq, byte[] payload) {
        byte[] s = new byte[8];
        for (int i = 7, v = 0; i >= 0; i--, v++) {
            s[i] = (byte) (seq >>> (8 * v));
        }
        pub.sendMore("");
        pub.sendMore(s);
        pub.send(payload);
    }
}
