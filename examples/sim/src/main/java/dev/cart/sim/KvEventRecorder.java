package dev.cart.sim;

import java.util.function.Consumer;
import java.util.function.LongToDoubleFunction;
import java.util.function.LongUnaryOperator;

/**
 * Turns one engine's block events into vLLM event batches, one per engine step: the blocks a request
 * stored in a row become one {@code BlockStored} (chained on the block before them, with their tokens),
 * evictions a {@code BlockRemoved}, in the order they happened. The engine's block identities are mapped to
 * the hashes it publishes by {@code engineHash} (the replica's own hashing, never CART's key), so a restart
 * can change them all, as vLLM's per-process seed does.
 *
 * <p>With {@code offload}, an evicted block is first reported stored in the CPU tier (a placeholder without
 * tokens, as vLLM's offloading reports it) and then removed from the GPU: the CPU-tier fault.
 *
 * <p>Called on the engine's thread only. Not thread-safe.
 */
final class KvEventRecorder implements Engine.BlockEvents {

    private final KvEventEncoder encoder;
    private final int blockSize;
    private final LongToDoubleFunction tsOf;
    private final Consumer<byte[]> sink;
    private volatile LongUnaryOperator engineHash;
    volatile boolean offload;

    private EngineRequest runOf;
    private int runFirst;
    private int runEnd;
    private long[] removed = new long[16];
    private int removedCount;

    KvEventRecorder(
            KvEventEncoder encoder,
            int blockSize,
            LongUnaryOperator engineHash,
            LongToDoubleFunction tsOf,
            Consumer<byte[]> sink) {
        this.encoder = encoder;
        this.blockSize = blockSize;
        this.engineHash = engineHash;
        this.tsOf = tsOf;
        this.sink = sink;
    }

    /** From now on, blocks are published under {@code hash} (a restarted engine's new seed). */
    void engineHash(LongUnaryOperator hash) {
        this.engineHash = hash;
    }

    @Override
    public void stored(EngineRequest r, int index) {
        if (r.tokens == null || (index + 1) * blockSize > r.tokens.length) {
            return; // the replica publishes only blocks whose tokens it has
        }
        flushRemoved();
        if (runOf == r && runEnd == index) {
            runEnd++;
            return;
        }
        flushRun();
        runOf = r;
        runFirst = index;
        runEnd = index + 1;
    }

    @Override
    public void removed(long hash) {
        flushRun();
        if (removedCount == removed.length) {
            removed = java.util.Arrays.copyOf(removed, removedCount * 2);
        }
        removed[removedCount++] = hash;
    }

    @Override
    public void stepDone(long nanos) {
        flushRun();
        flushRemoved();
        if (!encoder.isEmpty()) {
            sink.accept(encoder.finish(tsOf.applyAsDouble(nanos)));
        }
    }

    private void flushRun() {
        EngineRequest r = runOf;
        if (r == null) {
            return;
        }
        runOf = null;
        LongUnaryOperator h = engineHash;
        long[] hashes = new long[runEnd - runFirst];
        for (int i = 0; i < hashes.length; i++) {
            hashes[i] = h.applyAsLong(r.blocks[runFirst + i]);
        }
        int[] tokens = java.util.Arrays.copyOfRange(r.tokens, runFirst * blockSize, runEnd * blockSize);
        Long parent = runFirst == 0 ? null : h.applyAsLong(r.blocks[runFirst - 1]);
        encoder.stored(hashes, parent, tokens, blockSize, "GPU", r.lora, r.salt);
    }

    private void flushRemoved() {
        if (removedCount == 0) {
            return;
        }
        LongUnaryOperator h = engineHash;
        long[] hashes = new long[removedCount];
        for (int i = 0; i < removedCount; i++) {
            hashes[i] = h.applyAsLong(removed[i]);
        }
        removedCount = 0;
        if (offload) {
            encoder.stored(hashes, null, new int[0], blockSize, "CPU", null, null);
        }
        encoder.removed(hashes, "GPU");
    }
}
