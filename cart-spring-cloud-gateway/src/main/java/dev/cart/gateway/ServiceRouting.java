package dev.cart.gateway;

import dev.cart.core.Router;
import dev.cart.flow.FlowControl;
import org.jspecify.annotations.Nullable;

/**
 * One load-balanced service's routing state: its replicas (from discovery) and the router, with its own prefix
 * tree, over them, and the admission queue in front of it when {@code cart.flow.enabled}. Built once per service id on its first request and kept for the application's life.
 */
final class ServiceRouting {

    private final String serviceId;
    private final InstanceReplicas replicas;
    private final Router router;
    private final @Nullable FlowControl flow;

    /** @param flow the service's admission queue, or null when {@code cart.flow.enabled} is false */
    ServiceRouting(String serviceId, InstanceReplicas replicas, Router router, @Nullable FlowControl flow) {
        this.serviceId = serviceId;
        this.replicas = replicas;
        this.router = router;
        this.flow = flow;
    }

    /** The admission queue in front of the router, or null when it is off. */
    @Nullable
    FlowControl flow() {
        return flow;
    }

    String serviceId() {
        return serviceId;
    }

    InstanceReplicas replicas() {
        return replicas;
    }

    Router router() {
        return router;
    }
}
