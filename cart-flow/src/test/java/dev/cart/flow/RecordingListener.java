package dev.cart.flow;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/** Records every flow event as a line, for assertions. */
final class RecordingListener implements FlowListener {

    final List<String> lines = Collections.synchronizedList(new ArrayList<>());

    @Override
    public void onQueued(String model, int band) {
        lines.add("queued band=" + band);
    }

    @Override
    public void onAdmitted(String model, int band, String tenantLabel, long queuedNanos, long cost) {
        lines.add("admitted band=" + band + " tenant=" + tenantLabel + " queued=" + (queuedNanos > 0));
    }

    @Override
    public void onShed(String model, int band, String tenantLabel, ShedReason reason, long queuedNanos) {
        lines.add("shed " + reason.code() + " band=" + band + " tenant=" + tenantLabel);
    }

    @Override
    public void onCancelled(String model, int band, long queuedNanos) {
        lines.add("cancelled band=" + band);
    }

    long count(String prefix) {
        synchronized (lines) {
            return lines.stream().filter(l -> l.startsWith(prefix)).count();
        }
    }
}
