package dev.cart.sim;

import dev.cart.core.LearnMode;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A routing configuration compared in the report: a policy with settings, how the router learns
 * ({@code learn}), whether the replica's usage reaches the lease ({@code usage}, for the router's cache
 * feedback), whether a diverted request's route waits for its first token ({@code defer}, the router's
 * default), whether the host reports first tokens ({@code firstTokens}, so the router counts pending
 * prefill), whether the host learns answers ({@code answers}), whether the router acts on the usage
 * ({@code feedback}) and whether it sees only the start of each key up to its first message boundary
 * ({@code singleDepth}).
 */
record Variant(
        String label,
        String policy,
        Map<String, Object> settings,
        LearnMode learn,
        boolean usage,
        boolean defer,
        boolean firstTokens,
        boolean answers,
        boolean feedback,
        boolean singleDepth) {

    static final String ROUND_ROBIN = "round_robin";
    static final String LEAST_LOADED = "least_loaded";
    static final String CONSISTENT_HASH = "consistent_hash";
    static final String CACHE_AWARE = "cache_aware";
    static final String PREDICTED_TTFT = "predicted_ttft";
    static final String SPECIFIED = "cache_aware as specified";
    static final String STRICT = "cache_aware strict affinity";
    static final String ON_SUCCESS = "cache_aware learn=on_success";

    /**
     * {@code policy} with the library's defaults behind a host that does what the proxy does: reports
     * each first token and each answer's usage, and learns each chat answer.
     */
    static Variant shipped(String label, String policy, Map<String, Object> settings) {
        return new Variant(label, policy, settings, LearnMode.ON_ROUTE, true, true, true, true, true, false);
    }

    /** The specification's host: learns on route, at once, and hears nothing back but the first token. */
    static Variant specified(String label, Map<String, Object> settings) {
        return new Variant(label, "cache_aware", settings, LearnMode.ON_ROUTE, false, false, true, false, true, false);
    }

    /** The policies of the main tables, in table and legend order. */
    static List<Variant> all() {
        List<Variant> v = new ArrayList<>();
        v.add(shipped(ROUND_ROBIN, "round_robin", Map.of()));
        v.add(shipped(LEAST_LOADED, "least_loaded", Map.of()));
        v.add(shipped(CONSISTENT_HASH, "consistent_hash", Map.of()));
        v.add(shipped(CACHE_AWARE, "cache_aware", Map.of()));
        v.add(shipped(PREDICTED_TTFT, "predicted_ttft", Map.of()));
        v.add(specified(SPECIFIED, Map.of("prefill_aware", false)));
        v.add(shipped("cache_aware guard=abs_rel", "cache_aware", Map.of("guard", "abs_rel")));
        v.add(shipped("cache_aware guard=median", "cache_aware", Map.of("guard", "median")));
        v.add(shipped("cache_aware guard=bounded_load", "cache_aware", Map.of("guard", "bounded_load")));
        v.add(shipped("cache_aware miss=consistent_hash", "cache_aware", Map.of("miss_placement", "consistent_hash")));
        v.add(shipped(ON_SUCCESS, "cache_aware", Map.of()).learn(LearnMode.ON_SUCCESS));
        v.add(shipped("cache_aware, no first-token reports", "cache_aware", Map.of())
                .firstTokens(false));
        v.add(specified(
                STRICT,
                Map.of(
                        "guard",
                        "abs_rel",
                        "prefill_aware",
                        false,
                        "balance_abs_threshold",
                        1_000_000,
                        "balance_rel_threshold",
                        1_000_000.0)));
        return v;
    }

    /** The variants every target needs: the baselines, the default, the specified rule and strict affinity. */
    static List<Variant> core() {
        return all().stream()
                .filter(v -> List.of(ROUND_ROBIN, LEAST_LOADED, CACHE_AWARE, SPECIFIED, STRICT)
                        .contains(v.label()))
                .toList();
    }

    /** The variant labelled {@code label} among {@link #all()}. */
    static Variant named(String label) {
        for (Variant v : all()) {
            if (v.label().equals(label)) {
                return v;
            }
        }
        throw new IllegalArgumentException("no variant " + label);
    }

    Variant label(String l) {
        return new Variant(l, policy, settings, learn, usage, defer, firstTokens, answers, feedback, singleDepth);
    }

    Variant settings(Map<String, Object> m) {
        return new Variant(label, policy, m, learn, usage, defer, firstTokens, answers, feedback, singleDepth);
    }

    Variant learn(LearnMode m) {
        return new Variant(label, policy, settings, m, usage, defer, firstTokens, answers, feedback, singleDepth);
    }

    Variant firstTokens(boolean on) {
        return new Variant(label, policy, settings, learn, usage, defer, on, answers, feedback, singleDepth);
    }

    Variant answers(boolean on) {
        return new Variant(label, policy, settings, learn, usage, defer, firstTokens, on, feedback, singleDepth);
    }

    Variant feedback(boolean on) {
        return new Variant(label, policy, settings, learn, usage, defer, firstTokens, answers, on, singleDepth);
    }

    Variant usage(boolean on) {
        return new Variant(label, policy, settings, learn, on, defer, firstTokens, answers, feedback, singleDepth);
    }

    Variant singleDepth(boolean on) {
        return new Variant(label, policy, settings, learn, usage, defer, firstTokens, answers, feedback, on);
    }
}
