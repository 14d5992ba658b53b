package dev.cart.core.spi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** A settings map is checked once, against the policy's description: every problem at once, typed values. */
class PolicySettingsTest {

    enum Guard {
        ABS_REL,
        MEDIAN,
        BOUNDED_LOAD
    }

    static final PolicySettings.Setting<Double> THRESHOLD =
            PolicySettings.number("threshold", 0.3, 0, 1, "matched fraction that makes a hit");
    static final PolicySettings.Setting<Integer> MATCH_ABS = PolicySettings.integer(
            "match_abs_threshold", 8192, 1, Integer.MAX_VALUE, "matched length that makes a hit");
    static final PolicySettings.Setting<Guard> GUARD = PolicySettings.choice("guard", Guard.ABS_REL, "the guard");
    static final PolicySettings.Setting<Boolean> PREFILL_AWARE =
            PolicySettings.bool("prefill_aware", true, "rank by pending prefill");
    static final PolicySettings.Setting<Double> HASH_LOAD_FACTOR = PolicySettings.number(
                    "hash_load_factor", 1.25, 1, 1000, "load bound")
            .orZero("unbounded");

    static final PolicySettings SETTINGS =
            PolicySettings.of("cache_aware", THRESHOLD, MATCH_ABS, GUARD, PREFILL_AWARE, HASH_LOAD_FACTOR);

    private static List<String> problems(Map<String, ?> values) {
        return SETTINGS.problems(values).stream().map(Object::toString).toList();
    }

    @Test
    void aMisspelledKeyIsRejectedWithTheCloseName() {
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> SETTINGS.values(Map.of("treshold", 0.5)));
        assertEquals("cache_aware: unknown setting 'treshold' (did you mean 'threshold'?)", e.getMessage());
        PolicySettings.Problem p = SETTINGS.problems(Map.of("treshold", 0.5)).get(0);
        assertEquals("treshold", p.key());
        assertEquals("unknown setting (did you mean 'threshold'?)", p.problem());
        assertEquals(
                List.of("unknown setting 'colour'; settings of cache_aware: threshold, match_abs_threshold, guard,"
                        + " prefill_aware, hash_load_factor"),
                problems(Map.of("colour", "red")));
        assertEquals(
                List.of("unknown setting 'threshold' (round_robin takes no settings)"),
                PolicySettings.of("round_robin").problems(Map.of("threshold", 0.5)).stream()
                        .map(Object::toString)
                        .toList());
    }

    @Test
    void everyProblemIsReportedAtOnceWithItsKeyAndRange() {
        Map<String, Object> bad = new LinkedHashMap<>();
        bad.put("threshold", 1.5);
        bad.put("match_abs_threshold", "lots");
        bad.put("guard", "medain");
        bad.put("prefill_aware", "sometimes");
        bad.put("hash_load_factor", 0.5);
        bad.put("treshold", 0.5);
        List<String> expected = List.of(
                "threshold must be in [0, 1], was 1.5",
                "match_abs_threshold must be an integer, was 'lots'",
                "guard must be one of abs_rel, median, bounded_load, was 'medain' (did you mean 'median'?)",
                "prefill_aware must be true or false, was 'sometimes'",
                "hash_load_factor must be 0 (unbounded) or in [1, 1000], was 0.5",
                "unknown setting 'treshold' (did you mean 'threshold'?)");
        assertEquals(expected, problems(bad));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> SETTINGS.values(bad));
        assertEquals(
                expected.stream().map(p -> "cache_aware: " + p).toList(),
                List.of(e.getMessage().split("\n")));
        assertEquals(List.of("match_abs_threshold must be >= 1, was 0"), problems(Map.of("match_abs_threshold", 0)));
        assertEquals(
                List.of("match_abs_threshold must be an integer, was 2.5"),
                problems(Map.of("match_abs_threshold", 2.5)));
        assertEquals(
                List.of("match_abs_threshold must be >= 1, was -99999999999"),
                problems(Map.of("match_abs_threshold", -99_999_999_999L)));
        assertEquals(List.of("threshold must be a number, was true"), problems(Map.of("threshold", true)));
        assertEquals(
                "must be in [0, 1], was 1.5",
                SETTINGS.problems(Map.of("threshold", "1.5")).get(0).problem());
    }

    @Test
    void valuesAreTypedWithTheDefaultsFilledIn() {
        PolicySettings.Values v = SETTINGS.values(Map.of(
                "threshold", "0.5", "match_abs_threshold", 4096.0, "guard", "Bounded-Load", "prefill_aware", "FALSE"));
        assertEquals(0.5, v.get(THRESHOLD));
        assertEquals(4096, v.get(MATCH_ABS));
        assertEquals(Guard.BOUNDED_LOAD, v.get(GUARD));
        assertFalse(v.get(PREFILL_AWARE));
        assertEquals(1.25, v.get(HASH_LOAD_FACTOR), "the default");
        assertTrue(v.isSet(THRESHOLD));
        assertFalse(v.isSet(HASH_LOAD_FACTOR));
        assertEquals(0.0, SETTINGS.values(Map.of("hash_load_factor", 0)).get(HASH_LOAD_FACTOR), "0: unbounded");
        Map<String, Object> withNull = new LinkedHashMap<>();
        withNull.put("threshold", null);
        assertEquals(0.3, SETTINGS.values(withNull).get(THRESHOLD), "null is absent");
        PolicySettings.Setting<Double> other = PolicySettings.number("median_factor", 2, 1, 10, "not ours");
        assertThrows(IllegalArgumentException.class, () -> v.get(other));
    }

    @Test
    void aBuilderChecksCodesValuesAgainstTheSameRange() {
        assertEquals(0.5, THRESHOLD.check("threshold", 0.5));
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> MATCH_ABS.check("matchAbsThreshold", 0));
        assertEquals("matchAbsThreshold must be >= 1, was 0", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> HASH_LOAD_FACTOR.check("hashLoadFactor", 0.5));
        assertEquals("hashLoadFactor must be 0 (unbounded) or in [1, 1000], was 0.5", e.getMessage());
        assertEquals(0.0, HASH_LOAD_FACTOR.check("hashLoadFactor", 0.0));
    }

    @Test
    void theDescriptionSaysWhatEachSettingAllows() {
        assertEquals("in [0, 1]", THRESHOLD.allowed());
        assertEquals(">= 1", MATCH_ABS.allowed());
        assertEquals("one of abs_rel, median, bounded_load", GUARD.allowed());
        assertEquals("true or false", PREFILL_AWARE.allowed());
        assertEquals("0 (unbounded) or in [1, 1000]", HASH_LOAD_FACTOR.allowed());
        assertEquals(
                "in [0.000001, 1000000]",
                PolicySettings.number("rate", 1, 1e-6, 1e6, "doc").allowed());
        assertEquals(PolicySettings.Type.CHOICE, GUARD.type());
        assertEquals(List.of("abs_rel", "median", "bounded_load"), GUARD.choices());
        assertEquals(
                "threshold: number, default 0.3, in [0, 1]: matched fraction that makes a hit", THRESHOLD.toString());
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class, () -> PolicySettings.number("threshold", 2, 0, 1, "a bad default"));
        assertEquals("threshold: the default 2 is not in [0, 1]", e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> PolicySettings.of("p", THRESHOLD, THRESHOLD));
    }
}
