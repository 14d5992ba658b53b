package dev.cart.gateway;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.context.annotation.Bean;

/**
 * In a servlet (Spring MVC) application, logs once at start that CART cannot route there, and why: its two
 * filters are WebFlux {@code GlobalFilter}s, which the servlet gateway
 * ({@code spring-cloud-starter-gateway-server-webmvc}) does not run, so a request to a service in
 * {@code cart.services} would reach CART's balancer without a prompt key and its lease would not follow the
 * answer. The reactive gateway is what CART supports. A Spring Boot application is a servlet one whenever Spring
 * MVC is on its class path, even beside WebFlux, which is why the jar being present is not enough.
 */
@AutoConfiguration
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
class CartServletWarning {

    static final String MESSAGE = "CART cannot route in a servlet (Spring MVC) application: its filters are"
            + " WebFlux GlobalFilters, which the servlet gateway (spring-cloud-starter-gateway-server-webmvc)"
            + " does not run, so requests to cart.services would be balanced without their prompt key and their"
            + " leases would not follow the answers. Run the reactive gateway"
            + " (spring-cloud-starter-gateway-server-webflux) without Spring MVC on the class path"
            + " (or set spring.main.web-application-type=reactive).";

    private static final Logger LOG = LoggerFactory.getLogger(CartServletWarning.class);

    /** The marker whose creation logs the warning, once per application context. */
    static final class Logged {
        Logged() {
            LOG.warn(MESSAGE);
        }
    }

    @Bean
    Logged cartServletWarningLogged() {
        return new Logged();
    }
}
