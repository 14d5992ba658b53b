package dev.cart.core;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** A replica's queue of requests in prefill: an add keeps exactly the entries not done, in order, then itself. */
class InPrefillTest {

    @Test
    void anAddKeepsTheLiveEntriesInOrder() {
        PromptKey key = PromptKey.ofText("a prompt of a few blocks ".repeat(10), 64);
        SplittableRandom random = new SplittableRandom(7);
        for (int round = 0; round < 2000; round++) {
            AtomicReference<InPrefill.Entry[]> queue = new AtomicReference<>(new InPrefill.Entry[0]);
            int size = random.nextInt(0, 80); // below and above the 64 entries of the mask
            List<InPrefill.Entry> live = new ArrayList<>();
            for (int i = 0; i < size; i++) {
                InPrefill.Entry e = new InPrefill.Entry(key, i, queue);
                InPrefill.add(e);
                live.add(e);
                if (random.nextInt(4) == 0) { // some end their prefill in between
                    InPrefill.Entry gone = live.remove(random.nextInt(live.size()));
                    InPrefill.done(gone);
                }
            }
            int runs = random.nextInt(3);
            for (int r = 0; r < runs && !live.isEmpty(); r++) { // and a few just before the last add
                InPrefill.done(live.remove(random.nextInt(live.size())));
            }
            InPrefill.Entry last = new InPrefill.Entry(key, -1, queue);
            InPrefill.Entry[] got = InPrefill.add(last);
            live.add(last);
            assertArrayEquals(live.toArray(new InPrefill.Entry[0]), got, "round " + round);
            assertSame(got, queue.get());
        }
    }
}
