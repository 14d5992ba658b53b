package dev.cart.gateway;

import dev.cart.extract.Endpoint;
import dev.cart.flow.FlowResult;
import dev.cart.flow.ShedReason;
import java.net.URI;
import org.reactivestreams.Publisher;
import org.reactivestreams.Subscription;
import org.springframework.cloud.gateway.filter.GatewayFilterChain;
import org.springframework.cloud.gateway.filter.GlobalFilter;
import org.springframework.cloud.gateway.filter.NettyWriteResponseFilter;
import org.springframework.cloud.gateway.route.Route;
import org.springframework.cloud.gateway.support.NotFoundException;
import org.springframework.cloud.gateway.support.ServerWebExchangeUtils;
import org.springframework.core.Ordered;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.http.server.reactive.ServerHttpResponseDecorator;
import org.springframework.web.server.ServerWebExchange;
import reactor.core.CoreSubscriber;
import reactor.core.publisher.Flux;
import reactor.core.publisher.FluxOperator;
import reactor.core.publisher.Mono;
import reactor.util.context.Context;

/**
 * Makes the lease of a request to a service CART balances follow the whole exchange, response body included.
 *
 * <p>How: for a route whose URI is {@code lb://<service>} with the service in {@code cart.services}, it puts a
 * {@link CartExchange} in the exchange's attributes (the prompt filter fills in the key, the load balancer the
 * lease) and wraps the response so that its body reports its first bytes and the usage it carries. It runs just
 * before the gateway's {@link NettyWriteResponseFilter}, which writes the replica's body to the client after the
 * rest of the chain has returned: wrapping that filter is what makes the end of this filter's chain the end of the
 * body (completion, error or client cancellation), where the lease is closed. When no replica can take the
 * request, the answer is an OpenAI-style 503 {@code no_replica} with {@code Retry-After: 1}; when the admission
 * queue ({@code cart.flow.enabled}) sheds it, a 429 with the queue's {@code Retry-After} and the shed reason as
 * its code (Anthropic's error shape on {@code /v1/messages}).
 *
 * <p>Thread-safe and stateless: per-request state lives in the exchange.
 */
public final class CartLeaseFilter implements GlobalFilter, Ordered {

    /** Just before the filter that writes the response body. */
    public static final int ORDER = NettyWriteResponseFilter.WRITE_RESPONSE_FILTER_ORDER - 1;

    private final CartGatewayRouting routing;

    /**
     * A filter over {@code routing}'s services.
     *
     * @param routing the routing state: which services CART balances, and where rejected requests are counted
     */
    public CartLeaseFilter(CartGatewayRouting routing) {
        this.routing = routing;
    }

    @Override
    public int getOrder() {
        return ORDER;
    }

    @Override
    public Mono<Void> filter(ServerWebExchange exchange, GatewayFilterChain chain) {
        Route route = exchange.getAttribute(ServerWebExchangeUtils.GATEWAY_ROUTE_ATTR);
        URI uri = route == null ? null : route.getUri();
        if (uri == null
                || !"lb".equals(uri.getScheme())
                || !routing.balances(uri.getHost())
                || exchange.getAttribute(CartExchange.ATTRIBUTE) != null) {
            return chain.filter(exchange);
        }
        CartExchange state = new CartExchange(uri.getHost());
        exchange.getAttributes().put(CartExchange.ATTRIBUTE, state);
        ServerHttpResponse original = exchange.getResponse();
        ServerWebExchange observed = exchange.mutate()
                .response(new ObservedResponse(original, state))
                .build();
        return chain.filter(observed)
                .onErrorResume(NotFoundException.class, e -> {
                    FlowResult shed = state.shedResult();
                    if (shed != null && !original.isCommitted()) {
                        return shed(original, state, shed);
                    }
                    if (!state.wasNoReplica() || original.isCommitted()) {
                        return Mono.error(e);
                    }
                    routing.rejected(state.serviceId(), "no_replica");
                    original.getHeaders().set("Retry-After", "1");
                    return CartPromptFilter.error(
                            original,
                            503,
                            "server_error",
                            "no_replica",
                            null,
                            "no replica of " + state.serviceId() + " can take the request now");
                })
                .doOnError(state::error)
                .doFinally(signal -> state.finish(signal, status(original)));
    }

    /**
     * The admission queue shed the request: 429 (or 503 when the service cannot serve at all) with
     * {@code Retry-After} and an error in the request's API shape, its code the shed reason.
     */
    private Mono<Void> shed(ServerHttpResponse response, CartExchange state, FlowResult shed) {
        ShedReason reason = shed.shedReason();
        String code = reason == null ? "shed" : reason.code();
        routing.rejected(state.serviceId(), code);
        response.getHeaders().set("Retry-After", Long.toString(Math.max(1, shed.retryAfterSeconds())));
        boolean busy = shed.status() == 429;
        return CartPromptFilter.error(
                response,
                state.endpoint(),
                shed.status(),
                busy
                        ? "rate_limit_error"
                        : (state.endpoint() == Endpoint.MESSAGES ? "overloaded_error" : "server_error"),
                code,
                busy
                        ? "every replica of " + state.serviceId()
                                + " is busy and the request could not be served within" + " its deadline (" + code
                                + "); retry after the Retry-After delay"
                        : "no replica of " + state.serviceId() + " can take the request now (" + code + ")");
    }

