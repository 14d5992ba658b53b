package dev.cart.gateway;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import io.netty.channel.ConnectTimeoutException;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.UnknownHostException;
import java.nio.channels.UnresolvedAddressException;
import org.jspecify.annotations.Nullable;
import org.springframework.cloud.client.ServiceInstance;
import org.springframework.cloud.client.loadbalancer.Response;
import org.springframework.cloud.gateway.filter.GatewayFilterChain;
import org.springframework.cloud.gateway.filter.GlobalFilter;
import org.springframework.cloud.gateway.route.Route;
import org.springframework.cloud.gateway.support.ServerWebExchangeUtils;
import org.springframework.core.Ordered;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.MediaType;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.web.server.ServerWebExchange;
import reactor.core.publisher.Mono;

/**
 * Answers a request whose replica could not be reached with an API-style error instead of the gateway's default
 * 500: 502 {@code replica_unreachable} when the chosen replica refused the connection or its host could not be
 * resolved, 504 {@code replica_connect_timeout} when connecting to it timed out. The body is OpenAI's error shape
 * ({@code {"error": {"message", "type", "code", "param"}}}), Anthropic's on {@code /v1/messages}
 * ({@code {"type": "error", "error": {"type", "message"}}}); the message names the replica in plain words and
 * never carries an exception's class name.
 *
 * <p>How: it runs just outside {@link CartLeaseFilter}, for routes to a service CART balances, and so also outside
 * any {@code Retry} filter of the route: it sees a connect failure only when no retry saved the request (the
 * lease of the failed attempt has been closed as failed by then). An error after the answer has started (the
 * response committed) passes through untouched, as does any other error. The replica named is the last one
 * tried (the load balancer's response in the exchange's attributes).
 *
 * <p>Thread-safe and stateless.
 */
public final class CartConnectFailureFilter implements GlobalFilter, Ordered {

    /** Just outside {@link CartLeaseFilter}. */
    public static final int ORDER = CartLeaseFilter.ORDER - 1;

    private static final JsonFactory JSON = JsonFactory.builder().build();

    private final CartGatewayRouting routing;

    /**
     * @param routing the routing state: which services CART balances, and where rejected requests are counted
     */
    public CartConnectFailureFilter(CartGatewayRouting routing) {
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
        if (uri == null || !"lb".equals(uri.getScheme()) || !routing.balances(uri.getHost())) {
            return chain.filter(exchange);
        }
        String service = uri.getHost();
        return chain.filter(exchange).onErrorResume(error -> {
            Failure failure = Failure.of(error);
            ServerHttpResponse response = exchange.getResponse();
            if (failure == null || response.isCommitted()) {
                return Mono.error(error);
            }
            routing.rejected(service, failure.code);
            String message = failure.message(replica(exchange), service);
            boolean anthropic = exchange.getRequest().getPath().value().endsWith("/v1/messages");
            return write(response, failure.status, anthropic ? anthropic(failure, message) : openAi(failure, message));
        });
    }

    /** The kinds of connect failure this filter answers, with their status and error code. */
    enum Failure {
        UNREACHABLE(502, "replica_unreachable", "api_error", "could not connect to replica %s of %s"),
        UNRESOLVED(502, "replica_unreachable", "api_error", "could not resolve the host of replica %s of %s"),
        CONNECT_TIMEOUT(504, "replica_connect_timeout", "timeout_error", "connecting to replica %s of %s timed out");

        final int status;
        final String code;
        final String anthropicType;
        private final String message;

        Failure(int status, String code, String anthropicType, String message) {
            this.status = status;
            this.code = code;
            this.anthropicType = anthropicType;
            this.message = message;
        }

        String message(String replica, String service) {
            return String.format(message, replica, service);
        }

        /**
         * The failure {@code error} is, by the first cause in its chain that tells (a connect timeout is a kind of
         * {@link ConnectException}, so it is looked for first); null when it is not a connect failure.
         */
        static @Nullable Failure of(Throwable error) {
            for (Throwable c = error; c != null; c = c.getCause()) {
                if (c instanceof ConnectTimeoutException) {
                    return CONNECT_TIMEOUT;
                }
            }
            for (Throwable c = error; c != null; c = c.getCause()) {
                if (c instanceof UnknownHostException || c instanceof UnresolvedAddressException) {
                    return UNRESOLVED;
                }
                if (c instanceof ConnectException) {
                    return UNREACHABLE;
                }
            }
            return null;
        }
    }

    /** The replica the request was last sent to, as CART names it (its base URI), or "?" if none is known. */
    static String replica(ServerWebExchange exchange) {
        Object lb = exchange.getAttribute(ServerWebExchangeUtils.GATEWAY_LOADBALANCER_RESPONSE_ATTR);
        if (lb instanceof Response<?> r && r.getServer() instanceof ServiceInstance instance) {
            return InstanceReplicas.id(instance);
        }
        URI url = exchange.getAttribute(ServerWebExchangeUtils.GATEWAY_REQUEST_URL_ATTR);
        return url == null || url.getHost() == null ? "?" : url.getScheme() + "://" + url.getAuthority();
    }

    private static byte[] openAi(Failure failure, String message) {
        return json(g -> {
            g.writeObjectFieldStart("error");
            g.writeStringField("message", message);
            g.writeStringField("type", "server_error");
            g.writeStringField("code", failure.code);
            g.writeNullField("param");
            g.writeEndObject();
        });
    }

    private static byte[] anthropic(Failure failure, String message) {
        return json(g -> {
            g.writeStringField("type", "error");
            g.writeObjectFieldStart("error");
            g.writeStringField("type", failure.anthropicType);
            g.writeStringField("message", message);
            g.writeEndObject();
        });
    }

    private interface Fields {
        void write(JsonGenerator g) throws IOException;
    }

    private static byte[] json(Fields fields) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(256);
        try (JsonGenerator g = JSON.createGenerator(out)) {
            g.writeStartObject();
            fields.write(g);
            g.writeEndObject();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out.toByteArray();
    }

    private static Mono<Void> write(ServerHttpResponse response, int status, byte[] body) {
        response.setStatusCode(HttpStatusCode.valueOf(status));
        response.getHeaders().setContentType(MediaType.APPLICATION_JSON);
        response.getHeaders().setContentLength(body.length);
        return response.writeWith(Mono.just(response.bufferFactory().wrap(body)));
    }
}
