package dev.cart.redis;

import dev.cart.core.PromptKey;
import dev.cart.core.RouteEvent;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The wire format of one stream entry: a batch of {@link RouteEvent}s from one origin, self-contained
 * (decodable without any other entry, so trimming the stream never leaves a reference dangling).
 *
 * <pre>
 * batch   := version:u8(=1) origin:str seq:varlong baseTime:varlong replicaCount:varint replicaId:str*
 *            eventCount:varint event*
 *            seq: the origin's batch number, 0, 1, 2, ... (a reader sees a gap or a duplicate)
 * event   := head:u8 timeDelta:zigzag-varlong body
 *            head bits 0-1: kind (0 learned, 1 forgotten, 2 replica removed, 3 reset); bit 2: unit (1 = tokens)
 * learned := replica:varint blockSize:varint key
 * forgot  := replica:varint blockSize:varint key keepBlocks:varint
 * removed := replica:varint
 * key     := ref:varint shared:varint newCount:varint block:i64le*newCount
 *            ref 0: no reference (shared is 0); ref k: the key starts with the first `shared` blocks of the
 *            k-th previous key in this batch (front coding: a batch's keys share system prompts and
 *            conversation histories)
 * str     := length:varint utf8
 * </pre>
 *
 * Replica ids are written once per batch and referred to by index. A block hash is 8 bytes (hashes do
 * not compress); everything else is a few bytes per event. Decoding checks every length and index
 * against the bytes present and throws {@link Malformed} for anything that does not parse exactly.
 * Stateless and thread-safe.
 */
final class RouteEventCodec {

    static final int VERSION = 1;
    /** How many previous keys of the batch the encoder compares a key with: all of a full batch. */
    static final int LOOKBACK = 256;

    private static final int LEARNED = 0;
    private static final int FORGOTTEN = 1;
    private static final int REMOVED = 2;
    private static final int RESET = 3;
    private static final int TOKENS_BIT = 4;

    private RouteEventCodec() {}

    /** A decoded batch. */
    record Batch(String origin, long seq, List<RouteEvent> events) {}

    /** A stream entry that is not a batch of this version. */
    static final class Malformed extends Exception {
        Malformed(String why) {
            super(why);
        }
    }

    /** Encodes {@code events} (all with origin {@code origin}) as the origin's batch number {@code seq}. */
    static byte[] encode(String origin, long seq, List<RouteEvent> events) {
        Out out = new Out(64 + events.size() * 32);
        out.u8(VERSION);
        out.str(origin);
        out.varlong(seq);
        long base = events.isEmpty() ? 0 : events.get(0).timeMillis();
        out.varlong(base);
        Map<String, Integer> ids = new HashMap<>();
        List<String> order = new ArrayList<>();
        for (RouteEvent e : events) {
            String id = replicaId(e);
            if (id != null && ids.putIfAbsent(id, order.size()) == null) {
                order.add(id);
            }
        }
        out.varint(order.size());
        for (String id : order) {
            out.str(id);
        }
        out.varint(events.size());
        List<long[]> keys = new ArrayList<>();
        for (RouteEvent e : events) {
            if (!e.origin().equals(origin)) {
                throw new IllegalArgumentException("a batch holds the events of one origin");
            }
            int kind;
            boolean tokens = false;
            if (e instanceof RouteEvent.Learned l) {
                kind = LEARNED;
                tokens = l.unit() == PromptKey.Unit.TOKENS;
            } else if (e instanceof RouteEvent.Forgotten f) {
                kind = FORGOTTEN;
                tokens = f.unit() == PromptKey.Unit.TOKENS;
            } else if (e instanceof RouteEvent.ReplicaRemoved) {
                kind = REMOVED;
            } else {
                kind = RESET;
            }
            out.u8(kind | (tokens ? TOKENS_BIT : 0));
            out.varlong(zigzag(e.timeMillis() - base));
            if (e instanceof RouteEvent.Learned l) {
                out.varint(ids.get(l.replicaId()));
                out.varint(l.blockSize());
                key(out, l.blocks(), keys);
            } else if (e instanceof RouteEvent.Forgotten f) {
                out.varint(ids.get(f.replicaId()));
                out.varint(f.blockSize());
                key(out, f.blocks(), keys);
                out.varint(f.keepBlocks());
            } else if (e instanceof RouteEvent.ReplicaRemoved r) {
                out.varint(ids.get(r.replicaId()));
            }
        }
        return out.bytes();
    }

    private static String replicaId(RouteEvent e) {
        if (e instanceof RouteEvent.Learned l) {
            return l.replicaId();
        }
        if (e instanceof RouteEvent.Forgotten f) {
            return f.replicaId();
        }
        if (e instanceof RouteEvent.ReplicaRemoved r) {
            return r.replicaId();
        }
        return null;
    }

    /** Writes a key front-coded against the best of the last {@link #LOOKBACK} keys, then remembers it. */
    private static void key(Out out, long[] blocks, List<long[]> keys) {
        int bestRef = 0;
        int bestShared = 0;
        for (int k = 1; k <= Math.min(LOOKBACK, keys.size()); k++) {
            long[] prev = keys.get(keys.size() - k);
            int len = Math.min(prev.length, blocks.length);
            int mm = Arrays.mismatch(prev, 0, len, blocks, 0, len);
            int shared = mm < 0 ? len : mm;
            if (shared > bestShared) {
                bestShared = shared;
                bestRef = k;
            }
        }
        out.varint(bestRef);
        out.varint(bestShared);
        out.varint(blocks.length - bestShared);
        for (int i = bestShared; i < blocks.length; i++) {
            out.i64(blocks[i]);
        }
        keys.add(blocks);
    }

