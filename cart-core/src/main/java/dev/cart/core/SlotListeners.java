package dev.cart.core;

import dev.cart.core.spi.LeaseCompletion;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The router's listeners for freed slots ({@link Router#addSlotListener}): an immutable list replaced whole
 * on each change (copy on write), read without a lock on every lease close. With none added, a close pays
 * one volatile read.
 */
final class SlotListeners {

    private static final Logger LOG = LoggerFactory.getLogger(SlotListeners.class);

    private volatile List<Consumer<? super LeaseCompletion>> listeners = List.of();
    private final AtomicBoolean failureLogged = new AtomicBoolean();

    synchronized void add(Consumer<? super LeaseCompletion> listener) {
        List<Consumer<? super LeaseCompletion>> next = new ArrayList<>(listeners);
        next.add(listener);
        listeners = List.copyOf(next);
    }

    synchronized void remove(Consumer<? super LeaseCompletion> listener) {
        List<Consumer<? super LeaseCompletion>> next = new ArrayList<>(listeners);
        for (int i = 0; i < next.size(); i++) {
            if (next.get(i) == listener) {
                next.remove(i);
                listeners = List.copyOf(next);
                return;
            }
        }
    }

    /** Tells every listener that a lease gave its slot back; a listener's exception is logged once. */
    void freed(LeaseCompletion completion) {
        List<Consumer<? super LeaseCompletion>> now = listeners;
        for (int i = 0; i < now.size(); i++) {
            try {
                now.get(i).accept(completion);
            } catch (RuntimeException e) {
                if (failureLogged.compareAndSet(false, true)) {
                    LOG.error("a slot listener failed (logged once; routing goes on)", e);
                }
            }
        }
    }
}
