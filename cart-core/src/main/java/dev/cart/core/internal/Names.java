package dev.cart.core.internal;

import java.util.Locale;

/** The "did you mean" of CART's messages about a name it does not know (a policy, a setting, a choice). */
public final class Names {
    private Names() {}

    /**
     * {@code " (did you mean 'x'?)"} when one of {@code known} is close to {@code given} (an edit distance
     * of at most 2, or a quarter of its length, case ignored), or starts with it (a name cut short:
     * {@code cl100k} for {@code cl100k_base}); otherwise the empty string.
     */
    public static String didYouMean(String given, Iterable<String> known) {
        String lower = given.toLowerCase(Locale.ROOT);
        String best = null;
        int bestDistance = Integer.MAX_VALUE;
        for (String k : known) {
            int d = distance(lower, k);
            if (d < bestDistance) {
                bestDistance = d;
                best = k;
            }
        }
        if (best != null && !given.equals(best) && bestDistance <= Math.max(2, given.length() / 4)) {
            return " (did you mean '" + best + "'?)";
        }
        for (String k : known) {
            if (given.length() >= 3 && k.startsWith(lower) && !k.equals(given)) {
                return " (did you mean '" + k + "'?)";
            }
        }
        return "";
    }

    /** Levenshtein distance. */
    private static int distance(String a, String b) {
        int[] prev = new int[b.length() + 1];
        int[] cur = new int[b.length() + 1];
        for (int j = 0; j <= b.length(); j++) {
            prev[j] = j;
        }
        for (int i = 1; i <= a.length(); i++) {
            cur[0] = i;
            for (int j = 1; j <= b.length(); j++) {
                int cost = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
                cur[j] = Math.min(Math.min(cur[j - 1] + 1, prev[j] + 1), prev[j - 1] + cost);
            }
            int[] t = prev;
            prev = cur;
            cur = t;
        }
        return prev[b.length()];
    }
}
