package dev.cart.jmh.core;

import dev.cart.core.PromptKey;
import dev.cart.core.internal.KeyAccess;
import dev.cart.core.internal.PrefixTree;

/**
 * What a walk meets in the fixed workload's tree ({@link TreeWorkload}): per fresh insert (a key whose last
 * two blocks are new, as {@link TreeBenchmark#insertFresh}), and per unseen query (as {@link
 * TreeBenchmark#matchUnseen}), the nodes its walk visits, how many of them keep their children in a table (the others hold them in their own two child
 * slots, so the lookup loads no table), and how many edges it follows are at most two blocks long (compared
 * without loading the label). Counted on a freshly filled tree and after {@code passes} rounds of a fresh
 * insert per key, since fresh inserts change the shape: {@code PairedTreeTiming} refills every 6,000
 * inserts (0.6 per key), a {@code TreeBenchmark} iteration makes about 40 per key. Counts, not times.
 * Run: {@code java -cp cart-jmh/target/benchmarks.jar dev.cart.jmh.core.TreeShape [passes...]}.
 */
public final class TreeShape {

    private TreeShape() {}

    public static void main(String[] args) {
        TreeWorkload w = new TreeWorkload(42);
        String[] passes = args.length > 0 ? args : new String[] {"0", "1", "20"};
        System.out.println("passes  walk of    visits  table lookups  short edges");
        for (String p : passes) {
            int n = Integer.parseInt(p);
            PrefixTree tree = w.filledTree(Long.MAX_VALUE);
            long salt = 0;
            for (int r = 0; r < n; r++) {
                for (int k = 0; k < TreeWorkload.KEYS; k++) {
                    tree.insert(w.freshVariant(k, ++salt, 2), w.owners[k]);
                }
            }
            for (boolean unseen : new boolean[] {false, true}) {
                long visits = 0;
                long tables = 0;
                long shortEdges = 0;
                for (int k = 0; k < TreeWorkload.KEYS; k++) {
                    PromptKey key = unseen ? w.unseen[k] : w.freshVariant(k, ++salt, 2);
                    int[] s = tree.walkShape(KeyAccess.blocks(key));
                    visits += s[0];
                    tables += s[1];
                    shortEdges += s[2];
                }
                double keys = TreeWorkload.KEYS;
                System.out.printf(
                        "%6d  %-9s  %6.2f  %13.2f  %11.2f%n",
                        n, unseen ? "a query" : "an insert", visits / keys, tables / keys, shortEdges / keys);
            }
        }
    }
}
