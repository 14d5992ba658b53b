package dev.cart.sim;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.List;
import java.util.SplittableRandom;

/**
 * The HTTP replica's precise-mode side: it tokenizes prompts as the simulated model does
 * ({@link ModelTokenizer}: the Llama-3 template's markers as special tokens, {@code cl100k_base} between
 * them), hashes their 16-token blocks with its own chained SHA-256 (as vLLM does: each block's digest over
 * its parent's, its token ids and its extra keys, the adapter on every block and the {@code cache_salt} on
 * the first; the first block's parent a random per-process seed, new at each restart), and publishes what
 * its engine stores and evicts through a {@link KvEventPublisher}. It also answers {@code POST /tokenize}
 * with the same tokens.
 *
 * <p>Thread-safe: the tokenizer is used under a lock; the seed is volatile.
 */
final class ReplicaKvEvents implements AutoCloseable {

    private final ModelTokenizer tokenizer = new ModelTokenizer();
    private final KvEventPublisher publisher;
    private final KvEventRecorder recorder;
    private final SplittableRandom seeds;
    private final int blockTokens;
    private volatile long processSeed;

    ReplicaKvEvents(String host, KvEventOptions s, int blockTokens) {
        this.blockTokens = blockTokens;
        this.seeds = new SplittableRandom(s.seed());
        this.processSeed = seeds.nextLong();
        this.publisher =
                new KvEventPublisher(host, s.port(), s.replayPort(), s.topic(), s.topicInReplay(), s.bufferBatches());
        this.recorder = new KvEventRecorder(
                new KvEventEncoder(new KvEventEncoder.Format(s.maps(), s.byteHashes()), 0),
                blockTokens,
                h -> h, // the blocks are already the replica's own hashes
                nanos -> System.currentTimeMillis() / 1000.0,
                publisher::publish);
    }

    KvEventRecorder recorder() {
        return recorder;
    }

    KvEventPublisher publisher() {
        return publisher;
    }

    /** The prompt's token ids as the engine computes them: a chat's rendered messages, or a completion's prompt. */
    int[] tokens(List<Message> messages, String completionPrompt) {
        synchronized (tokenizer) {
            return messages != null ? tokenizer.chat(messages) : tokenizer.completion(completionPrompt);
        }
    }

    /** The replica's hashes of the full blocks of {@code tokens}, for a request of {@code lora} (or null). */
    long[] blocks(int[] tokens, String lora, String salt) {
        int n = tokens.length / blockTokens;
        long[] out = new long[n];
        MessageDigest sha;
        try {
            sha = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
        long parent = processSeed;
        byte[] buf = new byte[8 + 4 * blockTokens];
        for (int b = 0; b < n; b++) {
            for (int i = 0; i < 8; i++) {
                buf[i] = (byte) (parent >>> (56 - 8 * i));
            }
            for (int i = 0; i < blockTokens; i++) {
                int t = tokens[b * blockTokens + i];
                int at = 8 + 4 * i;
                buf[at] = (byte) (t >>> 24);
                buf[at + 1] = (byte) (t >>> 16);
                buf[at + 2] = (byte) (t >>> 8);
                buf[at + 3] = (byte) t;
            }
            sha.update(buf);
            if (lora != null) {
                sha.update(lora.getBytes(StandardCharsets.UTF_8));
            }
            if (b == 0 && salt != null) {
                sha.update((byte) 0);
                sha.update(salt.getBytes(StandardCharsets.UTF_8));
            }
            byte[] d = sha.digest();
            long h = 0;
            for (int i = 24; i < 32; i++) {
                h = (h << 8) | (d[i] & 0xFF);
            }
            out[b] = h;
            parent = h;
        }
        return out;
    }

    /** A new process: a new seed for the hashes, the publisher's sequence from 0. */
    void restarted() {
        processSeed = seeds.nextLong();
        publisher.restart();
    }

    @Override
    public void close() {
        publisher.close();
    }
}
