/**
 * Prompt keys from OpenAI and Anthropic request bodies: {@link dev.cart.extract.PromptExtractor}. Token mode
 * needs jtokkit, an optional dependency: a host on the module path that sets a tokenizer requires it too
 * ({@code requires jtokkit;}, the name Java derives from its jar, which names no module).
 */
module dev.cart.extract {
    exports dev.cart.extract;
    exports dev.cart.extract.answer;

    requires transitive dev.cart.core;
    requires com.fasterxml.jackson.core;
    requires static jtokkit;
    // the nullness annotations of the API (@Nullable in signatures): read by hosts that compile against it
    requires static transitive org.jspecify;
}
