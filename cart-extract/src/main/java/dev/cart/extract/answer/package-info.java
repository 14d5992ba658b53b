/**
 * Reads a replica's answer as it passes to the client ({@link dev.cart.extract.answer.AnswerReader}): the
 * prompt-cache usage it reports and, when asked, its text, for OpenAI and Anthropic bodies, streamed or not.
 *
 * <p>Every type and member is non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package dev.cart.extract.answer;

import org.jspecify.annotations.NullMarked;
