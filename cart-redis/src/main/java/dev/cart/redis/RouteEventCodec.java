package dev.cart.redis;

import dev.cart.core.PromptKey;
import dev.cart.core.sync.RouteEvent;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * The wire format of one stream entry: a batch of {@link RouteEvent}s from one origin (version 2).
 *
 * <pre>
 * batch   := version:u8(=2) origin:i64le seq:varlong epoch:varlong firstKey:varlong name:str
 *            baseTime:varlong replicaCount:varint replicaId:str* eventCount:varint event*
 *            origin: a 64-bit tag of the origin id (a hash of it); name: the origin id itself in the first
 *            entry of an epoch, empty in the others
 *            seq: the origin's batch number, 0, 1, 2, ... (a reader sees a gap or a duplicate)
 * event   := head:u8 timeDelta:zigzag-varlong body
 *            head bits 0-1: kind (0 learned, 1 forgotten, 2 replica removed, 3 reset); bit 2: unit (1 = tokens)
 * learned := replica:varint blockSize:varint key
 * forgot  := replica:varint blockSize:varint key keepBlocks:varint
 * removed := replica:varint
 * key     := ref:varint shared:varint newCount:varint block:i64le*newCount
 * </pre>
 *
 * <h2>Keys: the parent plus the new blocks, across entries</h2>
 * A route's key is mostly a prefix some earlier route of the same origin already carried (a system prompt,
 * a document, a conversation's history). The writer numbers the keys it writes within an <em>epoch</em>
 * (the i-th key of an entry is number {@code firstKey + i}) and writes a key as a reference to the earlier
 * key sharing its longest prefix ({@code ref} = this key's number minus that one's; 0: none), how many
 * leading blocks it shares, and only the blocks after them. A reader keeps, per origin, the keys of the
 * current epoch it has read; a key whose reference it never read (it joined late, the stream was trimmed
 * past it, the entry was lost) cannot be rebuilt and its event is counted as unresolved, not applied. An
 * epoch ends after {@link #EPOCH_BLOCKS} blocks of keys or {@link #EPOCH_MILLIS} (and when the writer lost
 * Redis): what a reader cannot resolve is bounded by one epoch, and so is the memory either side keeps.
 * References are numbers rather than parent hashes: two bytes instead of eight, and a reader knows
 * exactly which keys it lacks. The writer finds the longest earlier prefix through an index from block
 * hash to key number and checks the candidate block by block, so a reference is right even for keys
 * whose hashes are not chained.
 *
 * <p>Replica ids are written in every entry that names them (once per entry, referred to by index): a
 * reader that missed entries still resolves every replica. Decoding checks every length and index
 * against the bytes present and throws {@link Malformed} for anything that does not parse exactly; a
 * malformed entry changes no reader state. Entries of version 1 (no cross-entry references) are skipped
 * as another version.
 *
 * <p>Concurrency: an {@link Encoder} belongs to the one publisher thread, a {@link Decoder} to the one
 * tailer thread; neither is thread-safe.
 */
final class RouteEventCodec {

    static final int VERSION = 2;
    /** An epoch ends once its keys hold this many blocks (8 bytes each, kept by the writer and each reader). */
    static final int EPOCH_BLOCKS = 262_144;
    /** An epoch ends once it is this old (by the events' times). */
    static final long EPOCH_MILLIS = 60_000;
    /** Origins whose epoch state a reader keeps; the least recently read goes first. */
    static final int ORIGINS = 64;
    /** Keys a reader may have missed in one gap and still keep those from before it. */
    private static final int MAX_HOLES = 65_536;

    private static final int LEARNED = 0;
    private static final int FORGOTTEN = 1;
    private static final int REMOVED = 2;
    private static final int RESET = 3;
    private static final int TOKENS_BIT = 4;

    private RouteEventCodec() {}

    /** A stream entry that is not a batch of this version. */
    static final class Malformed extends Exception {
        Malformed(String why) {
            super(why);
        }
    }

    /** The 64-bit tag of an origin id on the wire. */
    static long tag(String origin) {
        try {
            byte[] d = MessageDigest.getInstance("SHA-256").digest(origin.getBytes(StandardCharsets.UTF_8));
            long v = 0;
            for (int i = 0; i < 8; i++) {
                v |= (long) (d[i] & 0xFF) << (8 * i);
            }
            return v;
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is part of every JDK", e);
        }
    }

