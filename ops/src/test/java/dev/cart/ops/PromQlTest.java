package dev.cart.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class PromQlTest {

    @Test
    void aThresholdLeavesItsSignal() {
        assertEquals(List.of("cart_replicas_healthy"), PromQl.signals("cart_replicas_healthy == 0"));
        assertEquals(List.of("up{job=\"cart\"}"), PromQl.signals("up{job=\"cart\"} == 0"));
        assertEquals(List.of("x"), PromQl.signals("x > -1"));
        assertEquals(List.of("x"), PromQl.signals("x >= 1e-3"));
        assertEquals(List.of("x"), PromQl.signals("0.5 < x"));
    }

    @Test
    void setOperatorsAndParenthesesSplitEveryOperand() {
        assertEquals(List.of("a / b", "c"), PromQl.signals("(a / b > 0.05) and on (job) (c > bool 0.1)"));
        assertEquals(
                List.of("r", "0.5 * avg", "avg", "t"), PromQl.signals("r < 0.5 * avg\nand avg > 0.2\nand t > 0.1"));
        assertEquals(List.of("a", "b"), PromQl.signals("a unless ignoring (x) group_left (y) b"));
        assertEquals(List.of("a", "b"), PromQl.signals("a or b"));
    }

    @Test
    void filtersInsideFunctionsArithmeticMatchersAndStringsStay() {
        assertEquals(List.of("a / (b > 0)"), PromQl.signals("a / (b > 0)"));
        assertEquals(
                List.of("sum by (job) (x{reason!=\"a\", s=~\"b|c\", e!~\"/health|/v1\"})"),
                PromQl.signals("sum by (job) (x{reason!=\"a\", s=~\"b|c\", e!~\"/health|/v1\"})"));
        assertEquals(List.of("x{l=\"a > b and c\"}"), PromQl.signals("x{l=\"a > b and c\"} > 1"));
        assertEquals(List.of("rate(x[5m])"), PromQl.signals("rate(x[5m]) > 0"));
        assertEquals(List.of("(a) / (b)"), PromQl.signals("(a) / (b)"));
        // words that contain "and" or "or" are names, not operators
        assertEquals(List.of("operand_total + sandbox_or_not"), PromQl.signals("operand_total + sandbox_or_not"));
        assertEquals(List.of("job:x:rate5m"), PromQl.signals("job:x:rate5m > 0"));
    }

    @Test
    void badInputIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> PromQl.signals("(a > 1"));
        assertThrows(IllegalArgumentException.class, () -> PromQl.signals("a{x=\"b} > 1"));
        assertThrows(IllegalArgumentException.class, () -> PromQl.signals("a > "));
    }

    @Test
    void variablesAreExpandedAndAMissingOneIsAnError() {
        assertEquals(
                "rate(x{job=~\"cart\", replica=~\".*\"}[1m])",
                PromQl.expand(
                        "rate(x{job=~\"$job\", replica=~\"${replica}\"}[$__rate_interval])",
                        Map.of("job", "cart", "replica", ".*", "__rate_interval", "1m")));
        assertThrows(IllegalArgumentException.class, () -> PromQl.expand("x{a=~\"$nope\"}", Map.of()));
    }
}
