package dev.cart.gateway;

import dev.cart.core.RouteDecision;
import dev.cart.core.RouteRequest;
import dev.cart.core.spi.Replica;
import dev.cart.flow.FlowControl;
import dev.cart.flow.FlowRequest;
import dev.cart.flow.FlowResult;
import dev.cart.flow.FlowTicket;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.cloud.client.ServiceInstance;
import org.springframework.cloud.client.loadbalancer.DefaultResponse;
import org.springframework.cloud.client.loadbalancer.EmptyResponse;
import org.springframework.cloud.client.loadbalancer.Request;
import org.springframework.cloud.client.loadbalancer.RequestDataContext;
import org.springframework.cloud.client.loadbalancer.Response;
import org.springframework.cloud.loadbalancer.core.NoopServiceInstanceListSupplier;
import org.springframework.cloud.loadbalancer.core.ReactorServiceInstanceLoadBalancer;
import org.springframework.cloud.loadbalancer.core.ServiceInstanceListSupplier;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * A Spring Cloud LoadBalancer that chooses among a service's instances with CART's {@code Router}: the instances
 * come from the service's {@link ServiceInstanceListSupplier} (so static lists, Kubernetes and Consul discovery,
 * health-check and caching suppliers all keep working), the prompt key from the exchange state that
 * {@link CartPromptFilter} put in the request's attributes, and the decision's lease goes back into that state,
 * which closes it when the exchange ends.
 *
 * <p>A request without that state (the balancer used outside the gateway filter chain, for example by a
 * {@code @LoadBalanced WebClient}) is routed by load alone and its lease closed at once, since nothing would
 * close it later: in-flight counts then do not include it. A warning says so once.
 *
 * <p>With the admission queue on ({@code cart.flow.enabled}), a request that finds no instance with room waits in
 * the service's {@link FlowControl} instead of failing: the returned {@code Mono} completes when the queue hands
 * it a slot (on a parallel scheduler, not the thread that freed the slot), and no thread waits meanwhile. If the
 * exchange is cancelled while it waits (the client went away), the ticket is cancelled and the request leaves
 * the queue at once; if it was being handed a slot just then, the lease it gets is closed unused. A request the
 * queue sheds is marked in the exchange state ({@link CartExchange#shed}) and answered 429 (or 503) by
 * {@link CartLeaseFilter}.
 *
 * <p>Thread-safe: {@code choose} keeps nothing between calls; the router and the replica set are thread-safe.
 */
final class CartLoadBalancer implements ReactorServiceInstanceLoadBalancer {

    private static final Logger LOG = LoggerFactory.getLogger(CartLoadBalancer.class);

    private final ServiceRouting routing;
    private final ObjectProvider<ServiceInstanceListSupplier> suppliers;
    private final AtomicBoolean warnedNoState = new AtomicBoolean();
    private volatile @Nullable ServiceInstanceListSupplier supplier; // the context's, once found

    CartLoadBalancer(ServiceRouting routing, ObjectProvider<ServiceInstanceListSupplier> suppliers) {
        this.routing = routing;
        this.suppliers = suppliers;
    }

    @Override
    @SuppressWarnings("rawtypes")
    public Mono<Response<ServiceInstance>> choose(Request request) {
        ServiceInstanceListSupplier supplier = supplier();
        CartExchange state = state(request);
        return supplier.get(request).next().flatMap(instances -> admit(instances, state));
    }

    /** Through the admission queue when it is on and the request came through CART's filters; else at once. */
    private Mono<Response<ServiceInstance>> admit(List<ServiceInstance> instances, @Nullable CartExchange state) {
        FlowControl flow = routing.flow();
        FlowRequest in = state == null ? null : state.flowRequest();
        if (flow == null || state == null || in == null) {
            return Mono.just(choose(instances, state));
        }
        InstanceReplicas replicas = routing.replicas();
        replicas.update(instances);
        RouteRequest request = state.nextRequest();
        FlowTicket ticket = flow.submit(request, in);
        if (ticket.isDone()) {
            return Mono.just(admitted(ticket.join(), request, state));
        }
        return Mono.<FlowResult>create(sink -> {
                    sink.onCancel(() -> leave(ticket));
                    var unused = ticket.whenComplete((r, e) -> {
                        if (e != null) {
                            sink.error(e);
                        } else {
                            sink.success(r);
                        }
                    });
                })
                .publishOn(Schedulers.parallel())
                .map(r -> admitted(r, request, state));
    }

    /** The client went away while its request waited: out of the queue, or its slot given back unused. */
    private static void leave(FlowTicket ticket) {
        if (!ticket.cancel(true)) {
            var unused = ticket.thenAccept(r -> {
                RouteDecision d = r.decision();
                if (r.admitted() && d != null) {
                    d.lease().close();
                }
            });
        }
    }

    /** The queue's answer for {@code request}: its instance, or an empty response (shed, or no replica). */
    private Response<ServiceInstance> admitted(FlowResult r, RouteRequest request, CartExchange state) {
        if (!r.admitted()) {
            if (r.shedReason() != null) {
                state.shed(r);
            } else {
                state.noReplica();
            }
            return new EmptyResponse();
        }
        RouteDecision d = Objects.requireNonNull(r.decision(), "an admitted request has a decision");
        Replica chosen = Objects.requireNonNull(d.replica(), "an admitted decision names its replica");
        ServiceInstance instance = routing.replicas().instance(chosen);
        if (instance == null) { // the instance left discovery while the request waited: choose again, now
            d.lease().close();
            return choose(routing.replicas(), request.excluding(chosen), state);
        }
        state.attach(d);
        return new DefaultResponse(instance);
    }

    /** The service's instance supplier: looked up in the context until found, then kept (it is a singleton). */
    private ServiceInstanceListSupplier supplier() {
        ServiceInstanceListSupplier s = supplier;
        if (s == null) {
            s = suppliers.getIfAvailable();
            if (s == null) {
                return new NoopServiceInstanceListSupplier();
            }
            supplier = s;
        }
        return s;
    }

    private Response<ServiceInstance> choose(List<ServiceInstance> instances, @Nullable CartExchange state) {
        InstanceReplicas replicas = routing.replicas();
        replicas.update(instances);
        RouteRequest request = state == null ? RouteRequest.empty() : state.nextRequest();
        return choose(replicas, request, state);
    }

    private Response<ServiceInstance> choose(
            InstanceReplicas replicas, RouteRequest request, @Nullable CartExchange state) {
        for (int tries = 0; tries < 3; tries++) {
            RouteDecision d = routing.router().choose(request);
            Replica chosen = d.replica();
            if (chosen == null) { // routed nowhere
                if (state != null) {
                    state.noReplica();
                }
                return new EmptyResponse();
            }
            ServiceInstance instance = replicas.instance(chosen);
            if (instance == null) { // the instance left discovery while the router was choosing it
                d.lease().close();
                request = request.excluding(chosen);
                continue;
            }
            if (state == null) {
                if (warnedNoState.compareAndSet(false, true)) {
                    LOG.warn(
                            "service {}: a request reached CART's load balancer without CART's gateway filter; it is "
                                    + "routed by load and not counted in flight",
                            routing.serviceId());
                }
                d.lease().close();
            } else {
                state.attach(d);
            }
            return new DefaultResponse(instance);
        }
        if (state != null) {
            state.noReplica();
        }
        return new EmptyResponse();
    }

    private static @Nullable CartExchange state(Request<?> request) {
        if (request.getContext() instanceof RequestDataContext c && c.getClientRequest() != null) {
            Map<String, Object> attributes = c.getClientRequest().getAttributes();
            if (attributes != null && attributes.get(CartExchange.ATTRIBUTE) instanceof CartExchange s) {
                return s;
            }
        }
        return null;
    }
}
