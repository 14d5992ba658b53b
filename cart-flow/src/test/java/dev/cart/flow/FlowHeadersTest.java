package dev.cart.flow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Locale;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Bad input at the request side: the default band, a clear 400 where a value is unusable, no key kept. */
class FlowHeadersTest {

    private static final FlowHeaders H =
            FlowHeaders.builder(FlowConfig.enabledDefaults()).build(); // 3 bands, default 1

    private static FlowHeaders.Parsed parse(Map<String, String> headers) {
        return H.parse(n -> headers.get(n.toLowerCase(Locale.ROOT)), 1000, 200);
    }

    @Test
    void aPriorityThatIsNotAKnownBandIsTheDefaultBand() {
        assertEquals(0, parse(Map.of("x-cart-priority", "0")).request().band());
        assertEquals(2, parse(Map.of("x-cart-priority", " 2 ")).request().band());
        for (String bad : new String[] {"3", "-1", "high", "", "1.0", "99999999999", "0x1", "٣"}) {
            FlowHeaders.Parsed p = parse(Map.of("x-cart-priority", bad));
            assertTrue(p.ok(), bad);
            assertEquals(1, p.request().band(), "'" + bad + "' is the default band");
        }
        assertEquals(1, parse(Map.of()).request().band());
    }

    @Test
    void aMalformedDeadlineIsA400NamingTheHeaderAndRange() {
        assertEquals(1500, parse(Map.of("x-cart-deadline-ms", "1500")).request().deadlineMillis());
        assertEquals(0, parse(Map.of()).request().deadlineMillis(), "none given");
        for (String bad : new String[] {"0", "-5", "1.5", "2s", "", "600001", "99999999999999999999", "abc"}) {
            FlowHeaders.Parsed p = parse(Map.of("x-cart-deadline-ms", bad));
            assertFalse(p.ok(), bad);
            assertEquals(400, p.status());
            assertTrue(p.error().contains("x-cart-deadline-ms") && p.error().contains("600000"), p.error());
            assertFalse(!bad.isEmpty() && p.error().contains(bad) && bad.length() > 3, "the value is not echoed");
        }
    }

    @Test
    void theTenantIsADigestNeverTheKeyAndAHugeTenantHeaderIsA400() {
        String key = "sk-live-0123456789abcdef";
        FlowHeaders.Parsed bearer = parse(Map.of("authorization", "Bearer " + key));
        FlowHeaders.Parsed anthropic = parse(Map.of("x-api-key", key));
        assertEquals(bearer.request().tenant(), anthropic.request().tenant(), "the same key, the same tenant");
        assertTrue(
                bearer.request().tenant().matches("t-[0-9a-f]{16}"),
                bearer.request().tenant());
        assertFalse(bearer.request().tenant().contains("0123456789"));
        assertNotEquals(
                bearer.request().tenant(),
                parse(Map.of("x-api-key", key + "x")).request().tenant());
        // the tenant header wins over the key, and is digested as well
        FlowHeaders.Parsed named = parse(Map.of("x-cart-tenant", "acme", "authorization", "Bearer " + key));
        assertNotEquals(bearer.request().tenant(), named.request().tenant());
        assertTrue(named.request().tenant().matches("t-[0-9a-f]{16}"));
        assertEquals(FlowRequest.ANONYMOUS, parse(Map.of()).request().tenant());
        assertEquals(
                FlowRequest.ANONYMOUS,
                parse(Map.of("authorization", "Basic abc")).request().tenant());
        FlowHeaders.Parsed huge = parse(Map.of("x-cart-tenant", "x".repeat(1 << 20)));
        assertEquals(400, huge.status());
        assertTrue(huge.error().length() < 200, "the error does not carry the value");
    }

    @Test
    void theCostIsThePromptAndTheOutputAskedFor() {
        assertEquals(1200, parse(Map.of()).request().cost());
        assertEquals(1256, H.parse(n -> null, 1000, 0).request().cost(), "default output when none asked");
        assertEquals(1, H.parse(n -> null, -5, -1).request().cost() >= 1 ? 1 : 0);
    }

    @Test
    void badSettingsNameTheSettingAndRange() {
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> FlowHeaders.builder(FlowConfig.defaults()).tenantHeader("bad header"));
        assertTrue(e.getMessage().contains("flow.tenant_header"));
        e = assertThrows(
                IllegalArgumentException.class,
                () -> FlowConfig.enabledDefaults().withBands(2, 2));
        assertTrue(
                e.getMessage().contains("flow.default_band") && e.getMessage().contains("[0, 1]"), e.getMessage());
        e = assertThrows(
                IllegalArgumentException.class,
                () -> FlowConfig.enabledDefaults().withMaxDepth(0));
        assertTrue(e.getMessage().contains("flow.max_depth"));
    }
}
