package dev.cart.jmh.kvevents;

import dev.cart.kvevents.KvEventsListener;
import dev.cart.kvevents.KvIndex;
import dev.cart.kvevents.KvStream;
import dev.cart.kvevents.KvSubscriber;
import dev.cart.kvevents.ReplicaMode;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.concurrent.locks.LockSupport;
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
 * <p>Run: {@code java -cp cart-jmh/target/benchmarks.jar dev.cart.jmh.kvevents.KvLag [rate] [seconds] [runs]}.
 */
public final class KvLag {

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
        int[] count = {0};
        KvIndex index = KvIndex.builder()
                .listener(new KvEventsListener() {
                    @Override
                    public void onBatchApplied(String replica, int rank, int stored, int removed, long lagNanos) {
                        if (lagNanos >= 0 && count[0] < lags.length) {
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
                int n = Math.min(count[0], lags.length);
                long[] l = Arrays.copyOf(lags, n);
                Arrays.sort(l);
                double sent = (System.nanoTime() - start) / 1e9;
                System.out.printf(
                        "rate=%d/s (achieved %.0f/s) batches=%d lag p50=%.3f ms p99=%.3f ms p99.9=%.3f ms max=%.3f ms gaps=%d%n",
                        rate,
                        (total + warm) / sent,
                        n,
                        q(l, 0.5) / 1e6,
                        q(l, 0.99) / 1e6,
                        q(l, 0.999) / 1e6,
                        l.length == 0 ? 0 : l[l.length - 1] / 1e6,
                        index.status("r").streams().get(0).gaps());
                if (sub.streams().isEmpty()) {
                    throw new AssertionError("keep the subscriber open until here");
                }
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
