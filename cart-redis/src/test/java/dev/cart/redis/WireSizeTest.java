package dev.cart.redis;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.core.PromptKey;
import dev.cart.core.sync.RouteEvent;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * Bytes on the wire per learned block, over a generated workload: the XADD commands a publisher sends
 * (RESP framing, stream name and {@code MAXLEN ~} included), divided by the blocks the routes taught
 * (block prefixes a replica did not hold before, as the sending instance saw it). Also per route block
 * (every block of every published route). The workload: 64 character blocks, 4 replicas, interleaved
 * multi-turn chats on 8 shared system prompts (24 blocks; turns of 3 to 12 blocks) and RAG requests
 * (system prompt, one of 200 documents of 16 to 48 blocks drawn Zipf-like, a 2-block question). Every
 * request publishes its whole key, as the router does. Batches are consecutive events of the stream of
 * requests, at the sizes the publisher makes under low load (1), moderate (16) and high (256).
 *
 * <p>Run: {@code mvn -B -ntp -pl cart-redis -am -Dtest=WireSizeTest -Dsurefire.failIfNoSpecifiedTests=false verify};
 * the figures are printed (target/surefire-reports/dev.cart.redis.WireSizeTest-output.txt).
 */
class WireSizeTest {

    private static final String STREAM = "cart:routes";
    private static final String ORIGIN = "gw-1.example.internal:12345#1a2b3c4d";

    record Figures(double perLearnedBlock, double perRouteBlock, double perEvent) {}

    /** The request stream of one seed: each request's key (block hashes) and the replica it went to. */
    static List<RouteEvent.Learned> workload(long seed, int requests) {
        SplittableRandom rnd = new SplittableRandom(seed);
        long[][] systems = new long[8][];
        for (int i = 0; i < systems.length; i++) {
            systems[i] = rnd.longs(24).toArray();
        }
        long[][] docs = new long[200][];
        for (int i = 0; i < docs.length; i++) {
            docs[i] = rnd.longs(rnd.nextInt(16, 49)).toArray();
        }
        List<long[]> chats = new ArrayList<>();
        List<String> chatReplica = new ArrayList<>();
        List<RouteEvent.Learned> out = new ArrayList<>();
        long t = 1_780_000_000_000L;
        for (int r = 0; r < requests; r++) {
            t += rnd.nextInt(3);
            long[] key;
            String replica;
            int kind = rnd.nextInt(10);
            if (kind < 6 && !chats.isEmpty() && rnd.nextInt(4) > 0) { // next turn of an open chat
                int c = rnd.nextInt(chats.size());
                long[] prev = chats.get(c);
                key = concat(prev, rnd.longs(rnd.nextInt(3, 13)).toArray());
                chats.set(c, key);
                replica = chatReplica.get(c);
                if (key.length > 200) { // conversation over
                    chats.remove(c);
                    chatReplica.remove(c);
                }
            } else if (kind < 6) { // a new chat
                key = concat(
                        systems[rnd.nextInt(systems.length)],
                        rnd.longs(rnd.nextInt(3, 13)).toArray());
                replica = "http://vllm-" + rnd.nextInt(4) + ".pool.svc:8000";
                chats.add(key);
                chatReplica.add(replica);
            } else { // RAG: system prompt, a document (Zipf-like: low indexes far more often), a question
                int d = (int) Math.min(docs.length - 1, Math.floor(Math.pow(docs.length, rnd.nextDouble())) - 1);
                key = concat(concat(systems[0], docs[d]), rnd.longs(2).toArray());
                replica = "http://vllm-" + (d % 4) + ".pool.svc:8000";
            }
            out.add(new RouteEvent.Learned(ORIGIN, t, replica, PromptKey.Unit.CHARS, 64, key));
        }
        return out;
    }

    private static long[] concat(long[] a, long[] b) {
        long[] c = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, c, a.length, b.length);
        return c;
    }

    static long xaddBytes(int payload) {
        return RouteStreamMeter.xaddBytes(STREAM, 100_000, payload);
    }

    static Figures measure(List<RouteEvent.Learned> events, int batch) {
        Map<String, Set<Long>> held = new HashMap<>();
        long learned = 0;
        long routeBlocks = 0;
        for (RouteEvent.Learned e : events) {
            Set<Long> h = held.computeIfAbsent(e.replicaId(), x -> new HashSet<>());
            for (long b : e.blocks()) {
                if (h.add(b)) {
                    learned++; // chained hashes: one block hash is one prefix
                }
            }
            routeBlocks += e.blocks().length;
        }
        long wire = 0;
        RouteEventCodec.Encoder enc = new RouteEventCodec.Encoder(ORIGIN);
        for (int i = 0; i < events.size(); i += batch) {
            List<RouteEvent> b = new ArrayList<>(events.subList(i, Math.min(events.size(), i + batch)));
            wire += xaddBytes(enc.encode(b).length);
        }
        return new Figures((double) wire / learned, (double) wire / routeBlocks, (double) wire / events.size());
    }

    @Test
    void bytesPerLearnedBlock() {
        System.out.println("batch  bytes/learned block  bytes/route block  bytes/event   (seeds 1-5, min-max)");
        for (int batch : new int[] {1, 16, 256}) {
            double[] lo = {Double.MAX_VALUE, Double.MAX_VALUE, Double.MAX_VALUE};
            double[] hi = {0, 0, 0};
            for (long seed = 1; seed <= 5; seed++) {
                Figures f = measure(workload(seed, 20_000), batch);
                double[] v = {f.perLearnedBlock(), f.perRouteBlock(), f.perEvent()};
                for (int k = 0; k < 3; k++) {
                    lo[k] = Math.min(lo[k], v[k]);
                    hi[k] = Math.max(hi[k], v[k]);
                }
                assertTrue(f.perLearnedBlock() <= 48, "within the 48-byte target at every batch size: " + f);
            }
            System.out.printf(
                    "%5d  %8.1f-%-8.1f       %6.2f-%-6.2f      %7.1f-%-7.1f%n",
                    batch, lo[0], hi[0], lo[1], hi[1], lo[2], hi[2]);
        }
    }
}
