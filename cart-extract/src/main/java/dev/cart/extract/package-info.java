/**
 * Prompt keys from OpenAI and Anthropic request bodies: a {@link dev.cart.extract.PromptExtractor}, configured by
 * {@link dev.cart.extract.ExtractOptions}, reads a body once and returns an {@link
 * dev.cart.extract.ExtractedRequest} with the model, the {@link dev.cart.core.PromptKey} and the streaming flag,
 * or throws an {@link dev.cart.extract.ExtractionException} naming what is wrong with the body.
 *
 * <p>Every type and member is non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package dev.cart.extract;

import org.jspecify.annotations.NullMarked;
