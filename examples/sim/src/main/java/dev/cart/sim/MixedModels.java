package dev.cart.sim;

import dev.cart.extract.Endpoint;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.SplittableRandom;

/**
 * A pool serving several models, and a multi-turn chat workload over it: two base models on disjoint
 * replicas, and a LoRA adapter of the first loaded on half the pool's replicas, as vLLM serves an adapter
 * under its own model name. Each model has its own system prompt (shared by its users), so each model's
 * users share a prefix only with each other, and a replica keeps each model's blocks apart
 * ({@link PreparedWorkload}).
 *
 * <p>The pool ({@link #POOL}, 6 replicas): replicas 0-3 serve {@link #LLAMA}, replicas 4-5
 * {@link #QWEN}, and replicas 0-2 (half the pool) also serve the adapter {@link #LLAMA_SQL}. Users: half
 * on the base Llama, a quarter on the adapter, a quarter on Qwen. The router sends each request only to
 * replicas serving its model, so round robin and least loaded are "within the model" without a change.
 */
final class MixedModels {

    static final String LLAMA = "llama-3.1-8b";
    static final String LLAMA_SQL = "llama-3.1-8b-sql-lora";
    static final String QWEN = "qwen-2.5-7b";

    /** The models of each replica, by index. */
    static final List<List<String>> POOL = List.of(
            List.of(LLAMA, LLAMA_SQL),
            List.of(LLAMA, LLAMA_SQL),
            List.of(LLAMA, LLAMA_SQL),
            List.of(LLAMA),
            List.of(QWEN),
            List.of(QWEN));

    /**
     * Workload parameters.
     *
     * @param users        number of users (sessions), split 2:1:1 over Llama, the adapter and Qwen
     * @param rounds       turns per user
     * @param systemTokens each model's system prompt
     * @param minUser      shortest user message
     * @param maxUser      longest user message
     * @param minReply     shortest reply (the request's max tokens)
     * @param maxReply     longest reply
     */
    record Spec(int users, int rounds, int systemTokens, int minUser, int maxUser, int minReply, int maxReply) {
        static Spec defaults() {
            return new Spec(128, 6, 1024, 32, 160, 128, 384);
        }
    }

    private MixedModels() {}

    /** The model of user {@code u}: every other user Llama, then alternately the adapter and Qwen. */
    static String modelOf(int u) {
        if (u % 2 == 0) {
            return LLAMA;
        }
        return u % 4 == 1 ? LLAMA_SQL : QWEN;
    }

    static Workload workload(long seed) {
        return workload(seed, Spec.defaults());
    }

    /**
     * Multi-turn chat over the three models: each turn's prompt is the whole conversation so far, replies
     * included (the request carries its reply, so the replica generates the text the next turn holds);
     * turns interleaved across users, round by round in a shuffled order.
     */
    static Workload workload(long seed, Spec spec) {
        List<String> models = List.of(LLAMA, LLAMA_SQL, QWEN);
        List<String> systems = new ArrayList<>();
        for (int m = 0; m < models.size(); m++) {
            systems.add("You are the " + models.get(m) + " assistant. "
                    + Filler.text(Filler.seed(seed, 0x3D0, m), spec.systemTokens() * Workloads.CHARS_PER_TOKEN));
        }
        List<List<Message>> history = new ArrayList<>(spec.users());
        for (int u = 0; u < spec.users(); u++) {
            List<Message> h = new ArrayList<>();
            h.add(Message.system(systems.get(models.indexOf(modelOf(u)))));
            history.add(h);
        }
        SplittableRandom rnd = new SplittableRandom(Filler.seed(seed, 0x3D1));
        List<Integer> order = new ArrayList<>(spec.users());
        for (int u = 0; u < spec.users(); u++) {
            order.add(u);
        }
        List<WorkloadRequest> out = new ArrayList<>(spec.users() * spec.rounds());
        for (int r = 0; r < spec.rounds(); r++) {
            Collections.shuffle(order, new java.util.Random(Filler.seed(seed, 0x3D2, r)));
            for (int u : order) {
                List<Message> h = history.get(u);
                String user = "Turn " + (r + 1) + ": "
                        + Filler.text(
                                Filler.seed(seed, 0x3D3, u, r),
                                uniform(rnd, spec.minUser(), spec.maxUser()) * Workloads.CHARS_PER_TOKEN);
                h.add(Message.user(user));
                int replyTokens = uniform(rnd, spec.minReply(), spec.maxReply());
                String reply = Filler.text(Filler.seed(seed, 0x3D4, u, r), replyTokens * Workloads.CHARS_PER_TOKEN);
                out.add(WorkloadRequest.chat(Endpoint.CHAT_COMPLETIONS, h, replyTokens, "user-" + u, reply)
                        .withModel(modelOf(u)));
                h.add(Message.assistant(reply));
            }
        }
        return new Workload(
                "mixed-models",
                String.format(
                        "multi-turn chat over two base models and a LoRA adapter: %d users (half %s, a quarter %s, "
                                + "a quarter %s) x %d rounds, a %d-token system prompt per model, user turns %d-%d "
                                + "tokens, replies %d-%d tokens",
                        spec.users(),
                        LLAMA,
                        LLAMA_SQL,
                        QWEN,
                        spec.rounds(),
                        spec.systemTokens(),
                        spec.minUser(),
                        spec.maxUser(),
                        spec.minReply(),
                        spec.maxReply()),
                out);
    }

    private static int uniform(SplittableRandom rnd, int min, int max) {
        return min == max ? min : min + rnd.nextInt(max - min + 1);
    }
}
