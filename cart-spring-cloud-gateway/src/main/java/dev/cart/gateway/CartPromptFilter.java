package dev.cart.gateway;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import dev.cart.extract.Endpoint;
import dev.cart.extract.ExtractedRequest;
import dev.cart.extract.ExtractionException;
import dev.cart.flow.FlowHeaders;
import dev.cart.flow.FlowRequest;
import io.netty.buffer.ByteBuf;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.util.Objects;
import java.util.function.BiConsumer;
import org.jspecify.annotations.Nullable;
import org.springframework.cloud.gateway.filter.GatewayFilterChain;
import org.springframework.cloud.gateway.filter.GlobalFilter;
import org.springframework.cloud.gateway.filter.ReactiveLoadBalancerClientFilter;
import org.springframework.cloud.gateway.support.ServerWebExchangeUtils;
import org.springframework.core.Ordered;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.core.io.buffer.DataBufferLimitException;
import org.springframework.core.io.buffer.DataBufferUtils;
import org.springframework.core.io.buffer.DefaultDataBufferFactory;
import org.springframework.core.io.buffer.NettyDataBuffer;
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
 * {@code /v1/chat/completions}, {@code /v1/completions} or {@code /v1/messages}, it joins the body's buffers
 * once ({@code DataBufferUtils.join} with {@code cart.max-body-bytes} as its limit, so a body past it fails while
 * being read: 413; Netty's buffers are joined without a copy), copies the joined bytes once into the array
 * cart-extract's {@code PromptExtractor} reads the key from, and replays the joined buffer to the replica as the
 * gateway's own {@code cacheRequestBody} does (kept under {@link ServerWebExchangeUtils#CACHED_REQUEST_BODY_ATTR},
 * each read a retained slice, released by the gateway's {@code RemoveCachedBodyFilter} when the exchange ends).
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

    private static final Endpoint[] ENDPOINTS = Endpoint.values();

    /** Stands for a request without body buffers (never read or written). */
    private static final DataBuffer NO_BODY = DefaultDataBufferFactory.sharedInstance.allocateBuffer(0);

    private final CartGatewayRouting routing;
    private final BiConsumer<String, String> rejected;

    /**
     * A filter reading keys with {@code routing}'s extractor.
     *
     * @param routing the routing state: the extractor, the body limit, and where rejected requests are counted
     */
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
            Mono<Void> bad = flowInputs(exchange, state, null, 0);
            return bad != null ? bad : chain.filter(exchange);
        }
        int max = routing.maxBodyBytes();
        if (request.getHeaders().getContentLength() > max) {
            return tooLarge(exchange, serviceId, max);
        }
        // A filter before this one cached the body already (the gateway's cacheRequestBody): read that buffer, as
        // the gateway itself does, rather than joining the replayed body into a second one that would replace it
        // in the attribute and leave it unreleased.
        if (exchange.getAttribute(ServerWebExchangeUtils.CACHED_REQUEST_BODY_ATTR) instanceof DataBuffer cached) {
            return cached.readableByteCount() > max
                    ? tooLarge(exchange, serviceId, max)
                    : route(exchange, chain, state, endpoint, request, cached);
        }
        return DataBufferUtils.join(request.getBody(), max) // the limit applies while joining
                .defaultIfEmpty(NO_BODY)
                .flatMap(body -> route(exchange, chain, state, endpoint, request, body == NO_BODY ? null : body))
                .onErrorResume(DataBufferLimitException.class, e -> tooLarge(exchange, serviceId, max));
    }

    /**
     * The body is joined ({@code body}: its buffers as one, or null when it had none): reads the key from one copy
     * of its bytes, and passes the request on with the joined buffer replayed to the replica.
     */
    private Mono<Void> route(
            ServerWebExchange exchange,
            GatewayFilterChain chain,
            CartExchange state,
            Endpoint endpoint,
            ServerHttpRequest request,
            @Nullable DataBuffer body) {
        byte[] bytes = bytes(body);
        if (body != null) { // released by the gateway's RemoveCachedBodyFilter when the exchange ends
            exchange.getAttributes().put(ServerWebExchangeUtils.CACHED_REQUEST_BODY_ATTR, body);
        }
        ExtractedRequest extracted;
        try {
            extracted = routing.extractor().extract(endpoint, bytes);
        } catch (ExtractionException e) {
            rejected.accept(state.serviceId(), e.code());
            return error(
                    exchange.getResponse(),
                    e.status(),
                    e.type(),
                    e.code(),
                    e.param(),
                    Objects.requireNonNullElse(e.getMessage(), e.code()));
        }
        state.extracted(endpoint, extracted);
        Mono<Void> bad = flowInputs(exchange, state, endpoint, extracted.key().length());
        if (bad != null) {
            return bad;
        }
        return chain.filter(exchange.mutate()
                .request(new CachedBody(request, exchange, bytes))
                .build());
    }

    /**
     * With the admission queue on, reads the request's band, tenant and deadline from its headers into the
     * exchange; returns the 400 that answers an unusable header, or null to go on.
     */
    private @Nullable Mono<Void> flowInputs(
            ServerWebExchange exchange, CartExchange state, @Nullable Endpoint endpoint, long units) {
        if (!routing.flowEnabled()) {
            return null;
        }
        HttpHeadersLookup headers = new HttpHeadersLookup(exchange.getRequest());
        FlowHeaders.Parsed in = routing.flowHeaders().parse(headers, units, 0);
        FlowRequest request = in.request();
        if (request == null) {
            rejected.accept(state.serviceId(), "bad_flow_header");
            return error(
                    exchange.getResponse(),
                    endpoint,
                    400,
                    "invalid_request_error",
                    "bad_header",
                    Objects.requireNonNullElse(in.error(), "a flow-control header is not usable"));
        }
        state.flow(request);
        return null;
    }

    /** A request's first value of a header, by name (ignoring case), or null. */
    private record HttpHeadersLookup(ServerHttpRequest request)
            implements java.util.function.Function<String, @Nullable String> {
        @Override
        public @Nullable String apply(String name) {
            return request.getHeaders().getFirst(name);
        }
    }

    /**
     * Writes an error in the shape of the request's API: Anthropic's
     * ({@code {"type":"error","error":{"type","message"}}}) on {@code /v1/messages}, OpenAI's otherwise.
     */
    static Mono<Void> error(
            ServerHttpResponse response,
            @Nullable Endpoint endpoint,
            int status,
            String type,
            String code,
            String message) {
        if (endpoint != Endpoint.MESSAGES) {
            return error(response, status, type, code, null, message);
        }
        if (response.isCommitted()) {
            return Mono.empty();
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream(256);
        try (JsonGenerator g = JSON.createGenerator(out)) {
            g.writeStartObject();
            g.writeStringField("type", "error");
            g.writeObjectFieldStart("error");
            g.writeStringField("type", type);
            g.writeStringField("message", message);
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

    /** The endpoint a request path ends with (a route may add a prefix), or null. */
    static @Nullable Endpoint endpoint(String path) {
        for (Endpoint e : ENDPOINTS) {
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

    /** The joined body's bytes (empty when there was none), copied once without moving the buffer. */
    private static byte[] bytes(@Nullable DataBuffer body) {
        if (body == null) {
            return new byte[0];
        }
        byte[] out = new byte[body.readableByteCount()];
        if (body instanceof NettyDataBuffer n) {
            ByteBuf b = n.getNativeBuffer();
            b.getBytes(b.readerIndex(), out);
        } else {
            body.toByteBuffer(body.readPosition(), ByteBuffer.wrap(out), 0, out.length);
        }
        return out;
    }

    /** Writes {@code {"error": {"message", "type", "code", "param"}}} with {@code status}. */
    static Mono<Void> error(
            ServerHttpResponse response, int status, String type, String code, @Nullable String param, String message) {
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

    /**
     * The request with its body replayed from the joined buffer kept in the exchange's
     * {@link ServerWebExchangeUtils#CACHED_REQUEST_BODY_ATTR} (as the gateway's own {@code cacheRequestBody} does:
     * each read is a retained slice, so a retry can read it again), or from the bytes read from it where the
     * buffer is not Netty's. Once the gateway has released the buffer at the exchange's end, the body is empty.
     */
    private static final class CachedBody extends ServerHttpRequestDecorator {
        private final ServerWebExchange exchange;
        private final byte[] bytes;

        CachedBody(ServerHttpRequest delegate, ServerWebExchange exchange, byte[] bytes) {
            super(delegate);
            this.exchange = exchange;
            this.bytes = bytes;
        }

        @Override
        public Flux<DataBuffer> getBody() {
            return Mono.fromSupplier(this::replay).flux();
        }

        private @Nullable DataBuffer replay() {
            DataBuffer body = exchange.getAttribute(ServerWebExchangeUtils.CACHED_REQUEST_BODY_ATTR);
            if (body == null) {
                return null; // no body, or the exchange has ended
            }
            if (body instanceof NettyDataBuffer n) {
                return n.factory().wrap(n.getNativeBuffer().retainedSlice());
            }
            return body.factory().wrap(bytes);
        }
    }
}
