package dev.cart.kvevents;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.List;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;

/** Writes event batches for tests, positional or as maps, hashes as integers or 32-byte digests. */
final class TestBatches {

    private final boolean maps;
    private final boolean bytes;
    private final List<Object[]> events = new ArrayList<>();

    private TestBatches(boolean maps, boolean bytes) {
        this.maps = maps;
        this.bytes = bytes;
    }

    static TestBatches positional() {
        return new TestBatches(false, false);
    }

    static TestBatches of(boolean maps, boolean bytes) {
        return new TestBatches(maps, bytes);
    }

    /** Blocks stored on the GPU, chained on {@code parent} (null: a root). */
    TestBatches stored(long[] hashes, Long parent, int[] tokens) {
        return stored(hashes, parent, tokens, null, null, null, null);
    }

    TestBatches stored(
            long[] hashes, Long parent, int[] tokens, String medium, String lora, String salt, String groupKind) {
        events.add(new Object[] {"BlockStored", hashes, parent, tokens, medium, lora, salt, groupKind});
        return this;
    }

    TestBatches removed(long[] hashes, String medium) {
        events.add(new Object[] {"BlockRemoved", hashes, medium});
        return this;
    }

    TestBatches cleared() {
        events.add(new Object[] {"AllBlocksCleared"});
        return this;
    }

    byte[] build(double ts) {
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            p.packArrayHeader(3);
            p.packDouble(ts);
            p.packArrayHeader(events.size());
            for (Object[] e : events) {
                write(p, e);
            }
            p.packInt(0);
            return p.toByteArray();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private void write(MessageBufferPacker p, Object[] e) throws IOException {
        String tag = (String) e[0];
        switch (tag) {
            case "BlockStored" -> {
                long[] hashes = (long[]) e[1];
                Long parent = (Long) e[2];
                int[] tokens = (int[]) e[3];
                String medium = (String) e[4];
                String lora = (String) e[5];
                String salt = (String) e[6];
                String kind = (String) e[7];
                if (maps) {
                    p.packMapHeader(9 + (kind != null ? 1 : 0));
                    p.packString("type").packString(tag);
                } else {
                    p.packArrayHeader(kind != null ? 11 : 9);
                    p.packString(tag);
                }
                field(p, "block_hashes");
                hashes(p, hashes);
                field(p, "parent_block_hash");
                if (parent == null) {
                    p.packNil();
                } else {
                    hash(p, parent);
                }
                field(p, "token_ids");
                p.packArrayHeader(tokens.length);
                for (int t : tokens) {
                    p.packInt(t);
                }
                field(p, "block_size");
                p.packInt(tokens.length / Math.max(1, hashes.length));
                field(p, "lora_id");
                p.packNil();
                field(p, "medium");
                string(p, medium);
                field(p, "lora_name");
                string(p, lora);
                field(p, "extra_keys");
                if (lora == null && salt == null) {
                    p.packNil();
                } else {
                    p.packArrayHeader(hashes.length);
                    for (int i = 0; i < hashes.length; i++) {
                        List<String> x = new ArrayList<>();
                        if (lora != null) {
                            x.add(lora);
                        }
                        if (i == 0 && parent == null && salt != null) {
                            x.add(salt);
                        }
                        if (x.isEmpty()) {
                            p.packNil();
                        } else {
                            p.packArrayHeader(x.size());
                            for (String s : x) {
                                p.packString(s);
                            }
                        }
                    }
                }
                if (kind != null) {
                    field(p, "group_idx");
                    p.packInt(kind.contains("full") ? 0 : 1);
                    field(p, "kv_cache_spec_kind");
                    p.packString(kind);
                }
            }
            case "BlockRemoved" -> {
                if (maps) {
                    p.packMapHeader(3);
                    p.packString("type").packString(tag);
                } else {
                    p.packArrayHeader(3);
                    p.packString(tag);
                }
                field(p, "block_hashes");
                hashes(p, (long[]) e[1]);
                field(p, "medium");
                string(p, (String) e[2]);
            }
            default -> {
                if (maps) {
                    p.packMapHeader(1);
                    p.packString("type").packString(tag);
                } else {
                    p.packArrayHeader(1);
                    p.packString(tag);
                }
            }
        }
    }

    private void field(MessageBufferPacker p, String name) throws IOException {
        if (maps) {
            p.packString(name);
        }
    }

    private static void string(MessageBufferPacker p, String s) throws IOException {
        if (s == null) {
            p.packNil();
        } else {
            p.packString(s);
        }
    }

    private void hashes(MessageBufferPacker p, long[] hashes) throws IOException {
        p.packArrayHeader(hashes.length);
        for (long h : hashes) {
            hash(p, h);
        }
    }

    private void hash(MessageBufferPacker p, long h) throws IOException {
        if (bytes) {
            byte[] d = new byte[32];
            for (int i = 0; i < 24; i++) {
                d[i] = (byte) (i * 7 + h);
            }
            for (int i = 0; i < 8; i++) {
                d[24 + i] = (byte) (h >>> (56 - 8 * i));
            }
            p.packBinaryHeader(32);
            p.writePayload(d);
        } else if (h < 0) {
            p.packBigInteger(new BigInteger(Long.toUnsignedString(h)));
        } else {
            p.packLong(h);
        }
    }

    /** Token ids of {@code blocks} blocks of 16 from {@code first}. */
    static int[] tokens(int first, int blocks) {
        int[] t = new int[blocks * 16];
        for (int i = 0; i < t.length; i++) {
            t[i] = first + i;
        }
        return t;
    }

    static int[] concat(int[]... parts) {
        int n = 0;
        for (int[] p : parts) {
            n += p.length;
        }
        int[] out = new int[n];
        int at = 0;
        for (int[] p : parts) {
            System.arraycopy(p, 0, out, at, p.length);
            at += p.length;
        }
        return out;
    }
}
