package dev.cart.gateway;

import dev.cart.core.Router;

/**
 * One load-balanced service's routing state: its replicas (from discovery) and the router, with its own prefix
 * tree, over them. Built once per service id on its first request and kept for the application's life.
 */
final class ServiceRouting {

    private final String serviceId;
    private final InstanceReplicas replicas;
    private final Router router;

    ServiceRouting(String serviceId, InstanceReplicas replicas, Router router) {
        this.serviceId = serviceId;
        this.replicas = replicas;
        this.router = router;
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
