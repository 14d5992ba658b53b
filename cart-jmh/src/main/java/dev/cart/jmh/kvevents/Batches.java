package dev.cart.jmh.kvevents;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigInteger;
import java.util.SplittableRandom;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;

/** vLLM-shaped event batches for the benchmarks (positional, integer hashes), written with msgpack-core. */
final class Batches {

    static final int BLOCK = 16;

    private Batches() {}

    /** Token ids for {@code blocks} blocks, random from {@code rnd}. */
    static int[] tokens(SplittableRandom rnd, int blocks) {
        int[] t = new int[blocks * BLOCK];
        for (int i = 0; i < t.length; i++) {
            t[i] = rnd.nextInt(128_000);
        }
        return t;
    }

    /** {@code [ts, [["BlockStored", hashes, parent, tokens, 16, nil, "GPU"]], 0]}. */
    static byte[] stored(double ts, long[] hashes, Long parent, int[] tokens) {
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            p.packArrayHeader(3).packDouble(ts).packArrayHeader(1);
            p.packArrayHeader(7).packString("BlockStored");
            p.packArrayHeader(hashes.length);
            for (long h : hashes) {
                hash(p, h);
            }
            if (parent == null) {
                p.packNil();
            } else {
                hash(p, parent);
            }
            p.packArrayHeader(tokens.length);
            for (int t : tokens) {
                p.packInt(t);
            }
            p.packInt(BLOCK).packNil().packString("GPU");
            p.packInt(0);
            return p.toByteArray();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** {@code [ts, [["BlockRemoved", hashes, "GPU"]], 0]}. */
    static byte[] removed(double ts, long[] hashes) {
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            p.packArrayHeader(3).packDouble(ts).packArrayHeader(1);
            p.packArrayHeader(3).packString("BlockRemoved");
            p.packArrayHeader(hashes.length);
            for (long h : hashes) {
                hash(p, h);
            }
            p.packString("GPU");
            p.packInt(0);
            return p.toByteArray();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void hash(MessageBufferPacker p, long h) throws IOException {
        if (h < 0) {
            p.packBigInteger(new BigInteger(Long.toUnsignedString(h)));
        } else {
            p.packLong(h);
        }
    }
}
