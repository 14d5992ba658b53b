package dev.cart.kvevents;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.Set;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** CART's block keys: the written-out path for 16 ids agrees with the general one, and keys tell blocks apart. */
class BlockKeysTest {

    @Test
    void theSixteenIdPathAgreesWithTheGeneralOne() {
        SplittableRandom rnd = new SplittableRandom(3);
        for (int i = 0; i < 10_000; i++) {
            int[] t = new int[40];
            for (int j = 0; j < t.length; j++) {
                t[j] = rnd.nextInt(i % 2 == 0 ? 200_000 : Integer.MAX_VALUE);
            }
            int off = rnd.nextInt(25);
            assertEquals(BlockKeys.tokensHashAny(t, off, 16), BlockKeys.tokensHash16(t, off));
        }
    }

    @Test
    void keysTellBlocksAndChainsApart() {
        SplittableRandom rnd = new SplittableRandom(5);
        for (int size : new int[] {1, 3, 16, 17, 32, 64}) {
            Set<Long> seen = new HashSet<>();
            Set<String> inputs = new HashSet<>();
            long root = BlockKeys.root("m", null);
            int n = 50_000;
            for (int i = 0; i < n; i++) {
                int[] t = new int[size];
                for (int j = 0; j < size; j++) {
                    t[j] = rnd.nextInt(1_000); // small ids: many blocks share most of them
                }
                inputs.add(java.util.Arrays.toString(t));
                long k = BlockKeys.block(t, 0, size, root);
                assertEquals(0, k & 3L);
                assertNotEquals(0, k);
                seen.add(k);
            }
            assertEquals(inputs.size(), seen.size(), "distinct blocks give distinct keys, block size " + size);
        }
        int[] a = new int[32];
        int[] b = new int[32];
        for (int j = 0; j < 16; j++) {
            a[j] = b[j + 16] = j;
            a[j + 16] = b[j] = 100 + j;
        }
        assertNotEquals(BlockKeys.tokensHash(a, 0, 32), BlockKeys.tokensHash(b, 0, 32)); // order of 16-id runs
        int[] one = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
        long p = BlockKeys.root("m", null);
        assertNotEquals(BlockKeys.block(one, 0, 16, p), BlockKeys.block(one, 0, 16, BlockKeys.root("m", "salt")));
        assertNotEquals(BlockKeys.block(one, 0, 16, p), BlockKeys.block(one, 0, 16, BlockKeys.block(one, 0, 16, p)));
        assertTrue(BlockKeys.tokensHash(one, 0, 16) != BlockKeys.tokensHash(one, 0, 15));
    }
}
