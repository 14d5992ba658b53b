package dev.cart.gateway;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import dev.cart.extract.Endpoint;
import dev.cart.extract.ExtractedRequest;
import dev.cart.extract.ExtractionException;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.util.function.BiConsumer;
import org.springframework.cloud.gateway.filter.GatewayFilterChain;
import org.springframework.cloud.gateway.filter.GlobalFilter;
import org.springframework.cloud.gateway.filter.ReactiveLoadBalancerClientFilter;
import org.springframework.cloud.gateway.support.ServerWebExchangeUtils;
import org.springframework.core.Ordered;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.http.HttpMethod;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.MediaType;
import org.springframework.http.server.reactive.ServerHttpRequest;
import org.springframework.http.server.reactive.ServerHttpRequestDecorator;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.web.server.ServerWebExchange;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Reads the prompt key of a request to a service CART balances, once, just before the load balancer runs
 * (the exchange state set up by {@link CartLeaseFilter} marks those requests).
 *
 * <p>How: it runs after the route's own filters and just before {@link ReactiveLoadBalancerClientFilter}, so it
 * sees the path the replica will see. For {@code POST} requests whose path ends with
 * {@code /v1/chat/completions}, {@code /v1/completions} or {@code /v1/messages}, it caches the body with the
 * gateway's own mechanism ({@link ServerWebExchangeUtils#cacheRequestBody}: the body is joined once and
 * replayed to the upstream; the gateway's {@code RemoveCachedBodyFilter} releases it), reading at most
 * {@code cart.max-body-bytes} (beyond it: 413), and extracts the key with cart-extract's {@code PromptExtractor}.
 * A body it cannot read is answered here with the extractor's status (400 for bad JSON) and an OpenAI-style
 * JSON error, never sent upstream. Other requests to the service are routed by load alone. The key goes into
 * the exchange's state ({@link CartExchange}), where {@link CartLoadBalancer} finds it.
 *
 * <p>Thread-safe and stateless: per-request state lives in the exchange.
 */
public final class CartPromptFilter implements GlobalFilter, Ordered {

    /** Just before the load balancer filter. */
    public static final int ORDER = ReactiveLoadBalancerClientFilter.LOAD_BALANCER_CLIENT_FILTER_ORDER - 50;

    private static final JsonFactory JSON = JsonFactory.builder().build();

    private final CartGatewayRouting routing;
    private final BiConsumer<String, String> rejected;

    public CartPromptFilter(CartGatewayRouting routing) {
        this.routing = routing;
        this.rejected = routing::rejected;
    }

    @Override
    public int getOrder() {
        return ORDER;
    }

    @Override
    public Mono<Void> filter(ServerWebExchange exchange, GatewayFilterChain chain) {
        CartExchange state = exchange.getAttribute(CartExchange.ATTRIBUTE);
        if (state == null || state.extracted()) { // not CART's, or the chain runs again (a retry): key known
            return chain.filter(exchange);
        }
        String serviceId = state.serviceId();
        ServerHttpRequest request = exchange.getRequest();
        Endpoint endpoint = HttpMethod.POST.equals(request.getMethod())
                ? endpoint(request.getPath().value())
                : null;
        if (endpoint == null) {
            state.routeByLoad();
            return chain.filter(exchange);
        }
        int max = routing.maxBodyBytes();
        if (request.getHeaders().getContentLength() > max) {
            return tooLarge(exchange, serviceId, max);
        }
        ServerWebExchange limited =
                exchange.mutate().request(new LimitedBody(request, max)).build();
        return ServerWebExchangeUtils.cacheRequestBody(limited, cached -> {
                    ExtractedRequest extracted;
                    try {
                        extracted = routing.extractor().extract(endpoint, bytes(limited));
                    } catch (ExtractionException e) {
                        rejected.accept(serviceId, e.code());
                        return error(exchange.getResponse(), e.status(), e.type(), e.code(), e.param(), e.getMessage());
                    }
                    state.extracted(endpoint, extracted);
                    return chain.filter(
                            cached == limited.getRequest()
                                    ? limited
                                    : limited.mutate().request(cached).build());
                })
                .onErrorResume(BodyTooLarge.class, e -> tooLarge(exchange, serviceId, max));
    }

    /** The endpoint a request path ends with (a route may add a prefix), or null. */
    static Endpoint endpoint(String path) {
        for (Endpoint e : Endpoint.values()) {
            if (path.endsWith(e.path())) {
                return e;
            }
        }
        return null;
    }

    private Mono<Void> tooLarge(ServerWebExchange exchange, String serviceId, int max) {
        rejected.accept(serviceId, "body_too_large");
        return error(
                exchange.getResponse(),
                413,
                "invalid_request_error",
                "body_too_large",
                null,
                "the request body exceeds cart.max-body-bytes (" + max + " bytes)");
    }

    /** The cached body's bytes (empty when there was none), copied without moving the cached buffer. */
    private static byte[] bytes(ServerWebExchange exchange) {
        DataBuffer body = exchange.getAttribute(ServerWebExchangeUtils.CACHED_REQUEST_BODY_ATTR);
        if (body == null) {
            return new byte[0];
        }
        byte[] out = new byte[body.readableByteCount()];
        body.toByteBuffer(body.readPosition(), ByteBuffer.wrap(out), 0, out.length);
        return out;
    }

    /** Writes {@code {"error": {"message", "type", "code", "param"}}} with {@code status}. */
    static Mono<Void> error(
            ServerHttpResponse response, int status, String type, String code, String param, String message) {
        if (response.isCommitted()) {
            return Mono.empty();
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream(256);
        try (JsonGenerator g = JSON.createGenerator(out)) {
            g.writeStartObject();
            g.writeObjectFieldStart("error");
            g.writeStringField("message", message);
            g.writeStringField("type", type);
            g.writeStringField("code", code);
            if (param == null) {
                g.writeNullField("param");
            } else {
                g.writeStringField("param", param);
            }
            g.writeEndObject();
            g.writeEndObject();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        response.setStatusCode(HttpStatusCode.valueOf(status));
        response.getHeaders().setContentType(MediaType.APPLICATION_JSON);
        response.getHeaders().setContentLength(out.size());
        return response.writeWith(Mono.just(response.bufferFactory().wrap(out.toByteArray())));
    }

    /** The request body, failing with {@link BodyTooLarge} past {@code max} bytes. */
    private static final class LimitedBody extends ServerHttpRequestDecorator {
        private final int max;

        LimitedBody(ServerHttpRequest delegate, int max) {
            super(delegate);
            this.max = max;
        }

        @Override
        public Flux<DataBuffer> getBody() {
            return Flux.defer(() -> {
                long[] seen = {0};
                return super.getBody().handle((b, sink) -> {
                    seen[0] += b.readableByteCount();
                    if (seen[0] > max) {
                        org.springframework.core.io.buffer.DataBufferUtils.release(b);
                        sink.error(new BodyTooLarge());
                    } else {
                        sink.next(b);
                    }
                });
            });
        }
    }

    private static final class BodyTooLarge extends RuntimeException {
        private static final long serialVersionUID = 1L;

        BodyTooLarge() {
            super("request body too large", null, false, false);
        }
    }
}
