package dev.cart.sim;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.cart.extract.Endpoint;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * The workloads of the routing-quality benchmark, each generated from a seed. Sizes are in tokens and
 * turned into text at {@link #CHARS_PER_TOKEN} characters per token, the unit the simulated replica
 * counts in character mode. Requests come out in send order without arrival times; give them times with
 * {@link Workload#poisson} (the trace replay carries its own).
 */
public final class Workloads {

    /** Characters of generated text per token. */
    public static final int CHARS_PER_TOKEN = 4;
    /** Tokens per Mooncake trace block. */
    public static final int MOONCAKE_BLOCK_TOKENS = 512;
    /** Default characters per Mooncake block in the replay (512 tokens scaled down to 64). */
    public static final int MOONCAKE_BLOCK_CHARS = 256;

    private static final ObjectMapper JSON = new ObjectMapper();

    private Workloads() {}

    private static String text(long seed, int tokens) {
        return Filler.text(seed, tokens * CHARS_PER_TOKEN);
    }

    private static int uniform(SplittableRandom rnd, int min, int max) {
        return min == max ? min : min + rnd.nextInt(max - min + 1);
    }

    // ----------------------------------------------------------------------------------------------
    // generated shared prefix

    /** SGLang's generated-shared-prefix benchmark at its defaults: 64 groups x 16 prompts, 2048/128/256. */
    public static Workload sharedPrefix(long seed) {
        return sharedPrefix(seed, 64, 16, 2048, 128, 256);
    }

    /**
     * SGLang's {@code generated-shared-prefix} dataset: {@code groups} system prompts, each followed by
     * {@code perGroup} different questions ({@code system + "\n\n" + question}, sent as a completion
     * prompt), in shuffled order.
     */
    public static Workload sharedPrefix(
            long seed, int groups, int perGroup, int systemTokens, int questionTokens, int outputTokens) {
        List<WorkloadRequest> out = new ArrayList<>(groups * perGroup);
        for (int g = 0; g < groups; g++) {
            String system = text(Filler.seed(seed, 1, g), systemTokens);
            for (int p = 0; p < perGroup; p++) {
                String question = text(Filler.seed(seed, 2, g, p), questionTokens);
                out.add(WorkloadRequest.completion(system + "\n\n" + question, outputTokens, null));
            }
        }
        Collections.shuffle(out, new java.util.Random(Filler.seed(seed, 3)));
        return new Workload(
                "generated-shared-prefix",
                String.format(
                        "SGLang generated-shared-prefix: %d groups x %d prompts, %d-token system prompt, %d-token question, "
                                + "%d-token output, /v1/completions, shuffled",
                        groups, perGroup, systemTokens, questionTokens, outputTokens),
                out);
    }

    // ----------------------------------------------------------------------------------------------
    // RAG

    /**
     * RAG parameters.
     *
     * @param requests       number of requests
     * @param minDocTokens   shortest document
     * @param maxDocTokens   longest document (lengths uniform in between)
     * @param zipfS          Zipf exponent of document popularity
     * @param demandShare    total size of all documents as a share of the cluster's cache
     * @param systemTokens   shared instructions before the document
     * @param minQuestion    shortest question
     * @param maxQuestion    longest question
     * @param outputTokens   tokens generated per request
     */
    public record RagSpec(
            int requests,
            int minDocTokens,
            int maxDocTokens,
            double zipfS,
            double demandShare,
            int systemTokens,
            int minQuestion,
            int maxQuestion,
            int outputTokens) {
        public static RagSpec defaults() {
            return new RagSpec(2048, 1536, 3584, 1.1, 0.7, 96, 32, 96, 128);
        }
    }

    /** RAG at the default {@link RagSpec}, sized against a cluster cache of {@code clusterCacheTokens}. */
    public static Workload rag(long seed, long clusterCacheTokens) {
        return rag(seed, clusterCacheTokens, RagSpec.defaults());
    }

    /**
     * Retrieval-augmented chat: each request is shared instructions, one document chosen with Zipf
     * popularity, and a new question. The documents together take {@code demandShare} of the cluster's
     * cache, so they do not fit one replica.
     */
    public static Workload rag(long seed, long clusterCacheTokens, RagSpec spec) {
        double meanDoc = (spec.minDocTokens() + spec.maxDocTokens()) / 2.0;
        int docs = (int) Math.max(1, Math.round(spec.demandShare() * clusterCacheTokens / meanDoc));
        SplittableRandom sizes = new SplittableRandom(Filler.seed(seed, 10));
        String[] docText = new String[docs];
        long total = 0;
        for (int d = 0; d < docs; d++) {
            int tokens = uniform(sizes, spec.minDocTokens(), spec.maxDocTokens());
            total += tokens;
            docText[d] = "Document " + d + ":\n" + text(Filler.seed(seed, 11, d), tokens);
        }
        double[] cdf = zipfCdf(docs, spec.zipfS());
        String system = "You answer questions using only the document the user provides. "
                + text(Filler.seed(seed, 12), spec.systemTokens());
        SplittableRandom rnd = new SplittableRandom(Filler.seed(seed, 13));
        List<WorkloadRequest> out = new ArrayList<>(spec.requests());
        for (int i = 0; i < spec.requests(); i++) {
            int d = sample(cdf, rnd.nextDouble());
            String q = text(Filler.seed(seed, 14, i), uniform(rnd, spec.minQuestion(), spec.maxQuestion()));
            List<Message> msgs = List.of(Message.system(system), Message.user(docText[d] + "\n\nQuestion: " + q));
            out.add(WorkloadRequest.chat(Endpoint.CHAT_COMPLETIONS, msgs, spec.outputTokens(), null));
        }
        return new Workload(
                "rag-zipf",
                String.format(
                        "RAG: %d documents of %d-%d tokens (%,d tokens, %.0f%% of the cluster cache), Zipf s=%.2f, %d requests, "
                                + "%d-token output",
                        docs,
                        spec.minDocTokens(),
                        spec.maxDocTokens(),
                        total,
                        100.0 * total / clusterCacheTokens,
                        spec.zipfS(),
                        spec.requests(),
                        spec.outputTokens()),
                out);
    }

    static double[] zipfCdf(int n, double s) {
        double[] cdf = new double[n];
        double sum = 0;
        for (int k = 1; k <= n; k++) {
            sum += 1.0 / Math.pow(k, s);
            cdf[k - 1] = sum;
        }
        for (int k = 0; k < n; k++) {
            cdf[k] /= sum;
        }
        return cdf;
    }

    static int sample(double[] cdf, double u) {
        int lo = 0;
        int hi = cdf.length - 1;
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (cdf[mid] < u) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo;
    }

    // ----------------------------------------------------------------------------------------------
    // multi-turn chat

    /**
     * Chat parameters.
     *
     * @param users        number of users (sessions)
     * @param rounds       turns per user
     * @param systemTokens the system prompt every user shares
     * @param minUser      shortest user message
     * @param maxUser      longest user message
     * @param minReply     shortest assistant reply (the request's max tokens)
     * @param maxReply     longest assistant reply
     */
    public record ChatSpec(
            int users, int rounds, int systemTokens, int minUser, int maxUser, int minReply, int maxReply) {
        public static ChatSpec defaults() {
            return new ChatSpec(128, 8, 1024, 32, 160, 128, 384);
        }
    }

    public static Workload multiTurn(long seed) {
        return multiTurn(seed, ChatSpec.defaults());
    }

    /**
     * Multi-turn chat: every user shares the system prompt; each turn's prompt is the whole conversation
     * so far, the assistant's earlier replies included (generated from the seed; the request asks for
     * exactly as many tokens as the reply that will appear in the next turn, and carries that reply as its
     * answer, {@link WorkloadRequest#reply()}, so the replica generates the text the next turn contains).
     * Turns are interleaved across users: round by round, users in a shuffled order.
     */
    public static Workload multiTurn(long seed, ChatSpec spec) {
        String system = "You are a helpful assistant. " + text(Filler.seed(seed, 20), spec.systemTokens());
        List<List<Message>> history = new ArrayList<>(spec.users());
        for (int u = 0; u < spec.users(); u++) {
            List<Message> h = new ArrayList<>();
            h.add(Message.system(system));
            history.add(h);
        }
        SplittableRandom rnd = new SplittableRandom(Filler.seed(seed, 21));
        List<Integer> order = new ArrayList<>(spec.users());
        for (int u = 0; u < spec.users(); u++) {
            order.add(u);
        }
        List<WorkloadRequest> out = new ArrayList<>(spec.users() * spec.rounds());
        for (int r = 0; r < spec.rounds(); r++) {
            Collections.shuffle(order, new java.util.Random(Filler.seed(seed, 22, r)));
            for (int u : order) {
                List<Message> h = history.get(u);
                String user = "Turn " + (r + 1) + ": "
                        + text(Filler.seed(seed, 23, u, r), uniform(rnd, spec.minUser(), spec.maxUser()));
                h.add(Message.user(user));
                int replyTokens = uniform(rnd, spec.minReply(), spec.maxReply());
                String reply = text(Filler.seed(seed, 24, u, r), replyTokens);
                out.add(WorkloadRequest.chat(Endpoint.CHAT_COMPLETIONS, h, replyTokens, "user-" + u, reply));
                h.add(Message.assistant(reply));
            }
        }
        return new Workload(
                "multi-turn",
                String.format(
                        "multi-turn chat: %d users x %d rounds, shared %d-token system prompt, user turns %d-%d tokens, "
                                + "replies %d-%d tokens, turns interleaved across users",
                        spec.users(),
                        spec.rounds(),
                        spec.systemTokens(),
                        spec.minUser(),
                        spec.maxUser(),
                        spec.minReply(),
                        spec.maxReply()),
                out);
    }

    // ----------------------------------------------------------------------------------------------
    // branching and resumed conversations

    /**
     * Branching parameters.
     *
     * @param conversations concurrent conversations
     * @param requests      number of requests
     * @param pContinue     share of requests that continue a conversation's main line
     * @param pBranch       share that branch off its current end (same history, different question);
     *                      the rest resume from the middle (history truncated)
     * @param maxTurns      main-line length after which a conversation starts over
     * @param chat          message sizes (users and rounds are ignored)
     */
    public record BranchSpec(
            int conversations, int requests, double pContinue, double pBranch, int maxTurns, ChatSpec chat) {
        public static BranchSpec defaults() {
            return new BranchSpec(96, 1024, 0.5, 0.3, 12, ChatSpec.defaults());
        }
    }

    public static Workload branching(long seed) {
        return branching(seed, BranchSpec.defaults());
    }

    /**
     * Conversations that branch and resume: each request picks a conversation; half continue its main
     * line (the reply, the request's {@link WorkloadRequest#reply()}, joins the history), some branch off the current end with a different question, the
     * rest resume from a point in the middle (history truncated there) with a new question. Branches and
     * resumptions are one-off: their replies do not join the main line.
     */
    public static Workload branching(long seed, BranchSpec spec) {
        ChatSpec c = spec.chat();
        String system = "You are a helpful assistant. " + text(Filler.seed(seed, 30), c.systemTokens());
        SplittableRandom rnd = new SplittableRandom(Filler.seed(seed, 31));
        List<List<Message>> main = new ArrayList<>();
        for (int k = 0; k < spec.conversations(); k++) {
            List<Message> h = new ArrayList<>();
            h.add(Message.system(system));
            main.add(h);
        }
        int continued = 0;
        int branched = 0;
        int resumed = 0;
        List<WorkloadRequest> out = new ArrayList<>(spec.requests());
        for (int i = 0; i < spec.requests(); i++) {
            int k = rnd.nextInt(spec.conversations());
            List<Message> h = main.get(k);
            int turns = (h.size() - 1) / 2;
            double u = rnd.nextDouble();
            String question =
                    "Question " + i + ": " + text(Filler.seed(seed, 32, i), uniform(rnd, c.minUser(), c.maxUser()));
            int replyTokens = uniform(rnd, c.minReply(), c.maxReply());
            String session = "conv-" + k;
            List<Message> msgs;
            if (turns == 0 || u < spec.pContinue()) {
                h.add(Message.user(question));
                String reply = text(Filler.seed(seed, 33, i), replyTokens);
                out.add(WorkloadRequest.chat(Endpoint.CHAT_COMPLETIONS, h, replyTokens, session, reply));
                h.add(Message.assistant(reply));
                continued++;
                if ((h.size() - 1) / 2 >= spec.maxTurns()) {
                    h.subList(1, h.size()).clear();
                }
                continue;
            }
            if (u < spec.pContinue() + spec.pBranch() || turns < 2) {
                msgs = new ArrayList<>(h);
                branched++;
            } else {
                int keep = 1 + rnd.nextInt(turns - 1); // at least one turn kept, at least one dropped
                msgs = new ArrayList<>(h.subList(0, 1 + 2 * keep));
                resumed++;
            }
            msgs.add(Message.user(question));
            out.add(WorkloadRequest.chat(Endpoint.CHAT_COMPLETIONS, msgs, replyTokens, session));
        }
        return new Workload(
                "branch-resume",
                String.format(
                        "branching conversations: %d conversations, %d requests (%d continue, %d branch, %d resume from the "
                                + "middle), shared %d-token system prompt, restart after %d turns",
                        spec.conversations(),
                        spec.requests(),
                        continued,
                        branched,
                        resumed,
                        c.systemTokens(),
                        spec.maxTurns()),
                out);
    }

    // ----------------------------------------------------------------------------------------------
    // hot prefix

    /**
     * Hot-prefix parameters.
     *
     * @param requests       number of requests
     * @param share          share of requests carrying the hot system prompt
     * @param systemTokens   hot system prompt (other requests carry a unique one of the same size)
     * @param questionTokens unique question per request
     * @param outputTokens   tokens generated per request
     */
    public record HotSpec(int requests, double share, int systemTokens, int questionTokens, int outputTokens) {
        public static HotSpec of(double share) {
            return new HotSpec(1024, share, 2048, 256, 128);
        }
    }

    public static Workload hotPrefix(long seed, double share) {
        return hotPrefix(seed, HotSpec.of(share));
    }

    /**
     * One hot system prompt carried by {@code share} of the requests; the others carry a unique system
     * prompt of the same size. Every request has its own question.
     */
    public static Workload hotPrefix(long seed, HotSpec spec) {
        String hot = text(Filler.seed(seed, 40), spec.systemTokens());
        SplittableRandom rnd = new SplittableRandom(Filler.seed(seed, 41));
        List<WorkloadRequest> out = new ArrayList<>(spec.requests());
        int hits = 0;
        for (int i = 0; i < spec.requests(); i++) {
            boolean isHot = spec.share() >= 1.0 || rnd.nextDouble() < spec.share();
            String system = isHot ? hot : text(Filler.seed(seed, 42, i), spec.systemTokens());
            hits += isHot ? 1 : 0;
            List<Message> msgs = List.of(
                    Message.system(system), Message.user(text(Filler.seed(seed, 43, i), spec.questionTokens())));
            out.add(WorkloadRequest.chat(Endpoint.CHAT_COMPLETIONS, msgs, spec.outputTokens(), null));
        }
        int pct = (int) Math.round(spec.share() * 100);
        return new Workload(
                "hot-prefix-" + pct,
                String.format(
                        "hot prefix: %d-token system prompt on %d of %d requests (%d%%), others unique; %d-token question, "
                                + "%d-token output",
                        spec.systemTokens(), hits, spec.requests(), pct, spec.questionTokens(), spec.outputTokens()),
                out);
    }

    // ----------------------------------------------------------------------------------------------
    // Mooncake trace replay

    /** The Mooncake trace at {@link #MOONCAKE_BLOCK_CHARS} characters per 512-token block. */
    public static Workload mooncake(Path trace) {
        return mooncake(trace, MOONCAKE_BLOCK_CHARS);
    }

    /**
     * Replays a Mooncake trace ({@code timestamp} ms, {@code input_length}, {@code output_length},
     * {@code hash_ids} of 512-token blocks). Every hash id becomes a block of {@code charsPerBlock}
     * characters of text (the same id always the same text, different ids differing from their first
     * characters); a request's prompt is its blocks concatenated, the last cut so that the prompt has
     * {@code input_length * charsPerBlock / 512} characters. Output lengths are kept; arrival times are the
     * trace's. Sent as completion prompts.
     */
    public static Workload mooncake(Path trace, int charsPerBlock) {
        if (charsPerBlock < 16) {
            throw new IllegalArgumentException("charsPerBlock must be at least 16, was " + charsPerBlock);
        }
        Map<Long, String> blockText = new HashMap<>();
        List<WorkloadRequest> out = new ArrayList<>();
        try (BufferedReader in = Files.newBufferedReader(trace, StandardCharsets.UTF_8)) {
            String line;
            int lineNo = 0;
            while ((line = in.readLine()) != null) {
                lineNo++;
                if (line.isBlank()) {
                    continue;
                }
                JsonNode n = JSON.readTree(line);
                long ts = n.path("timestamp").asLong(-1);
                int input = n.path("input_length").asInt(-1);
                int output = n.path("output_length").asInt(-1);
                JsonNode ids = n.path("hash_ids");
                if (ts < 0 || input < 1 || output < 0 || !ids.isArray() || ids.isEmpty()) {
                    throw new IllegalArgumentException(trace + " line " + lineNo + ": not a Mooncake trace record");
                }
                long chars = Math.max(1, (long) Math.ceil((double) input * charsPerBlock / MOONCAKE_BLOCK_TOKENS));
                StringBuilder sb = new StringBuilder((int) chars);
                for (int k = 0; k < ids.size() && sb.length() < chars; k++) {
                    long id = ids.get(k).asLong();
                    sb.append(blockText.computeIfAbsent(id, x -> blockText(x, charsPerBlock)));
                }
                sb.setLength((int) Math.min(chars, sb.length()));
                out.add(WorkloadRequest.completion(sb.toString(), Math.max(1, output), null)
                        .at(ts * 1_000_000L));
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read trace " + trace, e);
        }
        out.sort((a, b) -> Long.compare(a.arrivalNanos(), b.arrivalNanos()));
        return new Workload(
                "mooncake-trace",
                String.format(
                        "Mooncake trace replay: %d requests, 512-token blocks as %d characters (%d tokens, scale 1/%d), "
                                + "output lengths as traced",
                        out.size(),
                        charsPerBlock,
                        charsPerBlock / CHARS_PER_TOKEN,
                        MOONCAKE_BLOCK_TOKENS * CHARS_PER_TOKEN / charsPerBlock),
                out);
    }

    /** The text of trace block {@code id}: its id first, then filler seeded by the id. */
    static String blockText(long id, int chars) {
        StringBuilder sb = new StringBuilder(chars);
        sb.append('#').append(Long.toString(id, 36)).append(' ');
        Filler.append(sb, Filler.seed(0x4D6F6F6EL, id), Math.max(0, chars - sb.length()));
        sb.setLength(chars);
        return sb.toString();
    }
}
