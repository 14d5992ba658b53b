package dev.cart.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/** {@code cart.*} as a gateway operator writes it: bound by Boot, checked at start, every problem named. */
class CartConfigurationTest {

    private final ApplicationContextRunner runner =
            new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(CartGatewayAutoConfiguration.class));

    private static String failure(Throwable t) {
        StringBuilder b = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause()) {
            b.append(c.getMessage()).append('\n');
        }
        return b.toString();
    }

    @Test
    void defaultsMatchTheProxysCacheSection() {
        CartProperties p = new CartProperties();
        assertEquals("cache_aware", p.getPolicy());
        assertEquals(1_000_000, p.getMaxTreeSize());
        assertEquals(64, p.getBlockChars());
        assertEquals(60, p.getEvictionIntervalSecs());
        assertEquals(-1, p.getDailyCleanupHourUtc());
        assertEquals(0, p.getRouteTtlSecs());
        assertEquals("on_route", p.getLearn());
        assertTrue(p.isFeedback());
        assertEquals(16, p.getBlockTokens());
        assertEquals(256, p.getMaxLoad());
        assertEquals(32 * 1024 * 1024, p.getMaxBodyBytes());
        assertTrue(CartGatewayRouting.validate(p, CartGatewayRouting.policySettings(p))
                .isEmpty());
    }

    @Test
    void kebabAndProxySpellingsBindAndTheBeansStart() {
        runner.withPropertyValues(
                        "cart.services=llm,chat",
                        "cart.match_abs_threshold=4096",
                        "cart.threshold=0.5",
                        "cart.guard=median",
                        "cart.prefill-aware=false")
                .run(context -> {
                    assertNull(context.getStartupFailure(), () -> failure(context.getStartupFailure()));
                    CartProperties p = context.getBean(CartProperties.class);
                    assertEquals(4096, p.getMatchAbsThreshold());
                    assertEquals(List.of("llm", "chat"), p.getServices());
                    CartGatewayRouting routing = context.getBean(CartGatewayRouting.class);
                    assertTrue(routing.balances("llm"));
                    assertFalse(routing.balances("other"));
                    assertTrue(context.containsBean("cartLeaseFilter"));
                    assertTrue(context.containsBean("cartPromptFilter"));
                });
    }

    @Test
    void everyBadValueIsNamedWithItsRange() {
        runner.withPropertyValues(
                        "cart.services=llm",
                        "cart.threshold=1.5",
                        "cart.block-chars=0",
                        "cart.learn=sometimes",
                        "cart.max-load=0",
                        "cart.daily-cleanup-hour-utc=24",
                        "cart.tokenizer=gpt2",
                        "cart.balance-rel-threshold=0.5")
                .run(context -> {
                    String msg = failure(context.getStartupFailure());
                    for (String expected : List.of(
                            "cart.threshold",
                            "[0, 1]",
                            "1.5",
                            "cart.block-chars: must be in [1, 65536], was 0",
                            "cart.learn: must be one of on_route, on_success",
                            "cart.max-load: must be >= 1, was 0",
                            "cart.daily-cleanup-hour-utc: must be in [-1, 23], was 24",
                            "cart.tokenizer",
                            "cart.balance-rel-threshold")) {
                        assertTrue(msg.contains(expected), "'" + expected + "' in:\n" + msg);
                    }
                });
    }

    @Test
    void theAdmissionQueueIsOffByDefaultWithTheProxysFlowDefaults() {
        CartProperties.Flow f = new CartProperties().getFlow();
        assertFalse(f.isEnabled());
        assertEquals(1024, f.getMaxDepth());
        assertEquals(2000, f.getMaxWaitMs());
        assertEquals(3, f.getBands());
        assertEquals(1, f.getDefaultBand());
        assertEquals(50, f.getAffinityWaitMs());
        assertEquals(4, f.getHotSpotDepth());
        assertEquals(3, f.getHotSpotMaxHolders());
        assertEquals(10, f.getTenantLabels());
        assertEquals(100, f.getRecheckIntervalMs());
        assertEquals("x-cart-priority", f.getPriorityHeader());
        assertEquals("x-cart-tenant", f.getTenantHeader());
        assertEquals("x-cart-deadline-ms", f.getDeadlineHeader());
        assertEquals(dev.cart.flow.FlowConfig.defaults(), CartGatewayRouting.flowConfig(f));
    }

    @Test
    void badAdmissionQueueValuesAreNamedUnderCartFlow() {
        runner.withPropertyValues(
                        "cart.services=llm",
                        "cart.flow.enabled=true",
                        "cart.flow.max-depth=0",
                        "cart.flow.tenant-header= ")
                .run(context -> {
                    String msg = failure(context.getStartupFailure());
                    for (String expected : List.of(
                            "cart.flow.max-depth: must be in [1, 1000000], was 0",
                            "cart.flow.tenant-header: must name an HTTP header")) {
                        assertTrue(msg.contains(expected), "'" + expected + "' in:\n" + msg);
                    }
                });
        runner.withPropertyValues("cart.flow.max_wait_ms=1500", "cart.flow.reserve-ratio=0.2")
                .run(context -> {
                    assertNull(context.getStartupFailure(), () -> failure(context.getStartupFailure()));
                    CartProperties.Flow f =
                            context.getBean(CartProperties.class).getFlow();
                    assertEquals(1500, f.getMaxWaitMs());
                    assertEquals(0.2, f.getReserveRatio());
                });
    }

    @Test
    void anUnknownPolicyListsTheKnownOnes() {
        runner.withPropertyValues("cart.policy=fastest").run(context -> {
            String msg = failure(context.getStartupFailure());
            assertTrue(msg.contains("cart.policy: unknown routing policy 'fastest'"), msg);
            assertTrue(msg.contains("cache_aware") && msg.contains("round_robin"), msg);
        });
    }

    @Test
    void aMisspelledKeyStopsTheStart() {
        runner.withPropertyValues("cart.treshold=0.5").run(context -> {
            String msg = failure(context.getStartupFailure());
            assertTrue(msg.contains("treshold"), msg);
        });
    }
}
