package dev.cart.sim;

import dev.cart.core.PromptKey;
import dev.cart.extract.Endpoint;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * A workload turned into what a run needs, computed once and shared by every policy's run: the router's
 * key of each request (from its HTTP body, as the proxy makes it), the key a host learning answers records
 * when the request completes, the chained block hashes of the sequence the replica computes (the prompt,
 * then the answer it generates), the prompt's and the answer's length in tokens, and the workload's ideal
 * hit ratio. Immutable.
 *
 * <p>Every request has an answer text: {@link WorkloadRequest#reply()} when the workload says what it is
 * (a conversation's reply, which its next turn carries back), otherwise filler seeded by the request's
 * position, which no other request contains. The replica generates that text; with
 * {@link Options#cacheGenerated} it caches the full blocks of prompt and answer, as vLLM V1 does.
 */
final class PreparedWorkload {

    /**
     * How a workload is prepared.
     *
     * @param keyUnit         the router's keys: characters (the default) or tokens (token mode,
     *                        {@code cl100k_base}, 16-token blocks)
     * @param tokenizer       how the replica counts tokens: false, four characters per token and 64-character
     *                        blocks (the default model); true, {@link ModelTokenizer} (real BPE tokens, 16-token
     *                        blocks), with each answer as long as its text's tokens
     * @param cacheGenerated  whether the replica caches the blocks of the tokens it generates (vLLM V1 does;
     *                        default true); false, only prompt blocks are hashed
     */
    record Options(PromptKey.Unit keyUnit, boolean tokenizer, boolean cacheGenerated) {
        Options {
            Objects.requireNonNull(keyUnit);
        }

        static Options defaults() {
            return new Options(PromptKey.Unit.CHARS, false, true);
        }

        Options withKeyUnit(PromptKey.Unit unit) {
            return new Options(unit, tokenizer, cacheGenerated);
        }

        Options withTokenizer(boolean on) {
            return new Options(keyUnit, on, cacheGenerated);
        }

        Options withCacheGenerated(boolean on) {
            return new Options(keyUnit, tokenizer, on);
        }
    }

    /** The model name in the request bodies the keys are made from. */
    static final String MODEL = "sim";

    final Workload workload;
    final Options options;
    final PromptKey[] keys;
    /** Per chat request, the key of its conversation followed by its answer; null for a completion. */
    final PromptKey[] answerKeys;

    final long[][] blocks;
    /**
     * On the tokenizing replica, each request's sequence as the replica computes it (the prompt's token ids,
     * then its answer's when the replica caches generated tokens): what its KV events carry and what precise
     * mode looks up (the first {@link #promptTokens} ids); null on the other replica model.
     */
    final int[][] engineTokens;
    /** Per request, the model it names (null: the default); the router sends it only where it is served. */
    final String[] models;

    final int[] promptTokens;
    final int[] maxTokens;
    final long[] arrivals;
    final int[] session;
    final int sessions;
    final long totalPromptTokens;
    final long idealCachedTokens;
    /** Per request, TTFT in an ideal world (see {@link #ttftFloorMillis}), sorted ascending. */
    private final long[] floorNanos;

    private PreparedWorkload(Workload w, EngineConfig config, Options options) {
        this.workload = w;
        this.options = options;
        List<WorkloadRequest> rs = w.requests();
        int n = rs.size();
        keys = new PromptKey[n];
        answerKeys = new PromptKey[n];
        blocks = new long[n][];
        engineTokens = options.tokenizer() ? new int[n][] : null;
        models = new String[n];
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
        ModelTokenizer tokenizer = options.tokenizer() ? new ModelTokenizer() : null;
        if (tokenizer != null && bt != RequestKeys.BLOCK_TOKENS) {
            throw new IllegalArgumentException("the tokenizing replica model has blocks of " + RequestKeys.BLOCK_TOKENS
                    + " tokens, the engine " + bt);
        }
        for (int i = 0; i < n; i++) {
            WorkloadRequest r = rs.get(i);
            String model = r.model() == null ? MODEL : r.model();
            models[i] = r.model();
            keys[i] = RequestKeys.key(options.keyUnit(), r.endpoint(), r.body(model, false));
            String answer = answerText(r, i);
            if (r.endpoint() != Endpoint.COMPLETIONS) {
                answerKeys[i] = RequestKeys.key(options.keyUnit(), r.endpoint(), r.continuationBody(model, answer));
            }
            long[] b;
            if (tokenizer == null) {
                String prompt = r.replicaPrompt();
                promptTokens[i] = config.tokensOf(prompt.length());
                maxTokens[i] = r.maxTokens();
                b = hashes(PromptKey.ofText(options.cacheGenerated() ? prompt + answer : prompt, config.blockChars()));
            } else {
                int[] prompt = tokenizer.prompt(r);
                int[] out = tokenizer.text(answer);
                promptTokens[i] = prompt.length;
                maxTokens[i] = Math.max(1, out.length);
                int[] seq = prompt;
                if (options.cacheGenerated()) {
                    seq = java.util.Arrays.copyOf(prompt, prompt.length + out.length);
                    System.arraycopy(out, 0, seq, prompt.length, out.length);
                }
                b = hashes(PromptKey.ofTokens(seq, new int[0], bt, PromptKey.DEFAULT_ANCHOR_LIMIT));
                engineTokens[i] = seq;
            }
            if (r.model() != null) {
                b = salted(b, r.model()); // a replica's cache keeps each model's blocks apart
            }
            // the replica never computes the last generated token's KV: at most prompt + output - 1 tokens
            int cachable = Math.min(b.length, (promptTokens[i] + maxTokens[i] - 1) / bt);
            if (cachable < b.length) {
                b = java.util.Arrays.copyOf(b, cachable);
            }
            blocks[i] = b;
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

    /** A copy with other arrival times (same requests, same order), sharing everything else. */
    private PreparedWorkload(PreparedWorkload p, Workload retimed) {
        this.workload = retimed;
        this.options = p.options;
        this.keys = p.keys;
        this.answerKeys = p.answerKeys;
        this.blocks = p.blocks;
        this.engineTokens = p.engineTokens;
        this.models = p.models;
        this.promptTokens = p.promptTokens;
        this.maxTokens = p.maxTokens;
        this.session = p.session;
        this.sessions = p.sessions;
        this.totalPromptTokens = p.totalPromptTokens;
        this.idealCachedTokens = p.idealCachedTokens;
        this.floorNanos = p.floorNanos;
        this.arrivals = new long[p.size()];
        for (int i = 0; i < arrivals.length; i++) {
            arrivals[i] = retimed.requests().get(i).arrivalNanos();
        }
    }

    static PreparedWorkload of(Workload w, EngineConfig config) {
        return of(w, config, Options.defaults());
    }

    static PreparedWorkload of(Workload w, EngineConfig config, Options options) {
        return new PreparedWorkload(w, config, options);
    }

    /**
     * This workload with the arrival times of {@code retimed}, which must hold the same requests in the same
     * order ({@link Workload#poisson}, {@link Workload#timeScaled} of the same workload): nothing is
     * computed again.
     */
    PreparedWorkload retimed(Workload retimed) {
        if (retimed.size() != size()) {
            throw new IllegalArgumentException("a retimed workload must hold the same requests");
        }
        return new PreparedWorkload(this, retimed);
    }

    /**
     * The text the replica generates for request {@code i}: the workload's reply when it has one, otherwise
     * filler of {@code max_tokens} tokens seeded by the request's position (no other request contains it).
     */
    static String answerText(WorkloadRequest r, int i) {
        if (r.reply() != null) {
            return r.reply();
        }
        return Filler.text(Filler.seed(0x5EA1L, i), r.maxTokens() * Workloads.CHARS_PER_TOKEN);
    }

    /** {@code b} with every block hash mixed with {@code model}'s: the same prefix structure, no block shared. */
    static long[] salted(long[] b, String model) {
        long salt = 0x9E3779B97F4A7C15L * (model.hashCode() | 1L);
        long[] out = new long[b.length];
        for (int i = 0; i < b.length; i++) {
            long x = b[i] ^ salt;
            x = (x ^ (x >>> 33)) * 0xFF51AFD7ED558CCDL;
            out[i] = x ^ (x >>> 33);
        }
        return out;
    }

    private static long[] hashes(PromptKey k) {
        long[] b = new long[k.blockCount()];
        for (int i = 0; i < b.length; i++) {
            b[i] = k.blockHash(i);
        }
        return b;
    }

    int size() {
        return keys.length;
    }

    /** The unit of the router's keys. */
    PromptKey.Unit keyUnit() {
        return options.keyUnit();
    }

    /**
     * Ideal hit ratio: the share of prompt tokens in blocks that some earlier request (in workload order)
     * already had, as an infinite cache with perfect placement would serve them (same block granularity
     * and the same cap of prompt length minus one token as the replica). What an earlier request had is
     * what the replica caches of it: its prompt's blocks and, when the replica caches generated tokens, the
     * blocks of its answer too, so a conversation's next turn can reuse the previous reply.
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
