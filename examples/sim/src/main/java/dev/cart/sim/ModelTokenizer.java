package dev.cart.sim;

import dev.cart.extract.Tokenizer;
import dev.cart.extract.Tokenizers;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The simulated model's tokenizer, for the replica model that counts real tokens: the prompt as the
 * replica renders it in its chat template ({@link ChatTemplate}), turned into token ids the way a
 * Llama-3 server does. Each template marker ({@code <|begin_of_text|>}, {@code <|start_header_id|>},
 * {@code <|end_header_id|>}, {@code <|eot_id|>}) is one special token, the text between markers is
 * encoded on its own (BPE never merges across a special token), and the {@code "\n\n"} that follows a
 * header is its own token, as the encoder's pre-tokenisation splits it from the following word. The text
 * is encoded with {@code cl100k_base} (jtokkit through {@link Tokenizers#jtokkit}): a real BPE vocabulary,
 * so token counts follow the text as a model's would, not a fixed four characters per token.
 *
 * <p>The property that matters for caching holds by construction: the ids of a conversation's turn,
 * followed by the ids of the reply the model generated ({@link #text} of the reply), are a prefix of the
 * ids of the next turn, which carries that reply as an assistant message.
 *
 * <p>Encoding every prompt is the expensive part of preparing a workload in this model, so texts are
 * cached (a bounded LRU map by exact text): a conversation's earlier messages, a shared system prompt and
 * the documents of a RAG workload are encoded once. Not thread-safe; one instance per preparation.
 */
final class ModelTokenizer {

    /** Llama-3's special token ids, outside {@code cl100k_base}'s vocabulary. */
    static final int BEGIN_OF_TEXT = 128_000;

    static final int START_HEADER = 128_006;
    static final int END_HEADER = 128_007;
    static final int EOT = 128_009;

    private static final int CACHE_ENTRIES = 4096;

    private final Tokenizer tokenizer;
    private final int[] newlines;
    private final Map<String, int[]> cache = new LinkedHashMap<>(256, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, int[]> eldest) {
            return size() > CACHE_ENTRIES;
        }
    };

    ModelTokenizer() {
        this(Tokenizers.jtokkit("cl100k_base"));
    }

    ModelTokenizer(Tokenizer tokenizer) {
        this.tokenizer = tokenizer;
        this.newlines = tokenizer.encode("\n\n");
    }

    /** The ids of plain text (a message's content, a reply). */
    int[] text(String s) {
        if (s.isEmpty()) {
            return new int[0];
        }
        int[] ids = cache.get(s);
        if (ids == null) {
            ids = tokenizer.encode(s);
            cache.put(s, ids);
        }
        return ids;
    }

    /** The ids of the prompt {@link ChatTemplate#render} makes of {@code messages}. */
    int[] chat(List<Message> messages) {
        IntList out = new IntList(64);
        out.add(BEGIN_OF_TEXT);
        for (Message m : messages) {
            header(out, m.role());
            out.addAll(text(m.content()));
            out.add(EOT);
        }
        header(out, "assistant");
        return out.toArray();
    }

    /** The ids of the prompt {@link ChatTemplate#renderCompletion} makes of {@code prompt}. */
    int[] completion(String prompt) {
        IntList out = new IntList(prompt.length() / 3 + 2);
        out.add(BEGIN_OF_TEXT);
        out.addAll(text(prompt));
        return out.toArray();
    }

    /** The ids of the prompt the replica computes for {@code r}. */
    int[] prompt(WorkloadRequest r) {
        return r.prompt() != null ? completion(r.prompt()) : chat(r.messages());
    }

    private void header(IntList out, String role) {
        out.add(START_HEADER);
        out.addAll(text(role));
        out.add(END_HEADER);
        out.addAll(newlines);
    }

    /** A growable int array. */
    static final class IntList {
        private int[] a;
        private int n;

        IntList(int capacity) {
            a = new int[Math.max(4, capacity)];
        }

        void add(int v) {
            if (n == a.length) {
                a = java.util.Arrays.copyOf(a, a.length * 2);
            }
            a[n++] = v;
        }

        void addAll(int[] v) {
            if (n + v.length > a.length) {
                a = java.util.Arrays.copyOf(a, Math.max(a.length * 2, n + v.length));
            }
            System.arraycopy(v, 0, a, n, v.length);
            n += v.length;
        }

        int[] toArray() {
            return java.util.Arrays.copyOf(a, n);
        }
    }
}
