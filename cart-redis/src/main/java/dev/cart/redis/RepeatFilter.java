package dev.cart.redis;

import dev.cart.core.sync.RouteEvent;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The publisher's memory of the learned routes it wrote lately: a route written again within the repeat
 * interval (a hot prefix refreshed by every request) is left out, since once per interval keeps peers'
 * last-use times fresh enough. Any other event (a forgotten branch, a removal, a reset) may have undone
 * what peers were told, so it clears the memory. Bounded (least recently written out first). One thread.
 */
final class RepeatFilter {

    private static final int RECENT_LEARNED = 65_536;

    /** A learned route as the publisher remembers it: the last block hash identifies the whole prefix. */
    private record Sent(String replicaId, long lastBlock, int length) {}

    private final long repeatMillis;
    private final Map<Sent, Long> recent = new LinkedHashMap<>(1024, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Sent, Long> eldest) {
            return size() > RECENT_LEARNED;
        }
    };

    /** @param repeatMillis the repeat interval; 0 or less keeps every event */
    RepeatFilter(long repeatMillis) {
        this.repeatMillis = repeatMillis;
    }

    /** Removes from {@code batch} the repeats within the interval; returns how many it removed. */
    int keepNew(List<RouteEvent> batch) {
        if (repeatMillis <= 0) {
            return 0;
        }
        int k = 0;
        for (RouteEvent e : batch) {
            if (e instanceof RouteEvent.Learned l && l.blocks().length > 0) {
                Sent s = new Sent(l.replicaId(), l.blocks()[l.blocks().length - 1], l.blocks().length);
                Long at = recent.get(s);
                if (at != null && l.timeMillis() - at < repeatMillis) {
                    continue;
                }
                recent.put(s, l.timeMillis());
            } else {
                recent.clear();
            }
            batch.set(k++, e);
        }
        int removed = batch.size() - k;
        batch.subList(k, batch.size()).clear();
        return removed;
    }
}
