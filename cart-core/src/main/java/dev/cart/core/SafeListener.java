package dev.cart.core;

import dev.cart.core.spi.LeaseCompletion;
import dev.cart.core.spi.RoutingListener;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Wraps a listener so that its exceptions never reach the router; the first one is logged. */
final class SafeListener implements RoutingListener {

    private static final Logger LOG = LoggerFactory.getLogger(SafeListener.class);

    private final RoutingListener delegate;
    private final AtomicBoolean logged = new AtomicBoolean();

    SafeListener(RoutingListener delegate) {
        this.delegate = delegate;
    }

    private void failed(String event, RuntimeException e) {
        if (logged.compareAndSet(false, true)) {
            LOG.warn(
                    "routing listener {} threw on {}; ignoring this and later listener failures",
                    delegate.getClass().getName(),
                    event,
                    e);
        }
    }

    @Override
    public void onDecision(RouteDecision decision) {
        try {
            delegate.onDecision(decision);
        } catch (RuntimeException e) {
            failed("onDecision", e);
        }
    }

    @Override
    public void onLeaseCompleted(LeaseCompletion completion) {
        try {
            delegate.onLeaseCompleted(completion);
        } catch (RuntimeException e) {
            failed("onLeaseCompleted", e);
        }
    }

    @Override
    public void onCacheFeedback(RouteDecision decision, CacheFeedback feedback) {
        try {
            delegate.onCacheFeedback(decision, feedback);
        } catch (RuntimeException e) {
            failed("onCacheFeedback", e);
        }
    }

    @Override
    public void onInsertSkipped() {
        try {
            delegate.onInsertSkipped();
        } catch (RuntimeException e) {
            failed("onInsertSkipped", e);
        }
    }

    @Override
    public void onEviction(EvictionReport report) {
        try {
            delegate.onEviction(report);
        } catch (RuntimeException e) {
            failed("onEviction", e);
        }
    }

    @Override
    public void onReset() {
        try {
            delegate.onReset();
        } catch (RuntimeException e) {
            failed("onReset", e);
        }
    }
}
