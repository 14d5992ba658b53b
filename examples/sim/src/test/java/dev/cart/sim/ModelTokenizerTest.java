package dev.cart.sim;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.core.PromptKey;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The tokenizing replica model: template markers, and a turn plus its reply as a prefix of the next turn. */
class ModelTokenizerTest {

    private static final ModelTokenizer TOKENIZER = new ModelTokenizer();

    @Test
    void templateMarkersAreSingleSpecialTokensAndTextIsBpe() {
        int[] ids = TOKENIZER.chat(List.of(Message.system("Be brief."), Message.user("hello world")));
        assertEquals(ModelTokenizer.BEGIN_OF_TEXT, ids[0]);
        assertEquals(
                3,
                Arrays.stream(ids).filter(i -> i == ModelTokenizer.START_HEADER).count());
        assertEquals(2, Arrays.stream(ids).filter(i -> i == ModelTokenizer.EOT).count());
        assertEquals(ModelTokenizer.END_HEADER, ids[ids.length - 2], "ends with the assistant header and \\n\\n");
        int[] text = TOKENIZER.text("hello world");
        assertEquals(2, text.length, "cl100k_base: two tokens");
        assertArrayEquals(new int[] {ModelTokenizer.BEGIN_OF_TEXT, 15339, 1917}, TOKENIZER.completion("hello world"));
    }

    @Test
    void aTurnFollowedByItsReplyIsAPrefixOfTheNextTurn() {
        Workload w = Workloads.multiTurn(5, new Workloads.ChatSpec(4, 4, 64, 8, 24, 8, 24));
        Map<String, int[]> sequence = new HashMap<>();
        int checked = 0;
        for (WorkloadRequest r : w.requests()) {
            int[] prompt = TOKENIZER.prompt(r);
            int[] before = sequence.get(r.session());
            if (before != null) {
                assertTrue(before.length < prompt.length);
                assertArrayEquals(before, Arrays.copyOf(prompt, before.length), "prompt and reply, then more");
                checked++;
            }
            int[] reply = TOKENIZER.text(r.reply());
            int[] seq = Arrays.copyOf(prompt, prompt.length + reply.length);
            System.arraycopy(reply, 0, seq, prompt.length, reply.length);
            sequence.put(r.session(), seq);
        }
        assertEquals(4 * 3, checked);
    }

    @Test
    void preparedInTokensTheReplicaCountsTheEncodingsTokens() {
        Workload w = Workloads.multiTurn(5, new Workloads.ChatSpec(3, 3, 64, 8, 24, 8, 24));
        PreparedWorkload chars = PreparedWorkload.of(w, EngineConfig.defaults());
        PreparedWorkload tokens = PreparedWorkload.of(
                w, EngineConfig.defaults(), new PreparedWorkload.Options(PromptKey.Unit.TOKENS, true, true));
        for (int i = 0; i < w.size(); i++) {
            WorkloadRequest r = w.requests().get(i);
            assertEquals(TOKENIZER.prompt(r).length, tokens.promptTokens[i]);
            assertEquals(TOKENIZER.text(r.reply()).length, tokens.maxTokens[i], "the reply is what is generated");
            assertEquals(r.maxTokens(), chars.maxTokens[i]);
            assertEquals(PromptKey.Unit.TOKENS, tokens.keys[i].unit());
            assertEquals(PromptKey.Unit.TOKENS, tokens.answerKeys[i].unit());
        }
        assertTrue(tokens.idealHitRatio() > 0.5, "turns reuse the previous turn and its reply");
    }
}
