package dev.cart.extract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.core.PromptKey;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The exact key text per endpoint, as the README documents it. */
class KeyFormatTest {

    private final PromptExtractor extractor = new PromptExtractor(ExtractOptions.defaults());

    private String text(Endpoint e, String json) throws ExtractionException {
        return Fixtures.show(extractor.keyText(e, json.getBytes(StandardCharsets.UTF_8)));
    }

    private String fixture(String name) throws ExtractionException {
        return Fixtures.show(extractor.keyText(Fixtures.endpoint(name), Fixtures.bytes(name)));
    }

    private PromptKey key(Endpoint e, String json) throws ExtractionException {
        return extractor.extract(e, json.getBytes(StandardCharsets.UTF_8)).key();
    }

    @Test
    void chatSystemAndTurns() throws Exception {
        assertEquals(
                Fixtures.marker("gpt-4o")
                        + "<S>system<L>You are a helpful assistant.|"
                        + "<S>user<L>Who won the world series in 2020?|"
                        + "<S>assistant<L>The Los Angeles Dodgers won the World Series in 2020.|"
                        + "<S>user<L>Where was it played?|",
                fixture("chat-system-multiturn"));
    }

    @Test
    void chatPartsNameAndRefusal() throws Exception {
        assertEquals(
                Fixtures.marker("o3-mini")
                        + "<S>developer<L>Answer in French.|"
                        + "<S>user<L>Hello!<,>How are you?<A>name<F>alice|"
                        + "<S>assistant<L><I>refusal<F>I cannot help with that.|"
                        + "<S>assistant<L><A>refusal<F>I'm sorry, I can't assist with that request.|"
                        + "<S>user<L>Pourquoi ?|",
                fixture("chat-developer-name"));
    }

    @Test
    void chatToolsComeFirstAsCanonicalJson() throws Exception {
        String t = fixture("chat-tools");
        assertTrue(
                t.startsWith(Fixtures.marker("gpt-4.1") + "<S>tools<L>{\"function\":{\"description\":"
                        + "\"Get the current weather in a given location\",\"name\":\"get_current_weather\",\"parameters\":"
                        + "{\"additionalProperties\":false,\"properties\":{\"location\":{\"description\":"),
                t);
        assertTrue(
                t.contains("\"type\":\"function\"}<,>{\"function\":{\"description\":\"Get a multi-day forecast\""), t);
        assertTrue(t.contains("}|<S>system<L>You are a weather bot. Use the tools.|"), t);
        assertTrue(
                t.contains("<S>assistant<L><A>tool_calls<F>[{\"function\":{\"arguments\":"
                        + "\"{\\\"location\\\": \\\"Boston, MA\\\", \\\"unit\\\": \\\"fahrenheit\\\"}\","
                        + "\"name\":\"get_current_weather\"},\"id\":\"call_abc123\",\"type\":\"function\"}]|"),
                t);
        assertTrue(
                t.contains(
                        "<S>tool<L>{\"temperature\": 72, \"unit\": \"fahrenheit\", \"forecast\": [\"sunny\", \"windy\"]}"
                                + "<A>tool_call_id<F>call_abc123|"),
                t);
        assertTrue(t.endsWith("<S>user<L>And tomorrow?|"), t);
    }

