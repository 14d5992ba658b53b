package dev.cart.examples.gateway;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.web.server.context.WebServerInitializedEvent;
import org.springframework.context.ApplicationListener;
import org.springframework.context.annotation.Bean;

/**
 * A Spring Cloud Gateway whose LLM route ({@code lb://llm}, see {@code application.yaml}) is load-balanced by CART:
 * nothing here but the application class; the {@code cart-spring-cloud-gateway} dependency and {@code cart.*}
 * settings do the rest. With the {@code demo} profile, simulated replicas start in this process
 * ({@link DemoReplicas}) and become the service's instances.
 *
 * <pre>
 * java -jar examples/gateway/target/cart-gateway-example.jar --spring.profiles.active=demo
 * </pre>
 */
@SpringBootApplication
public class GatewayExample {

    public static void main(String[] args) {
        SpringApplication.run(GatewayExample.class, args);
    }

    /** Prints where the gateway listens (and, in demo mode, what to try). */
    @Bean
    ApplicationListener<WebServerInitializedEvent> announcePort() {
        return event -> {
            int port = event.getWebServer().getPort();
            DemoReplicas demo = event.getApplicationContext()
                    .getBeanProvider(DemoReplicas.class)
                    .getIfAvailable();
            System.out.println();
            System.out.println("CART gateway example listening on http://localhost:" + port
                    + (demo == null
                            ? ""
                            : " (demo: " + demo.servers().size() + " simulated replicas behind lb://llm)"));
            System.out.println("  try:  curl -N localhost:" + port
                    + "/v1/chat/completions -H 'content-type: application/json' \\");
            System.out.println(
                    "          -d '{\"model\":\"demo\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}'");
            System.out.println("        curl -s localhost:" + port + "/actuator/prometheus | grep ^cart_");
            System.out.println();
        };
    }
}