    static int status(ServerHttpResponse r) {
        HttpStatusCode s = r.getStatusCode();
        return s == null ? 0 : s.value();
    }

    /** The response as the exchange writes it: its body reports first bytes and usage to the exchange's lease. */
    private static final class ObservedResponse extends ServerHttpResponseDecorator {
        private final CartExchange state;

        ObservedResponse(ServerHttpResponse delegate, CartExchange state) {
            super(delegate);
            this.state = state;
        }

        @Override
        public Mono<Void> writeWith(Publisher<? extends DataBuffer> body) {
            state.bodyStarts(getHeaders());
            return super.writeWith(new ObservedBody(Flux.from(body), state, this));
        }

        @Override
        public Mono<Void> writeAndFlushWith(Publisher<? extends Publisher<? extends DataBuffer>> body) {
            state.bodyStarts(getHeaders());
            BodyEnd end = new BodyEnd(() -> state.bodyEnded(status(this)));
            return super.writeAndFlushWith(Flux.from(body)
                    .map(p -> {
                        end.chunkStarted();
                        return Flux.from(p)
                                .doOnNext(state::bytes)
                                .doOnComplete(end::chunkDone)
                                .doOnCancel(state::bodyAbandoned);
                    })
                    .doOnComplete(end::allChunksStarted)
                    .doOnCancel(state::bodyAbandoned));
        }
    }

    /**
     * The body of a response written at once ({@code writeWith}) as it passes: each buffer reported to the
     * exchange before it goes on, the end ({@link CartExchange#bodyEnded}) before the writer hears of it, the
     * writer's cancellation ({@link CartExchange#bodyAbandoned}) before the replica's body is cancelled. One
     * operator and one subscriber object per response, where a chain of peek operators took three of each and
     * their callbacks.
     */
    private static final class ObservedBody extends FluxOperator<DataBuffer, DataBuffer> {
        private final CartExchange state;
        private final ServerHttpResponse response;

        ObservedBody(Flux<? extends DataBuffer> source, CartExchange state, ServerHttpResponse response) {
            super(source);
            this.state = state;
            this.response = response;
        }

        @Override
        public void subscribe(CoreSubscriber<? super DataBuffer> actual) {
            source.subscribe(new Observer(actual, state, response));
        }
    }

    private static final class Observer implements CoreSubscriber<DataBuffer>, Subscription {
        private final CoreSubscriber<? super DataBuffer> actual;
        private final CartExchange state;
        private final ServerHttpResponse response;

        @SuppressWarnings("NullAway.Init") // set by onSubscribe, which Reactive Streams calls before anything else
        private Subscription upstream;

        Observer(CoreSubscriber<? super DataBuffer> actual, CartExchange state, ServerHttpResponse response) {
            this.actual = actual;
            this.state = state;
            this.response = response;
        }

        @Override
        public Context currentContext() {
            return actual.currentContext();
        }

        @Override
        public void onSubscribe(Subscription s) {
            upstream = s;
            actual.onSubscribe(this);
        }

        @Override
        public void onNext(DataBuffer b) {
            state.bytes(b);
            actual.onNext(b);
        }

        @Override
        public void onError(Throwable t) {
            actual.onError(t);
        }

        @Override
        public void onComplete() {
            state.bodyEnded(status(response));
            actual.onComplete();
        }

        @Override
        public void request(long n) {
            upstream.request(n);
        }

        @Override
        public void cancel() {
            state.bodyAbandoned();
            upstream.cancel();
        }
    }

    /**
     * The end of a body written chunk by chunk ({@code writeAndFlushWith}): the outer publisher completes once
     * its last chunk has been handed over, possibly before that chunk's bytes have passed; the body has ended
     * when the outer publisher has completed and every chunk has. Runs {@code ended} once.
     */
    private static final class BodyEnd {
        private final Runnable ended;
        private int started;
        private int done;
        private boolean allStarted;
        private boolean fired;

        BodyEnd(Runnable ended) {
            this.ended = ended;
        }

        synchronized void chunkStarted() {
            started++;
        }

        synchronized void chunkDone() {
            done++;
            fireIfEnded();
        }

        synchronized void allChunksStarted() {
            allStarted = true;
            fireIfEnded();
        }

        private void fireIfEnded() {
            if (allStarted && done == started && !fired) {
                fired = true;
                ended.run();
            }
        }
    }
}
