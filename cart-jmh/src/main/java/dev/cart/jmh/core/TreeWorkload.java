package dev.cart.jmh.core;

import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.PromptKey;
import dev.cart.core.ReplicaSpec;
import dev.cart.core.internal.KeyAccess;
import dev.cart.core.internal.PrefixTree;
import dev.cart.core.spi.Replica;
import java.util.List;
import java.util.SplittableRandom;

/**
 * The fixed workload for the tree figures, so they can be compared with other routers: 8 replicas; 200
 * shared prefixes of 2,000 characters; 10,000 keys of 1,000-8,000 characters (a shared prefix and a
 * random suffix, cut to the key's length); queries that share a prefix but end in unseen text; queries
 * that repeat an inserted key. Keys are hashed once up front (64-character blocks): the tree
 * benchmarks measure the tree, {@code KeyBenchmark} measures building keys.
 *
 * <p>Lives in package {@code dev.cart.core} to build keys from raw block hashes for fresh-key inserts.
 */
public final class TreeWorkload {

    public static final int REPLICAS = 8;
    public static final int PREFIXES = 200;
    public static final int PREFIX_CHARS = 2_000;
    public static final int KEYS = 10_000;
    public static final int MIN_CHARS = 1_000;
    public static final int MAX_CHARS = 8_000;
    public static final int BLOCK = PromptKey.DEFAULT_BLOCK_CHARS;

    public final List<ManagedReplicaSet.Member> replicas;
    public final String[] texts = new String[KEYS];
    public final PromptKey[] keys = new PromptKey[KEYS];
    public final Replica[] owners = new Replica[KEYS];
    public final PromptKey[] unseen = new PromptKey[KEYS];

    public TreeWorkload(long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        ManagedReplicaSet.Builder b = ManagedReplicaSet.builder();
        for (int i = 0; i < REPLICAS; i++) {
            b.add(new ReplicaSpec("http://replica-" + i + ":8000", 1 << 20, 0));
        }
        replicas = b.build().replicas();
        String[] prefixes = new String[PREFIXES];
        for (int p = 0; p < PREFIXES; p++) {
            prefixes[p] = randomText(rnd, PREFIX_CHARS);
        }
        for (int k = 0; k < KEYS; k++) {
            int len = MIN_CHARS + rnd.nextInt(MAX_CHARS - MIN_CHARS + 1);
            String p = prefixes[rnd.nextInt(PREFIXES)];
            String text = len <= p.length() ? p.substring(0, len) : p + randomText(rnd, len - p.length());
            texts[k] = text;
            keys[k] = PromptKey.ofText(text, BLOCK);
            owners[k] = replicas.get(rnd.nextInt(REPLICAS));
            int keep = len / 2 + rnd.nextInt(len / 2);
            unseen[k] = PromptKey.ofText(text.substring(0, keep) + randomText(rnd, len - keep), BLOCK);
        }
    }

    /** A tree holding every key of the workload, each on its owner. */
    public PrefixTree filledTree(long maxSize) {
        PrefixTree tree = PrefixTree.builder().maxSize(maxSize).build();
        for (int k = 0; k < KEYS; k++) {
            tree.insert(keys[k], owners[k]);
        }
        return tree;
    }

    /**
     * A key never seen before: key {@code k}'s blocks with the last {@code fresh} replaced by new hashes
     * derived from {@code salt}. Costs one array copy.
     */
    public PromptKey freshVariant(int k, long salt, int fresh) {
        long[] blocks = KeyAccess.blocks(keys[k]).clone();
        for (int i = Math.max(0, blocks.length - fresh); i < blocks.length; i++) {
            blocks[i] = mix(salt * 31 + i);
        }
        return KeyAccess.wrapBlocks(blocks, BLOCK); // the copy above is the only one
    }

    public static String randomText(SplittableRandom rnd, int n) {
        char[] c = new char[n];
        for (int i = 0; i < n; i++) {
            int r = rnd.nextInt(64);
            c[i] = r < 26 ? (char) ('a' + r) : r < 52 ? (char) ('A' + r - 26) : r < 62 ? (char) ('0' + r - 52) : ' ';
        }
        return new String(c);
    }

    static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
