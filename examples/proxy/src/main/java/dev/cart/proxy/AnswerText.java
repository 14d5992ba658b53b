package dev.cart.proxy;

import java.util.ArrayList;
import java.util.List;

/**
 * The text of an answer as the dialect readers find it: one block per choice (OpenAI) or per text content
 * block (Anthropic), kept only while it is plain text of one choice and at most {@link #MAX_CHARS}
 * characters. The first reason it stops being usable ({@code not_collected}, {@code too_long},
 * {@code not_text}, {@code several_choices}) is kept and the text dropped.
 *
 * <p>Not thread-safe: one instance per response.
 */
final class AnswerText {

    /** Longest answer kept for learning. */
    static final int MAX_CHARS = 64 * 1024;
    /** Highest block index kept; an answer with more blocks is not plain text. */
    private static final int MAX_BLOCK = 64;

    private final boolean collect;
    private final List<StringBuilder> blocks = new ArrayList<>();
    private int chars;
    private String problem;

    /** {@code collect} false: the text is not wanted ({@code not_collected}). */
    AnswerText(boolean collect) {
        this.collect = collect;
        if (!collect) {
            problem = "not_collected";
        }
    }

    /**
     * Whether text is still wanted: collected, and not yet unusable (the readers skip text values otherwise,
     * and the observer parses only events that may carry usage).
     */
    boolean collecting() {
        return collect && problem == null;
    }

    void append(int block, String text) {
        if (problem != null) {
            return;
        }
        if (block > MAX_BLOCK) {
            unavailable("not_text");
            return;
        }
        chars += text.length();
        if (chars > MAX_CHARS) {
            unavailable("too_long");
            return;
        }
        while (blocks.size() <= block) {
            blocks.add(new StringBuilder());
        }
        blocks.get(block).append(text);
    }

    /** The answer cannot be used, for {@code why}; the first reason stands. */
    void unavailable(String why) {
        if (problem == null) {
            problem = why;
            blocks.clear();
        }
    }

    int blockCount() {
        return blocks.size();
    }

    /** The blocks' text, or null when unavailable or empty ({@link #problem()} says why). */
    List<String> text() {
        if (problem != null || blocks.isEmpty()) {
            return null;
        }
        List<String> out = new ArrayList<>(blocks.size());
        for (StringBuilder b : blocks) {
            out.add(b.toString());
        }
        return out;
    }

    /** Why {@link #text()} is null ({@code empty} when nothing arrived); null when it is available. */
    String problem() {
        if (problem == null && blocks.isEmpty()) {
            return "empty";
        }
        return problem;
    }
}
