package dev.cart.proxy;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * The text of an answer as the dialect readers find it: one block per choice (OpenAI) or per text content
 * block (Anthropic), kept only while it is plain text of one choice and at most {@link #MAX_CHARS}
 * characters. The first reason it stops being usable ({@code not_collected}, {@code too_long},
 * {@code not_text}, {@code several_choices}) is kept and the text dropped.
 *
 * <p>For {@link ResponseObserver}'s template of a streamed answer's events, it also keeps what the event being
 * read did ({@link #startEvent}): how many texts it appended, whether it did anything else
 * ({@link #otherEffect}), and where in the event's bytes the text of its one append lay, when the reader says
 * ({@link #append(int, String, long, long)}).
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

    // the event being read (startEvent)
    private int eventAppends;
    private boolean eventOther;
    private long spotFrom = -1;
    private long spotTo = -1;
    private int spotBlock;

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

    /** An event starts: what it appends and does is kept until the next one. */
    void startEvent() {
        eventAppends = 0;
        eventOther = false;
        spotFrom = -1;
        spotTo = -1;
    }

    /** The event did something besides appending text (read usage): it cannot stand for another. */
    void otherEffect() {
        eventOther = true;
    }

    /**
     * As {@link #append(int, String)}, for a text that is the JSON string value lying at parser byte offsets
     * {@code [from, to)} (its quotes included) of the event, appended to a block that the event's bytes alone
     * decide (not, say, the number of blocks so far).
     */
    void append(int block, String text, long from, long to) {
        append(block, text);
        spotFrom = from;
        spotTo = to;
        spotBlock = block;
    }

    /**
     * Where the text of the event's only effect lay: its start offset, when the event appended one text by
     * {@link #append(int, String, long, long)} and did nothing else, -1 otherwise.
     */
    long eventSpotFrom() {
        return eventAppends == 1 && !eventOther ? spotFrom : -1;
    }

    /** The end offset of {@link #eventSpotFrom()}'s text (after its closing quote). */
    long eventSpotTo() {
        return spotTo;
    }

    /** The block of {@link #eventSpotFrom()}'s text. */
    int eventSpotBlock() {
        return spotBlock;
    }

    void append(int block, String text) {
        StringBuilder to = block(block, text.length());
        if (to != null) {
            to.append(text);
        }
    }

    /** As {@link #append(int, String)}, for the text {@code text[off, off + len)}. */
    void append(int block, char[] text, int off, int len) {
        StringBuilder to = block(block, len);
        if (to != null) {
            to.append(text, off, len);
        }
    }

    /** Counts an append of {@code len} chars to {@code block}: where they go, or null when the text is unavailable. */
    private StringBuilder block(int block, int len) {
        eventAppends++;
        spotFrom = -1;
        if (problem != null) {
            return null;
        }
        if (block > MAX_BLOCK) {
            unavailable("not_text");
            return null;
        }
        chars += len;
        if (chars > MAX_CHARS) {
            unavailable("too_long");
            return null;
        }
        while (blocks.size() <= block) {
            blocks.add(new StringBuilder(256));
        }
        return blocks.get(block);
    }

    /** The answer cannot be used, for {@code why}; the first reason stands. */
    void unavailable(String why) {
        eventOther = true;
        if (problem == null) {
            problem = why;
            blocks.clear();
        }
    }

    int blockCount() {
        return blocks.size();
    }

    /**
     * The blocks' text as it is held, without a copy, or null when unavailable or empty ({@link #problem()}
     * says why): a read-only view, whose text changes if more is appended.
     */
    List<? extends CharSequence> held() {
        if (problem != null || blocks.isEmpty()) {
            return null;
        }
        return Collections.unmodifiableList(blocks);
    }

    /** The blocks' text as Strings, or null when unavailable or empty ({@link #problem()} says why). */
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
