package dev.cart.gateway;

import java.util.List;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.cloud.loadbalancer.core.ReactorServiceInstanceLoadBalancer;
import org.springframework.cloud.loadbalancer.core.ServiceInstanceListSupplier;
import org.springframework.cloud.loadbalancer.support.LoadBalancerClientFactory;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Condition;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;
import org.springframework.core.type.AnnotatedTypeMetadata;

/**
 * The load-balancer configuration CART contributes to each service's load-balancer context (Spring Cloud
 * LoadBalancer builds one child context per service id). For a service listed in {@code cart.services} it defines
 * the {@link ReactorServiceInstanceLoadBalancer} as {@link CartLoadBalancer}, fed by that context's
 * {@link ServiceInstanceListSupplier}; for any other service it defines nothing, so the gateway's default
 * (round robin) applies. Not meant to be component-scanned.
 */
@Configuration(proxyBeanMethods = false)
public class CartLoadBalancerConfiguration {

    @Bean
    @Conditional(CartService.class)
    ReactorServiceInstanceLoadBalancer cartLoadBalancer(
            Environment environment, LoadBalancerClientFactory factory, CartGatewayRouting routing) {
        String serviceId = LoadBalancerClientFactory.getName(environment);
        return new CartLoadBalancer(
                routing.service(serviceId), factory.getLazyProvider(serviceId, ServiceInstanceListSupplier.class));
    }

    /** True in the load-balancer context of a service listed in {@code cart.services}. */
    static final class CartService implements Condition {
        @Override
        public boolean matches(ConditionContext context, AnnotatedTypeMetadata metadata) {
            String serviceId = context.getEnvironment().getProperty(LoadBalancerClientFactory.PROPERTY_NAME);
            List<String> services = Binder.get(context.getEnvironment())
                    .bind("cart.services", Bindable.listOf(String.class))
                    .orElse(List.of());
            return serviceId != null && services.contains(serviceId);
        }
    }
}