    /** Decodes one batch; throws {@link Malformed} unless {@code data} is exactly one batch of this version. */
    static Batch decode(byte[] data) throws Malformed {
        In in = new In(data);
        int version = in.u8();
        if (version != VERSION) {
            throw new Malformed("version " + version + ", expected " + VERSION);
        }
        String origin = in.str();
        long seq = in.varlong();
        long base = in.varlong();
        int nIds = in.count(1);
        String[] ids = new String[nIds];
        for (int i = 0; i < nIds; i++) {
            ids[i] = in.str();
        }
        int n = in.count(2);
        List<RouteEvent> events = new ArrayList<>(n);
        List<long[]> keys = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            int head = in.u8();
            if (head > 7) {
                throw new Malformed("event head " + head);
            }
            long time = base + unzigzag(in.varlong());
            PromptKey.Unit unit = (head & TOKENS_BIT) != 0 ? PromptKey.Unit.TOKENS : PromptKey.Unit.CHARS;
            switch (head & 3) {
                case LEARNED -> {
                    String id = id(ids, in.varint());
                    int blockSize = blockSize(in.varint());
                    events.add(new RouteEvent.Learned(origin, time, id, unit, blockSize, key(in, keys)));
                }
                case FORGOTTEN -> {
                    String id = id(ids, in.varint());
                    int blockSize = blockSize(in.varint());
                    long[] blocks = key(in, keys);
                    int keep = in.varint();
                    events.add(new RouteEvent.Forgotten(origin, time, id, unit, blockSize, blocks, keep));
                }
                case REMOVED -> events.add(new RouteEvent.ReplicaRemoved(origin, time, id(ids, in.varint())));
                default -> events.add(new RouteEvent.Reset(origin, time));
            }
        }
        if (in.remaining() != 0) {
            throw new Malformed(in.remaining() + " bytes after the last event");
        }
        return new Batch(origin, seq, events);
    }

    private static String id(String[] ids, int index) throws Malformed {
        if (index >= ids.length) {
            throw new Malformed("replica index " + index + " of " + ids.length);
        }
        return ids[index];
    }

    private static int blockSize(int b) throws Malformed {
        if (b < 1) {
            throw new Malformed("block size " + b);
        }
        return b;
    }

    private static long[] key(In in, List<long[]> keys) throws Malformed {
        int ref = in.varint();
        int shared = in.varint();
        int fresh = in.count(8);
        long[] blocks;
        if (ref == 0) {
            if (shared != 0) {
                throw new Malformed("shared blocks without a reference");
            }
            blocks = new long[fresh];
        } else {
            if (ref > keys.size()) {
                throw new Malformed("reference " + ref + " of " + keys.size());
            }
            long[] prev = keys.get(keys.size() - ref);
            if (shared > prev.length) {
                throw new Malformed("shared " + shared + " of " + prev.length);
            }
            blocks = Arrays.copyOf(prev, shared + fresh);
        }
        for (int i = 0; i < fresh; i++) {
            blocks[shared + i] = in.i64();
        }
        keys.add(blocks);
        return blocks;
    }

    private static long zigzag(long v) {
        return (v << 1) ^ (v >> 63);
    }

    private static long unzigzag(long v) {
        return (v >>> 1) ^ -(v & 1);
    }

    private static final class Out {
        private final ByteArrayOutputStream buf;

        Out(int size) {
            buf = new ByteArrayOutputStream(size);
        }

        void u8(int v) {
            buf.write(v);
        }

        void varint(int v) {
            varlong(v & 0xFFFFFFFFL);
        }

        void varlong(long v) {
            while ((v & ~0x7FL) != 0) {
                buf.write((int) ((v & 0x7F) | 0x80));
                v >>>= 7;
            }
            buf.write((int) v);
        }

        void i64(long v) {
            for (int i = 0; i < 8; i++) {
                buf.write((int) (v >>> (8 * i)));
            }
        }

        void str(String s) {
            byte[] b = s.getBytes(StandardCharsets.UTF_8);
            varint(b.length);
            buf.write(b, 0, b.length);
        }

        byte[] bytes() {
            return buf.toByteArray();
        }
    }

    private static final class In {
        private final byte[] data;
        private int pos;

        In(byte[] data) {
            this.data = data;
        }

        int remaining() {
            return data.length - pos;
        }

        int u8() throws Malformed {
            if (pos >= data.length) {
                throw new Malformed("truncated");
            }
            return data[pos++] & 0xFF;
        }

        long varlong() throws Malformed {
            long v = 0;
            for (int shift = 0; shift < 64; shift += 7) {
                int b = u8();
                v |= (long) (b & 0x7F) << shift;
                if ((b & 0x80) == 0) {
                    return v;
                }
            }
            throw new Malformed("varint too long");
        }

        int varint() throws Malformed {
            long v = varlong();
            if (v < 0 || v > Integer.MAX_VALUE) {
                throw new Malformed("varint out of range: " + v);
            }
            return (int) v;
        }

        /** A count of items each at least {@code minBytes} long: no more than the bytes left can hold. */
        int count(int minBytes) throws Malformed {
            int c = varint();
            if ((long) c * minBytes > remaining()) {
                throw new Malformed("count " + c + " exceeds the " + remaining() + " bytes left");
            }
            return c;
        }

        long i64() throws Malformed {
            if (remaining() < 8) {
                throw new Malformed("truncated block");
            }
            long v = 0;
            for (int i = 0; i < 8; i++) {
                v |= (long) (data[pos++] & 0xFF) << (8 * i);
            }
            return v;
        }

        String str() throws Malformed {
            int len = count(1);
            String s = new String(data, pos, len, StandardCharsets.UTF_8);
            pos += len;
            return s;
        }
    }
}
