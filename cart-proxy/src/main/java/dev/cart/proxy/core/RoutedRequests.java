package dev.cart.proxy.core;

import dev.cart.core.RouteRequest;
import dev.cart.extract.ExtractedRequest;
import dev.cart.extract.ExtractionException;
import dev.cart.flow.FlowHeaders;
import dev.cart.flow.FlowRequest;
import dev.cart.proxy.flow.FlowAnswers;
import dev.cart.proxy.http.Answer;
import dev.cart.proxy.http.RequestHead;
import dev.cart.proxy.observe.ProxyMetrics;
import dev.cart.proxy.precise.PreciseLookup;
import dev.cart.proxy.precise.PreciseMode;
import dev.cart.proxy.routing.Routing;
import dev.cart.proxy.routing.RoutingKeys;
import dev.cart.proxy.upstream.Forwarder;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.Supplier;

/**
 * A routed request (chat, completions, messages) turned into an exchange once its body is read: the prompt key
 * extracted (a 400 in the API's shape when the body cannot be read), the admission queue's headers read when
 * {@code flow.enabled}, and, in precise mode, the replicas' engine tokens looked up before the first route.
 * {@link ProxyCore#prepare} has taken the request's slot before this runs.
 *
 * <p>How: extraction runs on the caller's thread (the front calls it on the event loop for a small body, on its
 * extraction pool otherwise); a precise lookup, which makes a blocking HTTP call, runs on precise mode's pool, and
 * the prepared request comes back as {@link ProxyCore.Prepared#later}.
 *
 * <p>Concurrency: thread-safe; it keeps no state of its own, and the routing state is read once per request.
 */
final class RoutedRequests {

    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(RoutedRequests.class);

    private final Supplier<Routing> routing;
    private final Forwarder forwarder;
    private final RoutingKeys routingKeys;
    private final ProxyMetrics metrics;

    RoutedRequests(Supplier<Routing> routing, Forwarder forwarder, RoutingKeys routingKeys, ProxyMetrics metrics) {
        this.routing = routing;
        this.forwarder = forwarder;
        this.routingKeys = routingKeys;
        this.metrics = metrics;
    }

    /** The exchange of routed request {@code p} with its whole {@code body}, or the answer that refuses it. */
    ProxyCore.Prepared prepare(ProxyCore.Proxied p, byte[] body) {
        RequestHead head = p.head;
        ExtractedRequest req;
        try {
            req = routingKeys.extract(p.endpoint, body, 0, body.length);
        } catch (ExtractionException e) {
            p.log.status(e.status());
            p.log.result("bad_request");
            return new ProxyCore.Prepared(
                    null, Answer.error(e.status(), e.type(), e.code(), e.param(), e.getMessage()));
        }
        p.log.request(req.model(), req.stream());
        Forwarder.Inbound in = Forwarder.Inbound.routed(p.endpoint, head.rawQuery(), body, body.length, req);
        RouteRequest first =
                RouteRequest.of(req.key()).withTokenization(req.tokenization()).withModel(req.model());
        Routing current = routing.get();
        FlowRequest flow = null;
        if (current.flow != null) {
            FlowHeaders.Parsed parsed =
                    current.flow.parse(head.headers(), req.key().length());
            if (!parsed.ok()) {
                p.log.status(parsed.status());
                p.log.result("bad_request");
                return new ProxyCore.Prepared(null, FlowAnswers.badHeader(p.endpoint, parsed.error()));
            }
            flow = parsed.request();
        }
        if (current.precise != null) {
            return precise(p, body, req, in, first, current, flow);
        }
        return new ProxyCore.Prepared(forwarder.start(in, first, current, p.log, head.headers(), flow), null);
    }

    /**
     * A routed request of a proxy in precise mode: when some replica that could take it is precise, its engine
     * tokens are asked for and looked up on precise mode's pool (blocking HTTP, never on the caller's thread,
     * which may be an event loop): {@code later} completes with the exchange, routed with the lookup's
     * confirmed view. Otherwise, or when the pool is full, the request routes approximately at once, with the
     * reason in its decision line.
     */
    private ProxyCore.Prepared precise(
            ProxyCore.Proxied p,
            byte[] body,
            ExtractedRequest req,
            Forwarder.Inbound in,
            RouteRequest first,
            Routing current,
            FlowRequest flow) {
        PreciseMode precise = current.precise;
        PreciseLookup skip = precise.skip(req.model(), current.replicas);
        if (skip == null) {
            try {
                CompletableFuture<ProxyCore.Prepared> later = CompletableFuture.supplyAsync(
                        () -> {
                            PreciseLookup lookup;
                            try {
                                lookup = precise.lookup(p.endpoint, body, req.model(), current.replicas);
                            } catch (RuntimeException e) {
                                LOG.warn("a precise lookup failed; the request routes approximately", e);
                                lookup = PreciseLookup.off(PreciseLookup.ERROR, -1);
                            }
                            return routedWith(p, in, first, current, flow, req, lookup);
                        },
                        precise.executor());
                return new ProxyCore.Prepared(null, null, null, later);
            } catch (RejectedExecutionException e) {
                skip = PreciseLookup.off(PreciseLookup.SATURATED, -1);
            }
        }
        return routedWith(p, in, first, current, flow, req, skip);
    }

    private ProxyCore.Prepared routedWith(
            ProxyCore.Proxied p,
            Forwarder.Inbound in,
            RouteRequest first,
            Routing current,
            FlowRequest flow,
            ExtractedRequest req,
            PreciseLookup lookup) {
        metrics.kv().lookup(lookup);
        RouteRequest r = lookup.on() ? first.withConfirmed(lookup.match().view(req.key())) : first;
        return new ProxyCore.Prepared(forwarder.start(in, r, current, p.log, p.head.headers(), flow, lookup), null);
    }
}
