package dev.cart.gateway;

import io.micrometer.core.instrument.MeterRegistry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.cloud.gateway.filter.GlobalFilter;
import org.springframework.cloud.loadbalancer.annotation.LoadBalancerClientSpecification;
import org.springframework.cloud.loadbalancer.core.ReactorServiceInstanceLoadBalancer;
import org.springframework.context.annotation.Bean;

/**
 * Puts CART into a reactive Spring Cloud Gateway: the routing state bound from {@code cart.*}
 * ({@link CartGatewayRouting}, validated at start), the global filters that make each exchange's lease follow it
 * to the end of its body ({@link CartLeaseFilter}) and extract the prompt key ({@link CartPromptFilter}) and that
 * answer a replica the gateway cannot connect to with an API-style error ({@link CartConnectFailureFilter}), and,
 * for each service named in {@code cart.services}, CART as that service's load balancer
 * ({@link CartLoadBalancerConfiguration}, registered as a default load-balancer configuration that yields to the
 * gateway's round robin for every other service). Metrics go to the application's {@link MeterRegistry} when
 * there is one.
 */
@AutoConfiguration
@ConditionalOnClass({GlobalFilter.class, ReactorServiceInstanceLoadBalancer.class})
@EnableConfigurationProperties(CartProperties.class)
public class CartGatewayAutoConfiguration {

    private static final Logger LOG = LoggerFactory.getLogger(CartGatewayAutoConfiguration.class);

    /**
     * CART's routing state, validated from {@code cart.*}; closed when the context is destroyed, which is after
     * the web server has stopped (and, with graceful shutdown, after the requests in flight have ended).
     *
     * @param properties the bound {@code cart.*} settings
     * @param registry   the application's meter registry, if it has one
     * @return the routing state
     * @throws IllegalArgumentException naming every invalid {@code cart.*} value (the application does not start)
     */
    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean
    public CartGatewayRouting cartGatewayRouting(CartProperties properties, ObjectProvider<MeterRegistry> registry) {
        if (properties.getServices().isEmpty()) {
            LOG.warn("cart.services is empty: CART balances no service (name the lb:// service ids of the LLM routes)");
        } else {
            LOG.info("CART routes services {} with policy {}", properties.getServices(), properties.getPolicy());
        }
        return new CartGatewayRouting(properties, registry.getIfAvailable());
    }

    /**
     * The filter that makes each balanced request's lease follow its exchange to the end of the answer.
     *
     * @param routing CART's routing state
     * @return the filter
     */
    @Bean
    @ConditionalOnMissingBean
    public CartLeaseFilter cartLeaseFilter(CartGatewayRouting routing) {
        return new CartLeaseFilter(routing);
    }

    /**
     * The filter that reads each balanced request's prompt key before the load balancer runs.
     *
     * @param routing CART's routing state
     * @return the filter
     */
    @Bean
    @ConditionalOnMissingBean
    public CartPromptFilter cartPromptFilter(CartGatewayRouting routing) {
        return new CartPromptFilter(routing);
    }

    /**
     * The filter that answers a replica the gateway cannot connect to with an API-style 502 or 504.
     *
     * @param routing CART's routing state
     * @return the filter
     */
    @Bean
    @ConditionalOnMissingBean
    public CartConnectFailureFilter cartConnectFailureFilter(CartGatewayRouting routing) {
        return new CartConnectFailureFilter(routing);
    }

    /**
     * CART's balancer configuration for every load-balancer child context; it acts only for {@code cart.services}.
     *
     * @return the specification registering {@link CartLoadBalancerConfiguration} as a default
     */
    @Bean
    public LoadBalancerClientSpecification cartLoadBalancerClientSpecification() {
        return new LoadBalancerClientSpecification(
                "default." + CartLoadBalancerConfiguration.class.getName(),
                new Class<?>[] {CartLoadBalancerConfiguration.class});
    }
}
