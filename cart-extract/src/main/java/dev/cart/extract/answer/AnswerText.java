package dev.cart.extract.answer;

import java.util.Arrays;
import java.util.List;
import org.jspecify.annotations.Nullable;

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
 * <p>Allocation: a block that receives one text (a JSON answer's) keeps that String as it is, and {@link #text()} gives
 * it back without a copy; a builder is made only for a block's second text (a streamed answer's pieces).
 *
 * <p>Not thread-safe: one instance per response.
 */
final class AnswerText {

    /** Longest answer kept for learning. */
    static final int MAX_CHARS = 64 * 1024;
    /** Highest block index kept; an answer with more blocks is not plain text. */
    private static final int MAX_BLOCK = 64;

    private final boolean collect;
    /** Block i: null (nothing yet), a String (one text, as given) or a StringBuilder (several); empty when none. */
    private Object[] blocks = NO_BLOCKS;

    private static final Object[] NO_BLOCKS = new Object[0];
    /** Blocks in use: the highest block appended to, plus one. */
    private int blockCount;

    private int chars;
    private @Nullable String problem;

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
     * and the reader parses only events that may carry usage).
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
        if (!admit(block, text.length())) {
            return;
        }
        if (blocks[block] == null) {
            blocks[block] = text; // kept as it is: a block of one text is not copied
        } else {
            builder(block, text.length()).append(text);
        }
    }

    /** As {@link #append(int, String)}, for the text {@code text[off, off + len)}. */
    void append(int block, char[] text, int off, int len) {
        if (admit(block, len)) {
            builder(block, len).append(text, off, len);
        }
    }

    /** Counts an append of {@code len} chars to {@code block}: whether they are kept (the block then exists). */
    private boolean admit(int block, int len) {
        eventAppends++;
        spotFrom = -1;
        if (problem != null) {
            return false;
        }
        if (block > MAX_BLOCK) {
            unavailable("not_text");
            return false;
        }
        chars += len;
        if (chars > MAX_CHARS) {
            unavailable("too_long");
            return false;
        }
        if (block >= blocks.length) {
            blocks = Arrays.copyOf(blocks, Math.max(Math.max(2, block + 1), blocks.length * 2));
        }
        blockCount = Math.max(blockCount, block + 1);
        return true;
    }

    /** Block {@code block} as a builder with room for {@code more} chars, holding what it had. */
    private StringBuilder builder(int block, int more) {
        Object b = blocks[block];
        if (b instanceof StringBuilder several) {
            return several;
        }
        String had = (String) b;
        StringBuilder to = new StringBuilder(Math.max(256, (had == null ? 0 : had.length()) + more));
        if (had != null) {
            to.append(had);
        }
        blocks[block] = to;
        return to;
    }

    /** The answer cannot be used, for {@code why}; the first reason stands. */
    void unavailable(String why) {
        eventOther = true;
        if (problem == null) {
            problem = why;
            blocks = NO_BLOCKS;
            blockCount = 0;
        }
    }

    int blockCount() {
        return blockCount;
    }

    /**
     * The blocks as they are held (a block's one String, or the builder its texts went into; "" for a block
     * nothing was appended to), their text not copied, or null when unavailable or empty ({@link #problem()}
     * says why). For use once the answer is complete: a later append may change or replace a block.
     */
    @Nullable
    List<? extends CharSequence> held() {
        if (problem != null || blockCount == 0) {
            return null;
        }
        if (blockCount == 1) {
            return List.of(held(blocks[0]));
        }
        CharSequence[] out = new CharSequence[blockCount];
        for (int i = 0; i < blockCount; i++) {
            out[i] = held(blocks[i]);
        }
        return List.of(out);
    }

    private static CharSequence held(@Nullable Object block) {
        return block == null ? "" : (CharSequence) block;
    }

    /** The blocks' text as Strings (a block's one String as it is), or null as for {@link #held()}. */
    @Nullable
    List<String> text() {
        List<? extends CharSequence> held = held();
        if (held == null) {
            return null;
        }
        String[] out = new String[held.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = held.get(i).toString();
        }
        return List.of(out);
    }

    /** Why {@link #text()} is null ({@code empty} when nothing arrived); null when it is available. */
    @Nullable
    String problem() {
        if (problem == null && blockCount == 0) {
            return "empty";
        }
        return problem;
    }
}