    @Test
    void canonicalJsonOfToolsKeepsEveryCharacter() throws Exception {
        // escapes re-escaped minimally, raw and escaped non-ASCII text, a pair and a lone surrogate, numbers
        // as written, members sorted: the key text is the canonical JSON's characters, whatever the spelling
        String t = text(
                Endpoint.CHAT_COMPLETIONS,
                "{\"model\":\"m\",\"tools\":[{\"z\":1.50,\"d\":\"a\\\"b\\\\c\\/d\\n\\u0001\","
                        + "\"c\":\"caf\u00e9 \\u00e9 \u65e5\\u672c \ud83d\ude00 \\ud83d\\ude00 \\ud800x\","
                        + "\"b\":[true,false,null,-2e3]}],\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
        assertEquals(
                Fixtures.marker("m")
                        + "<S>tools<L>{\"b\":[true,false,null,-2e3],"
                        + "\"c\":\"caf\u00e9 \u00e9 \u65e5\u672c \ud83d\ude00 \ud83d\ude00 \ud800x\","
                        + "\"d\":\"a\\\"b\\\\c/d\\u000a\\u0001\",\"z\":1.50}|"
                        + "<S>user<L>hi|",
                t);
    }

    @Test
    void legacyFunctions() throws Exception {
        String t = fixture("chat-legacy-functions");
        assertTrue(t.startsWith(Fixtures.marker("gpt-3.5-turbo-0613") + "<S>functions<L>{\"description\":"), t);
        assertTrue(
                t.contains(
                        "<S>assistant<L><A>function_call<F>{\"arguments\":\"{\\\"location\\\": \\\"Boston, MA\\\"}\","
                                + "\"name\":\"get_current_weather\"}|"),
                t);
        assertTrue(
                t.endsWith(
                        "<S>function<L>{\"temperature\": \"22\", \"unit\": \"celsius\"}<A>name<F>get_current_weather|"),
                t);
    }

    @Test
    void chatMedia() throws Exception {
        assertTrue(fixture("chat-image-url")
                .endsWith("<S>user<L>What's in this image?<,><I>image_url<F>url="
                        + "https://upload.wikimedia.org/wikipedia/commons/thumb/d/dd/Gfp-wisconsin-madison-the-nature-boardwalk.jpg/"
                        + "2560px-Gfp-wisconsin-madison-the-nature-boardwalk.jpg<F>detail=high|"));
        assertTrue(fixture("chat-image-inline")
                .matches(".*<S>user<L>What colour is this pixel\\?<,><I>image_url<F>"
                        + "url=data:image/png;base64,#[0-9a-f]{32}\\|"));
        assertTrue(fixture("chat-input-audio")
                .matches(".*<S>user<L>What is in this recording\\?<,><I>input_audio<F>"
                        + "data=#[0-9a-f]{32}<F>format=wav\\|"));
        assertTrue(fixture("chat-file")
                .matches(".*<S>user<L><I>file<F>filename=draconomicon.pdf<F>file_data="
                        + "data:application/pdf;base64,#[0-9a-f]{32}<,>What is the first dragon in the book\\?\\|.*"));
        assertTrue(fixture("chat-file")
                .endsWith("<S>user<L><I>file<F>file_id=file-6F2ksmvXxt4VdoqmHRw6kL<,>And in this one?|"));
        assertTrue(
                fixture("chat-vllm-media")
                        .endsWith(
                                "<S>user<L><I>video_url<F>url=https://example.com/clips/cat.mp4"
                                        + "<,><I>audio_url<F>url=https://example.com/clips/cat.wav<,>Describe the clip and its sound.|"));
    }

    @Test
    void completions() throws Exception {
        assertEquals(Fixtures.marker("gpt-3.5-turbo-instruct") + "Say this is a test", fixture("completions-string"));
        assertEquals(
                Fixtures.marker("gpt-3.5-turbo-instruct") + "Once upon a time|<,>In a galaxy far, far away|",
                fixture("completions-array"));
        assertEquals(
                Fixtures.marker("davinci-002") + "<I>tokens<F>1212,318,257,1332,13,", fixture("completions-tokens"));
        assertEquals(
                Fixtures.marker("meta-llama/Llama-3.1-8B")
                        + "<I>tokens<F>128000,791,3938,315,|<,><I>tokens<F>128000,40,1093,|",
                fixture("completions-token-batch"));
    }

    @Test
    void emptyPromptGivesEmptyKey() throws Exception {
        for (String prompt : new String[] {"\"\"", "null", "[]", "[\"\"]"}) {
            PromptKey k = key(Endpoint.COMPLETIONS, "{\"model\":\"m\",\"prompt\":" + prompt + "}");
            assertTrue(k.isEmpty(), prompt);
            assertEquals(0, k.boundaryCount(), prompt);
        }
        assertTrue(key(Endpoint.COMPLETIONS, "{\"model\":\"m\"}").isEmpty(), "absent prompt");
    }

    @Test
    void anthropic() throws Exception {
        assertEquals(
                Fixtures.marker("claude-sonnet-4-5")
                        + "<S>system<L>You are a world-class poet. Respond only with short poems.|"
                        + "<S>user<L>Hello, Claude|<S>assistant<L>Hello! How can I help?|<S>user<L>Why is the ocean salty?|",
                fixture("messages-basic"));
        assertEquals(
                Fixtures.marker("claude-opus-4-1")
                        + "<S>system<L>You are an AI assistant tasked with analyzing literary works.<,>"
                        + "<the entire contents of Pride and Prejudice>|"
                        + "<S>user<L>Analyze the major themes in Pride and Prejudice.|",
                fixture("messages-system-blocks"));
        String tools = fixture("messages-tools");
        assertTrue(
                tools.startsWith(
                        Fixtures.marker("claude-sonnet-4-5") + "<S>tools<L>{\"description\":\"Get the current weather"),
                tools);
        assertTrue(
                tools.contains("\"name\":\"get_time\"}|<S>user<L>"), "cache_control is not part of a tool: " + tools);
        assertTrue(
                tools.contains(
                        "<S>assistant<L>I'll check the current weather in San Francisco for you.<,><I>tool_use"
                                + "<F>id=toolu_01A09q90qw90lq917835lq9<F>name=get_weather<F>input={\"location\":\"San Francisco, CA\",\"unit\":\"celsius\"}|"),
                tools);
        assertTrue(
                tools.contains(
                        "<S>user<L><I>tool_result<F>content=15 degrees<F>tool_use_id=toolu_01A09q90qw90lq917835lq9|"),
                tools);
        assertTrue(
                tools.endsWith(
                        "<S>user<L><I>tool_result<F>content=09:41<F>tool_use_id=toolu_02<,>Should I take an umbrella?|"),
                tools);
    }

    @Test
    void anthropicSourcesAndThinking() throws Exception {
        assertTrue(fixture("messages-image-base64")
                .matches(
                        ".*<S>user<L><I>image<F>source=base64:image/png:#[0-9a-f]{32}" + "<,>Describe this image.\\|"));
        assertTrue(
                fixture("messages-image-url")
                        .endsWith(
                                "<S>user<L><I>image<F>source=url:"
                                        + "https://upload.wikimedia.org/wikipedia/commons/a/a7/Camponotus_flavomarginatus_ant.jpg<,>Describe this image.|"));
        assertTrue(fixture("messages-documents")
                .matches(".*<S>user<L>"
                        + "<I>document<F>source=base64:application/pdf:#[0-9a-f]{32}<F>title=Report<F>context=Quarterly numbers<,>"
                        + "<I>document<F>source=text:text/plain:#[0-9a-f]{32}<F>title=My Document<,>"
                        + "<I>document<F>source=content:First chunk<,>Second chunk<,>"
                        + "<I>document<F>source=file:file_011CNha8iCJcU1wXNR6q4V8w<,>Summarise these documents.\\|"));
        assertTrue(fixture("messages-thinking")
                .matches(".*<S>assistant<L><I>thinking<F>Let me think about primes congruent to 3 mod 4...<,>"
                        + "<I>redacted_thinking<F>data=#[0-9a-f]{32}<,>Yes: this follows from a variant of Euclid's argument.\\|"
                        + "<S>user<L>Show the proof.\\|"));
    }

    @Test
    void stringContentEqualsOneTextPart() throws Exception {
        String a = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi there\"}]}";
        String b =
                "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi there\"}]}]}";
        assertEquals(key(Endpoint.CHAT_COMPLETIONS, a), key(Endpoint.CHAT_COMPLETIONS, b));
        assertEquals(key(Endpoint.MESSAGES, a), key(Endpoint.MESSAGES, b));
    }

    @Test
    void sameConversationGivesSameKeyOnChatAndMessagesEndpoints() throws Exception {
        String chat = "{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"Be brief.\"},"
                + "{\"role\":\"user\",\"content\":\"hi\"}]}";
        String anth =
                "{\"model\":\"m\",\"system\":\"Be brief.\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
        assertEquals(key(Endpoint.CHAT_COMPLETIONS, chat), key(Endpoint.MESSAGES, anth));
    }

    @Test
    void absentModelAndEmptyModelShareAMarkerButNamedModelsDoNot() throws Exception {
        String none = text(Endpoint.CHAT_COMPLETIONS, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}");
        String empty = text(
                Endpoint.CHAT_COMPLETIONS, "{\"model\":\"\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}");
        String nul = text(
                Endpoint.CHAT_COMPLETIONS, "{\"model\":null,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}");
        assertEquals(none, empty);
        assertEquals(none, nul);
        assertNotEquals(
                none,
                text(
                        Endpoint.CHAT_COMPLETIONS,
                        "{\"model\":\"a\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}"));
        assertEquals(
                24,
                Extraction.modelMarker("any model name at all, however long it is")
                        .length());
    }

    @Test
    void modelAndStreamAreReported() throws Exception {
        ExtractedRequest r = extractor.extract(Endpoint.CHAT_COMPLETIONS, Fixtures.bytes("chat-stream"));
        assertEquals("gpt-4o-mini", r.model());
        assertTrue(r.stream());
        r = extractor.extract(Endpoint.MESSAGES, Fixtures.bytes("messages-system-blocks"));
        assertTrue(r.stream());
        r = extractor.extract(Endpoint.COMPLETIONS, Fixtures.bytes("completions-token-batch"));
        assertTrue(r.stream());
        r = extractor.extract(Endpoint.CHAT_COMPLETIONS, Fixtures.bytes("chat-tools"));
        assertFalse(r.stream());
        r = extractor.extract(
                Endpoint.CHAT_COMPLETIONS,
                "{\"stream\":null,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}"
                        .getBytes(StandardCharsets.UTF_8));
        assertFalse(r.stream());
        assertEquals(null, r.model());
    }

    @Test
    void unknownPartTypesEnterAsCanonicalJson() throws Exception {
        String t = text(
                Endpoint.CHAT_COMPLETIONS,
                "{\"messages\":[{\"role\":\"user\",\"content\":["
                        + "{\"type\":\"image_embeds\",\"zeta\":1,\"alpha\":{\"b\":true,\"a\":null},\"cache_control\":{\"type\":\"ephemeral\"}}]}]}");
        assertTrue(t.endsWith("<S>user<L><I>image_embeds<F>{\"alpha\":{\"a\":null,\"b\":true},\"zeta\":1}|"), t);
        String longText = "x".repeat(CanonicalJson.MAX_GENERIC_STRING_BYTES + 1);
        t = text(
                Endpoint.MESSAGES,
                "{\"messages\":[{\"role\":\"user\",\"content\":["
                        + "{\"type\":\"search_result\",\"source\":\"https://example.com\",\"title\":\"T\",\"content\":"
                        + "[{\"type\":\"text\",\"text\":\"" + longText + "\"}]}]}]}");
        assertTrue(
                t.matches(".*<I>search_result<F>\\{\"content\":\\[\\{\"text\":#[0-9a-f]{32},\"type\":\"text\"}],"
                        + "\"source\":\"https://example.com\",\"title\":\"T\"}\\|"),
                t);
    }

    @Test
    void discriminatorNotFirstIsReadTheSame() throws Exception {
        String first = "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},"
                + "{\"type\":\"image_url\",\"image_url\":{\"url\":\"https://e.com/x.png\"}}]}],\"model\":\"m\"}";
        String last = "{\"model\":\"m\",\"messages\":[{\"content\":[{\"text\":\"a\",\"type\":\"text\"},"
                + "{\"image_url\":{\"url\":\"https://e.com/x.png\"},\"type\":\"image_url\"}],\"role\":\"user\"}]}";
        assertEquals(text(Endpoint.CHAT_COMPLETIONS, first), text(Endpoint.CHAT_COMPLETIONS, last));
        String a1 =
                "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image\",\"source\":{\"type\":\"base64\","
                        + "\"media_type\":\"image/png\",\"data\":\"AAAA\"}}]}]}";
        String a2 =
                "{\"messages\":[{\"content\":[{\"source\":{\"data\":\"AAAA\",\"media_type\":\"image/png\",\"type\":\"base64\"},"
                        + "\"type\":\"image\"}],\"role\":\"user\"}]}";
        assertEquals(text(Endpoint.MESSAGES, a1), text(Endpoint.MESSAGES, a2));
    }
}