    // ------------------------------------------------------------------------------------------------
    // writing

    /** Writes one origin's batches, numbering them and its keys. One thread. */
    static final class Encoder {
        private final String origin;
        private final long tag;
        private final int epochBlocks;
        private final long epochMillis;
        private long seq;
        private long epoch = -1;
        private boolean epochEnded = true;
        private long epochStart;
        private long blocks;
        private final List<long[]> keys = new ArrayList<>();
        private final LongIntIndex index = new LongIntIndex();

        Encoder(String origin) {
            this(origin, EPOCH_BLOCKS, EPOCH_MILLIS);
        }

        Encoder(String origin, int epochBlocks, long epochMillis) {
            this.origin = origin;
            this.tag = RouteEventCodec.tag(origin);
            this.epochBlocks = epochBlocks;
            this.epochMillis = epochMillis;
        }

        /** Makes the next batch start a new epoch (no reference to anything written before it). */
        void newEpoch() {
            epochEnded = true;
        }

        /** Encodes {@code events} (all with this origin) as this origin's next batch. */
        byte[] encode(List<RouteEvent> events) {
            long base = events.isEmpty() ? 0 : events.get(0).timeMillis();
            if (epochEnded || blocks >= epochBlocks || base - epochStart >= epochMillis) {
                epoch++;
                epochEnded = false;
                epochStart = base;
                blocks = 0;
                keys.clear();
                index.clear();
            }
            Out out = new Out(64 + events.size() * 32);
            out.u8(VERSION);
            out.i64(tag);
            out.varlong(seq++);
            out.varlong(epoch);
            out.varlong(keys.size());
            out.str(keys.isEmpty() ? origin : "");
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
                    out.varint(Objects.requireNonNull(ids.get(l.replicaId())));
                    out.varint(l.blockSize());
                    key(out, l.blocks());
                } else if (e instanceof RouteEvent.Forgotten f) {
                    out.varint(Objects.requireNonNull(ids.get(f.replicaId())));
                    out.varint(f.blockSize());
                    key(out, f.blocks());
                    out.varint(f.keepBlocks());
                } else if (e instanceof RouteEvent.ReplicaRemoved r) {
                    out.varint(Objects.requireNonNull(ids.get(r.replicaId())));
                }
            }
            return out.bytes();
        }

        /** Writes a key as a reference to the earlier key of the epoch sharing its longest prefix, then numbers it. */
        private void key(Out out, long[] b) {
            int number = keys.size();
            int bestRef = 0;
            int bestShared = 0;
            for (int i = b.length - 1; i >= 0 && bestShared == 0; i--) {
                int k = index.get(b[i]);
                if (k < 0) {
                    continue;
                }
                long[] prev = keys.get(k);
                int len = Math.min(prev.length, b.length);
                int mm = Arrays.mismatch(prev, 0, len, b, 0, len);
                int shared = mm < 0 ? len : mm;
                if (shared > i) { // the candidate holds this block at this place: the prefix up to it is shared
                    bestShared = shared;
                    bestRef = number - k;
                }
            }
            out.varint(bestRef);
            out.varint(bestShared);
            out.varint(b.length - bestShared);
            for (int i = bestShared; i < b.length; i++) {
                out.i64(b[i]);
                index.putIfAbsent(b[i], number);
            }
            keys.add(b);
            blocks += b.length;
        }
    }

    private static @Nullable String replicaId(RouteEvent e) {
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

    // ------------------------------------------------------------------------------------------------
    // reading

    /** What one entry gave a reader. */
    enum Kind {
        /** Another origin's batch: {@link Decoded#events} are to be applied. */
        BATCH,
        /** This reader's own batch: nothing to apply. */
        OWN,
        /** A batch already read (written twice after a lost reply): nothing to apply. */
        DUPLICATE
    }

    /**
     * A decoded entry: {@code events} resolved and ready to apply; {@code unresolved} events whose key
     * refers to a key this reader never read (not applied); {@code lost} batches of the origin missing
     * before this one; {@code eventCount} every event the entry holds.
     */
    record Decoded(
            Kind kind, String origin, long seq, List<RouteEvent> events, int unresolved, long lost, int eventCount) {}

    /** Reads entries of every origin, keeping each one's current epoch. One thread. */
    static final class Decoder {
        private final long ownTag;
        private final Map<Long, OriginState> origins = new LinkedHashMap<>(64, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<Long, OriginState> eldest) {
                return size() > ORIGINS;
            }
        };

        /** @param ownOrigin this reader's origin id: its entries are recognised and skipped */
        Decoder(String ownOrigin) {
            this.ownTag = tag(ownOrigin);
        }

        /** Decodes one entry; throws {@link Malformed} (changing nothing) unless it is exactly one batch of this version. */
        Decoded decode(byte[] data) throws Malformed {
            In in = new In(data);
            int version = in.u8();
            if (version != VERSION) {
                throw new Malformed("version " + version + ", expected " + VERSION);
            }
            long tag = in.i64();
            long seq = in.varlong();
            long epoch = in.varlong();
            long firstKey = in.varlong();
            String name = in.str();
            long base = in.varlong();
            int nIds = in.count(1);
            String[] ids = new String[nIds];
            for (int i = 0; i < nIds; i++) {
                ids[i] = in.str();
            }
            int n = in.count(2);
            @Nullable OriginState st = origins.get(tag);
            String originName = !name.isEmpty() ? name : st != null ? st.name : "#" + Long.toHexString(tag);
            if (tag == ownTag) {
                return new Decoded(Kind.OWN, originName, seq, List.of(), 0, 0, n);
            }
            if (st != null && seq <= st.lastSeq) {
                return new Decoded(Kind.DUPLICATE, originName, seq, List.of(), 0, 0, n);
            }
            long lost = st != null ? seq - st.lastSeq - 1 : 0;
            // the origin's state in this epoch: null when it starts one (or is new)
            @Nullable OriginState current = st != null && st.epoch == epoch ? st : null;
            long keyBase = current == null ? firstKey : current.keyBase;
            int held = current == null ? 0 : current.keys.size();
            if (firstKey < keyBase + held) {
                throw new Malformed("key number " + firstKey + " already read");
            }
            List<long[]> prior = current == null ? List.of() : current.keys;
            if (firstKey - keyBase - held > MAX_HOLES) { // far behind: keep nothing from before the gap
                keyBase = firstKey;
                held = 0;
                prior = List.of();
            }
            int holes = (int) (firstKey - keyBase) - held; // keys of entries this reader never read
            List<long[]> added = new ArrayList<>();
            for (int i = 0; i < holes; i++) {
                added.add(null);
            }
            List<RouteEvent> events = new ArrayList<>(n);
            int unresolved = 0;
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
                        long @Nullable [] key = key(in, keyBase, prior, added);
                        if (key == null) {
                            unresolved++;
                        } else {
                            events.add(new RouteEvent.Learned(originName, time, id, unit, blockSize, key));
                        }
                    }
                    case FORGOTTEN -> {
                        String id = id(ids, in.varint());
                        int blockSize = blockSize(in.varint());
                        long @Nullable [] key = key(in, keyBase, prior, added);
                        int keep = in.varint();
                        if (key == null) {
                            unresolved++;
                        } else {
                            events.add(new RouteEvent.Forgotten(originName, time, id, unit, blockSize, key, keep));
                        }
                    }
                    case REMOVED -> events.add(new RouteEvent.ReplicaRemoved(originName, time, id(ids, in.varint())));
                    default -> events.add(new RouteEvent.Reset(originName, time));
                }
            }
            if (in.remaining() != 0) {
                throw new Malformed(in.remaining() + " bytes after the last event");
            }
            // the entry parsed: only now does the origin's state change
            if (current == null) {
                current = new OriginState(epoch, firstKey, st != null ? st.name : originName);
                origins.put(tag, current);
            } else if (prior.isEmpty() && keyBase != current.keyBase) {
                current.keys.clear();
                current.blocks = 0;
                current.keyBase = keyBase;
            }
            if (!name.isEmpty()) {
                current.name = name;
            }
            current.lastSeq = seq;
            for (long[] k : added) {
                current.keys.add(k);
                current.blocks += k == null ? 0 : k.length;
            }
            if (current.blocks > 4L * EPOCH_BLOCKS) { // a writer with other limits: forget rather than grow
                current.keyBase += current.keys.size();
                current.keys.clear();
                current.blocks = 0;
            }
            return new Decoded(Kind.BATCH, originName, seq, events, unresolved, lost, n);
        }
    }

    /** What a reader keeps of one origin: its last batch number and the keys of its current epoch. */
    private static final class OriginState {
        final long epoch;
        long keyBase;
        String name;
        long lastSeq = -1;
        long blocks;
        final List<long[]> keys = new ArrayList<>();

        OriginState(long epoch, long keyBase, String name) {
            this.epoch = epoch;
            this.keyBase = keyBase;
            this.name = name;
        }
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

    /**
     * Reads a key; {@code prior} are the epoch's keys read before this entry (nulls for those never read),
     * {@code added} this entry's (after any holes). Returns null, still numbering it, when the key refers
     * to a key this reader does not have.
     */
    private static long @Nullable [] key(In in, long keyBase, List<long[]> prior, List<long[]> added) throws Malformed {
        int ref = in.varint();
        int shared = in.varint();
        int fresh = in.count(8);
        long number = keyBase + prior.size() + added.size();
        long @Nullable [] blocks;
        if (ref == 0) {
            if (shared != 0) {
                throw new Malformed("shared blocks without a reference");
            }
            blocks = new long[fresh];
        } else {
            if (ref > number) {
                throw new Malformed("reference " + ref + " of " + number);
            }
            long at = number - ref - keyBase; // where the referred key is among those this reader holds
            long @Nullable [] prev =
                    at < 0 ? null : at < prior.size() ? prior.get((int) at) : added.get((int) at - prior.size());
            if (prev == null) {
                blocks = null;
            } else {
                if (shared > prev.length) {
                    throw new Malformed("shared " + shared + " of " + prev.length);
                }
                blocks = Arrays.copyOf(prev, shared + fresh);
            }
        }
        for (int i = 0; i < fresh; i++) {
            long b = in.i64();
            if (blocks != null) { // still read when the key is missing, to reach the next one
                blocks[shared + i] = b;
            }
        }
        added.add(blocks);
        return blocks;
    }

    private static long zigzag(long v) {
        return (v << 1) ^ (v >> 63);
    }

    private static long unzigzag(long v) {
        return (v >>> 1) ^ -(v & 1);
    }

    /** An open-addressing map from a block hash to the number of the first key that carried it. */
    static final class LongIntIndex {
        private long[] keys = new long[1024];
        private int[] values = new int[1024];
        private int size;

        void clear() {
            if (keys.length > 1024) {
                keys = new long[1024];
                values = new int[1024];
            } else {
                Arrays.fill(values, 0);
            }
            size = 0;
        }

        /** The value of {@code key}, or -1. */
        int get(long key) {
            int mask = keys.length - 1;
            for (int i = slot(key) & mask; ; i = (i + 1) & mask) {
                if (values[i] == 0) {
                    return -1;
                }
                if (keys[i] == key) {
                    return values[i] - 1;
                }
            }
        }

        void putIfAbsent(long key, int value) {
            if ((size + 1) * 2 > keys.length) {
                grow();
            }
            int mask = keys.length - 1;
            for (int i = slot(key) & mask; ; i = (i + 1) & mask) {
                if (values[i] == 0) {
                    keys[i] = key;
                    values[i] = value + 1; // 0 marks an empty slot
                    size++;
                    return;
                }
                if (keys[i] == key) {
                    return;
                }
            }
        }

        private void grow() {
            long[] k = keys;
            int[] v = values;
            keys = new long[k.length * 2];
            values = new int[k.length * 2];
            size = 0;
            for (int i = 0; i < k.length; i++) {
                if (v[i] != 0) {
                    putIfAbsent(k[i], v[i] - 1);
                }
            }
        }

        private static int slot(long key) {
            long h = key * 0x9E3779B97F4A7C15L;
            return (int) (h ^ (h >>> 32));
        }
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
                throw new Malformed("truncated");
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
