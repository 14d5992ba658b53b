/**
 * Precise mode from the engines' own KV-cache events (vLLM, SGLang): {@link dev.cart.kvevents.KvSubscriber}
 * follows each engine's ZMQ event stream into a {@link dev.cart.kvevents.KvIndex}, which knows the blocks of
 * engine tokens each replica holds; a request's tokens, as the engine renders them
 * ({@link dev.cart.kvevents.PromptTokenizer}, {@link dev.cart.kvevents.EngineTokenizer}), are looked up there
 * and handed to the router as a {@link dev.cart.kvevents.PreciseMatch}. A replica whose events are missing or
 * untrusted falls back to the router's own guess ({@link dev.cart.kvevents.ReplicaMode}).
 */
@NullMarked
package dev.cart.kvevents;

import org.jspecify.annotations.NullMarked;
