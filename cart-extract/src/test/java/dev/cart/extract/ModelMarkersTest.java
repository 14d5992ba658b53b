package dev.cart.extract;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class ModelMarkersTest {

    private static final String[] MODELS = {null, "", "m", "llama-3.1-8b-instruct", "qwen", "caf\u00e9", "\ud83d\ude80"
    };
    private static final String[] SALTS = {null, "", "x", "tenant-1", "m"};

    @Test
    void everyMarkerIsTheOneMadeAfreshWhateverWasCachedBefore() {
        ModelMarkers markers = new ModelMarkers();
        List<String[]> parts = new ArrayList<>();
        for (String m : MODELS) {
            for (String s : SALTS) {
                for (String l : SALTS) {
                    parts.add(new String[] {m, s, l});
                }
            }
        }
        // more part sets than slots, in random order and repeated, so slots are shared and replaced
        SplittableRandom rnd = new SplittableRandom(7);
        for (int i = 0; i < 5_000; i++) {
            String[] p = parts.get(rnd.nextInt(parts.size()));
            // fresh String instances, as a parser gives: equal parts, never the same objects
            String m = p[0] == null ? null : new String(p[0].toCharArray());
            byte[] got = markers.marker(m, p[1], p[2]);
            String want = Extraction.modelMarker(p[0], p[1], p[2]);
            assertArrayEquals(want.getBytes(StandardCharsets.US_ASCII), got, Arrays.toString(p));
            assertEquals(want.length(), got.length, "the marker is ASCII, one byte a character");
        }
    }

    @Test
    void aRepeatedModelIsServedFromTheCache() {
        ModelMarkers markers = new ModelMarkers();
        byte[] first = markers.marker("llama-3.1-8b-instruct", null, null);
        assertSame(first, markers.marker(new String("llama-3.1-8b-instruct".toCharArray()), null, null));
    }

    @Test
    void oneExtractorKeysAlternatingModelsSaltsAndAdaptersAsFreshExtractorsDo() throws Exception {
        PromptExtractor shared = new PromptExtractor(ExtractOptions.defaults());
        String[] extras = {
            "", "\"cache_salt\":\"a\",", "\"lora_path\":\"a\",", "\"cache_salt\":\"a\",\"lora_path\":\"a\","
        };
        for (int round = 0; round < 3; round++) {
            for (String model : new String[] {"m1", "m2"}) {
                for (String extra : extras) {
                    byte[] body = ("{" + extra + "\"model\":\"" + model
                                    + "\",\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}]}")
                            .getBytes(StandardCharsets.UTF_8);
                    assertEquals(
                            new PromptExtractor(ExtractOptions.defaults())
                                    .extract(Endpoint.CHAT_COMPLETIONS, body)
                                    .key(),
                            shared.extract(Endpoint.CHAT_COMPLETIONS, body).key(),
                            model + " " + extra);
                }
            }
        }
    }

    @Test
    void aModelNamedAgainOrDifferentlyGetsItsOwnMarker() throws Exception {
        PromptExtractor x = new PromptExtractor(ExtractOptions.defaults());
        String[] names = {"m", "m", "mm", "m", "\\u006d", "caf\u00e9", "m"};
        String[] read = {"m", "m", "mm", "m", "m", "caf\u00e9", "m"};
        for (int i = 0; i < names.length; i++) {
            byte[] body = ("{\"model\":\"" + names[i] + "\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}")
                    .getBytes(java.nio.charset.StandardCharsets.UTF_8);
            ExtractedRequest warm = x.extract(Endpoint.CHAT_COMPLETIONS, body);
            ExtractedRequest cold =
                    new PromptExtractor(ExtractOptions.defaults()).extract(Endpoint.CHAT_COMPLETIONS, body);
            assertEquals(read[i], warm.model());
            assertEquals(cold.key(), warm.key(), names[i]);
        }
    }
}
