package dev.cart.sim;

import dev.cart.core.PromptKey;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A workload turned into what a run needs, computed once and shared by every policy's run: the router's
 * key of each request (from its HTTP body, as the proxy makes it), the chained block hashes of the
 * prompt the replica computes, the prompt's length in tokens, and the workload's ideal hit ratio.
 * Immutable.
 */
final class PreparedWorkload {

    final Workload workload;
    final PromptKey[] keys;
    final long[][] blocks;
    final int[] promptTokens;
    final int[] maxTokens;
    final long[] arrivals;
    final int[] session;
    final int sessions;
    final long totalPromptTokens;
    final long idealCachedTokens;
    /** Per request, TTFT in an ideal world (see {@link #ttftFloorMillis}), sorted ascending. */
    private final long[] floorNanos;

    private PreparedWorkload(Workload w, EngineConfig config) {
        this.workload = w;
        List<WorkloadRequest> rs = w.requests();
        int n = rs.size();
        keys = new PromptKey[n];
        blocks = new long[n][];
        promptTokens = new int[n];
        maxTokens = new int[n];
        arrivals = new long[n];
        session = new int[n];
        Map<String, Integer> ids = new HashMap<>();
        Set<Long> seen = new HashSet<>();
        floorNanos = new long[n];
        long total = 0;
        long ideal = 0;
        int bt = config.blockTokens();
        for (int i = 0; i < n; i++) {
            WorkloadRequest r = rs.get(i);
            keys[i] = RequestKeys.key(r.endpoint(), r.body("sim", false));
            String prompt = r.replicaPrompt();
            PromptKey replicaKey = PromptKey.ofText(prompt, config.blockChars());
            long[] b = new long[replicaKey.blockCount()];
            for (int k = 0; k < b.length; k++) {
                b[k] = replicaKey.blockHash(k);
            }
            blocks[i] = b;
            promptTokens[i] = config.tokensOf(prompt.length());
            maxTokens[i] = r.maxTokens();
            arrivals[i] = r.arrivalNanos();
            session[i] = r.session() == null ? -1 : ids.computeIfAbsent(r.session(), s -> ids.size());
            total += promptTokens[i];
            int cap = Math.min(b.length, (promptTokens[i] - 1) / bt);
            int hit = 0;
            while (hit < cap && seen.contains(b[hit])) {
                hit++;
            }
            ideal += (long) hit * bt;
            for (long h : b) {
                seen.add(h);
            }
            int uncached = promptTokens[i] - hit * bt;
            long t = 0;
            while (uncached > 0) {
                int chunk = Math.min(uncached, config.maxBatchedTokens());
                t += config.stepNanos(chunk, 0);
                uncached -= chunk;
            }
            floorNanos[i] = t;
        }
        sessions = ids.size();
        totalPromptTokens = total;
        idealCachedTokens = ideal;
        java.util.Arrays.sort(floorNanos);
    }

    static PreparedWorkload of(Workload w, EngineConfig config) {
        return new PreparedWorkload(w, config);
    }

    int size() {
        return keys.length;
    }

    /**
     * Ideal hit ratio: the share of prompt tokens in blocks that some earlier request (in workload order)
     * already had, as an infinite cache with perfect placement would serve them (same block granularity
     * and the same cap of prompt length minus one token as the replica).
     */
    double idealHitRatio() {
        return totalPromptTokens == 0 ? 0 : (double) idealCachedTokens / totalPromptTokens;
    }

    /**
     * A lower bound on any router's TTFT quantile {@code q} (ranked like {@link RunResult#ttftMillis}): each
     * request alone on an idle replica whose cache holds every block an earlier request had, computing the
     * rest in chunks of the step budget with nothing else in the batch. What remains of it is the prompts
     * no earlier request shared: no placement avoids computing them.
     */
    double ttftFloorMillis(double q) {
        if (floorNanos.length == 0) {
            return Double.NaN;
        }
        int rank = (int) Math.ceil(q * floorNanos.length);
        return floorNanos[Math.max(0, Math.min(floorNanos.length - 1, rank - 1))] / 1e6;
    }

    double meanPromptTokens() {
        return keys.length == 0 ? 0 : (double) totalPromptTokens / keys.length;
    }
}
