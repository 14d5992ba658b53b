package dev.cart.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.proxy.config.ConfigException;
import dev.cart.proxy.config.ConfigLoader;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The proxy in token mode: keys of token ids, cache hits, and the tokenization figures in /metrics. */
class ProxyTokenModeTest {

    @Test
    void tokenKeysRouteByCacheAndReportTheirFigures() throws Exception {
        try (LogCapture log = new LogCapture("cart.decision");
                ProxyHarness h =
                        ProxyHarness.start(2, "cache:\n  tokenizer: cl100k_base\n  match_abs_threshold: 2048\n")) {
            String body = CacheFeedbackTest.chat(CacheFeedbackTest.PROMPT + "Where is my order?", false, false);
            for (int i = 0; i < 3; i++) {
                assertEquals(200, h.post("/v1/chat/completions", body).statusCode());
                int lines = i + 1; // a decision line is written as its exchange ends: wait, so lines keep request order
                ProxyHarness.await("decision line " + lines, () -> log.lines().size() >= lines);
            }
            ProxyHarness.await("three decision lines", () -> log.lines().size() >= 3);
            List<Map<String, String>> d =
                    log.lines().stream().map(CacheFeedbackTest::fields).toList();
            assertEquals(
                    List.of("miss", "cache_hit", "cache_hit"),
                    d.stream().map(x -> x.get("reason")).toList());
            int keyLen = Integer.parseInt(d.get(1).get("key_len"));
            assertTrue(keyLen < CacheFeedbackTest.PROMPT.length() / 2, "the key counts tokens: " + keyLen);
            PromText m = PromText.parse(h.get("/metrics").body());
            assertEquals(3, m.value("cart_tokenization_total", "outcome", "tokenized"), m.dump("cart_tokenization"));
            assertTrue(m.value("cart_token_cache_lookups_total", "result", "hit") >= 2, "later requests hit the cache");
            assertEquals(3, m.value("cart_tokenizer_duration_seconds_count"));
        }
    }

    @Test
    void anUnknownTokenizerIsAConfigError() {
        ConfigException e = org.junit.jupiter.api.Assertions.assertThrows(
                ConfigException.class,
                () -> ConfigLoader.parse("workers:\n  - url: http://127.0.0.1:9\ncache:\n  tokenizer: gpt2\n"));
        assertTrue(e.getMessage().contains("cache.tokenizer"), e.getMessage());
    }
}
