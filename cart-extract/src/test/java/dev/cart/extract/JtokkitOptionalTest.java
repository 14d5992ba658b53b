package dev.cart.extract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import org.junit.jupiter.api.Test;

/** jtokkit is optional: character mode runs without it, token mode says what is missing. */
class JtokkitOptionalTest {

    /** cart-extract and cart-core, without jtokkit (nor anything else of the test class path). */
    private static URLClassLoader withoutJtokkit() {
        URL extract = Tokenizers.class.getProtectionDomain().getCodeSource().getLocation();
        URL core = dev.cart.core.PromptKey.class
                .getProtectionDomain()
                .getCodeSource()
                .getLocation();
        URL jackson = com.fasterxml.jackson.core.JsonFactory.class
                .getProtectionDomain()
                .getCodeSource()
                .getLocation();
        return new URLClassLoader(new URL[] {extract, core, jackson}, ClassLoader.getPlatformClassLoader());
    }

    @Test
    void tokenModeWithoutJtokkitFailsWithAClearError() throws Exception {
        try (URLClassLoader loader = withoutJtokkit()) {
            assertThrows(ClassNotFoundException.class, () -> loader.loadClass(Tokenizers.JTOKKIT_CLASS));
            Method jtokkit = loader.loadClass(Tokenizers.class.getName()).getMethod("jtokkit", String.class);
            InvocationTargetException e =
                    assertThrows(InvocationTargetException.class, () -> jtokkit.invoke(null, "cl100k_base"));
            IllegalStateException cause = assertInstanceOf(IllegalStateException.class, e.getCause());
            assertTrue(cause.getMessage().contains("com.knuddels:jtokkit"), cause.getMessage());
            // An unknown name is still reported as such, without jtokkit.
            InvocationTargetException unknown =
                    assertThrows(InvocationTargetException.class, () -> jtokkit.invoke(null, "gpt2"));
            assertInstanceOf(IllegalArgumentException.class, unknown.getCause());
        }
    }

    @Test
    void characterModeRunsWithoutJtokkit() throws Exception {
        try (URLClassLoader loader = withoutJtokkit()) {
            Class<?> options = loader.loadClass(ExtractOptions.class.getName());
            Object defaults = options.getMethod("defaults").invoke(null);
            Class<?> extractorClass = loader.loadClass(PromptExtractor.class.getName());
            Object extractor = extractorClass.getConstructor(options).newInstance(defaults);
            Class<?> endpoint = loader.loadClass(Endpoint.class.getName());
            Object chat = endpoint.getField("CHAT_COMPLETIONS").get(null);
            Object req = extractorClass
                    .getMethod("extract", endpoint, byte[].class)
                    .invoke(
                            extractor,
                            chat,
                            "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
                                    .getBytes(java.nio.charset.StandardCharsets.UTF_8));
            assertNotNull(req);
            Object key = req.getClass().getMethod("key").invoke(req);
            assertEquals(
                    PromptExtractorKeyLength.of(),
                    key.getClass().getMethod("length").invoke(key));
        }
    }

    /** The key length the same body gives with jtokkit present. */
    private static final class PromptExtractorKeyLength {
        static Object of() throws ExtractionException {
            return new PromptExtractor(ExtractOptions.defaults())
                    .extract(
                            Endpoint.CHAT_COMPLETIONS,
                            "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
                                    .getBytes(java.nio.charset.StandardCharsets.UTF_8))
                    .key()
                    .length();
        }
    }
}
