package dev.cart.sim;

import dev.cart.core.CacheFeedback;
import dev.cart.core.EvictionReport;
import dev.cart.core.RouteDecision;
import dev.cart.core.spi.LeaseCompletion;
import dev.cart.core.spi.RoutingListener;

/** Two routing listeners heard in turn (the run's feedback counter and precise mode's lease listener). */
final class BothListeners implements RoutingListener {

    private final RoutingListener a;
    private final RoutingListener b;

    BothListeners(RoutingListener a, RoutingListener b) {
        this.a = a;
        this.b = b;
    }

    @Override
    public void onDecision(RouteDecision decision) {
        a.onDecision(decision);
        b.onDecision(decision);
    }

    @Override
    public void onLeaseCompleted(LeaseCompletion completion) {
        a.onLeaseCompleted(completion);
        b.onLeaseCompleted(completion);
    }

    @Override
    public void onCacheFeedback(RouteDecision decision, CacheFeedback feedback) {
        a.onCacheFeedback(decision, feedback);
        b.onCacheFeedback(decision, feedback);
    }

    @Override
    public void onEviction(EvictionReport report) {
        a.onEviction(report);
        b.onEviction(report);
    }

    @Override
    public void onReset() {
        a.onReset();
        b.onReset();
    }

    @Override
    public void onInsertSkipped() {
        a.onInsertSkipped();
        b.onInsertSkipped();
    }
}
