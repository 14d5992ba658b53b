package dev.cart.sim;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.List;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;

/**
 * Writes KV-cache event batches as vLLM publishes them ({@code vllm/distributed/kv_events.py}): an
 * {@code EventBatch} {@code [ts, events, data_parallel_rank]}, each event either positional
 * ({@code ["BlockStored", block_hashes, parent_block_hash, token_ids, block_size, lora_id, medium, lora_name,
 * extra_keys]}, trailing defaults left out) or, as newer vLLM does, a map with its {@code type}. Block hashes
 * as unsigned 64-bit integers (values from 2^63 as msgpack uint64) or as 32-byte digests whose last 8 bytes,
 * big-endian, are the integer. Written with msgpack-core; independent of the subscriber's decoder, which
 * only reads.
 *
 * <p>One batch at a time: add events, then {@link #finish}. Not thread-safe.
 */
final class KvEventEncoder {

    /** How events are written. */
    record Format(boolean maps, boolean byteHashes) {
        static final Format POSITIONAL_INT = new Format(false, false);
    }

    private final Format format;
    private final int rank;
    private final List<byte[]> events = new ArrayList<>();

    KvEventEncoder(Format format, int rank) {
        this.format = format;
        this.rank = rank;
    }

    boolean isEmpty() {
        return events.isEmpty();
    }

    /**
     * {@code BlockStored}: {@code hashes} chained on {@code parent} (null for a chain's first block), with their
     * {@code tokens} (all the blocks'), in tier {@code medium}; an adapter and the salt of the chain's first block
     * go into {@code lora_name} and the per-block {@code extra_keys}.
     */
    void stored(long[] hashes, Long parent, int[] tokens, int blockSize, String medium, String lora, String salt) {
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            boolean extras = lora != null || (salt != null && parent == null);
            int fields = extras ? 8 : lora != null ? 7 : 6; // trailing defaults left out, positional
            if (format.maps()) {
                p.packMapHeader(1 + 8);
                p.packString("type").packString("BlockStored");
            } else {
                p.packArrayHeader(1 + fields);
                p.packString("BlockStored");
            }
            name(p, "block_hashes");
            p.packArrayHeader(hashes.length);
            for (long h : hashes) {
                hash(p, h);
            }
            name(p, "parent_block_hash");
            if (parent == null) {
                p.packNil();
            } else {
                hash(p, parent);
            }
            name(p, "token_ids");
            p.packArrayHeader(tokens.length);
            for (int t : tokens) {
                p.packInt(t);
            }
            name(p, "block_size");
            p.packInt(blockSize);
            name(p, "lora_id");
            p.packNil();
            name(p, "medium");
            p.packString(medium);
            if (format.maps() || fields >= 7) {
                name(p, "lora_name");
                if (lora == null) {
                    p.packNil();
                } else {
                    p.packString(lora);
                }
            }
            if (format.maps() || fields >= 8) {
                name(p, "extra_keys");
                if (!extras) {
                    p.packNil();
                } else {
                    p.packArrayHeader(hashes.length);
                    for (int i = 0; i < hashes.length; i++) {
                        boolean s = i == 0 && parent == null && salt != null;
                        int n = (lora != null ? 1 : 0) + (s ? 1 : 0);
                        if (n == 0) {
                            p.packNil();
                            continue;
                        }
                        p.packArrayHeader(n);
                        if (lora != null) {
                            p.packString(lora);
                        }
                        if (s) {
                            p.packString(salt);
                        }
                    }
                }
            }
            events.add(p.toByteArray());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** {@code BlockRemoved} from tier {@code medium}. */
    void removed(long[] hashes, String medium) {
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            if (format.maps()) {
                p.packMapHeader(3);
                p.packString("type").packString("BlockRemoved");
            } else {
                p.packArrayHeader(3);
                p.packString("BlockRemoved");
            }
            name(p, "block_hashes");
            p.packArrayHeader(hashes.length);
            for (long h : hashes) {
                hash(p, h);
            }
            name(p, "medium");
            p.packString(medium);
            events.add(p.toByteArray());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** {@code AllBlocksCleared}. */
    void cleared() {
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            if (format.maps()) {
                p.packMapHeader(1);
                p.packString("type").packString("AllBlocksCleared");
            } else {
                p.packArrayHeader(1);
                p.packString("AllBlocksCleared");
            }
            events.add(p.toByteArray());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The batch of the events added since the last call, stamped {@code tsSeconds}; the encoder is empty after. */
    byte[] finish(double tsSeconds) {
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            p.packArrayHeader(3);
            p.packDouble(tsSeconds);
            p.packArrayHeader(events.size());
            for (byte[] e : events) {
                p.writePayload(e);
            }
            p.packInt(rank);
            events.clear();
            return p.toByteArray();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private void name(MessageBufferPacker p, String field) throws IOException {
        if (format.maps()) {
            p.packString(field);
        }
    }

    private void hash(MessageBufferPacker p, long h) throws IOException {
        if (format.byteHashes()) {
            byte[] d = new byte[32];
            long x = h * 0x9E3779B97F4A7C15L;
            for (int i = 0; i < 24; i++) {
                d[i] = (byte) (x >>> ((i & 7) * 8));
                if ((i & 7) == 7) {
                    x = x * 0xBF58476D1CE4E5B9L + 1;
                }
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
}
