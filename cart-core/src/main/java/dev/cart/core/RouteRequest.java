package dev.cart.core;

import dev.cart.core.spi.ConfirmedPrefix;
import dev.cart.core.spi.LeaseCompletion;
import dev.cart.core.spi.Replica;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * What the router needs to know about one request: its prompt key, the model it asks for (if any), and
 * the replicas it must avoid (a retry excludes those that already failed it).
 *
 * <p>A request that names a model goes only to replicas that {@linkplain Replica#serves serve} it; one
 * that names none may go to any replica. The prefix tree needs no model: a key made by cart-extract
 * starts with a marker of the model, so routes learned for one model never match a request for another.
 *
 * <p>Immutable: each {@code with...} and {@code excluding} returns a new request, safe to share between threads.
 */
public final class RouteRequest {

    private final PromptKey key;
    private final List<Replica> excluded;
    private final int attempt;
    private final Tokenization tokenization;
    private final @Nullable String model;
    /** What the engines report holding of this prompt (precise mode); null when the host has no such view. */
    private final @Nullable ConfirmedPrefix confirmed;

    private RouteRequest(PromptKey key, List<Replica> excluded, int attempt) {
        this(key, excluded, attempt, Tokenization.CHARACTER_MODE, null);
    }

    private RouteRequest(
            PromptKey key, List<Replica> excluded, int attempt, Tokenization tokenization, @Nullable String model) {
        this(key, excluded, attempt, tokenization, model, null);
    }

    private RouteRequest(
            PromptKey key,
            List<Replica> excluded,
            int attempt,
            Tokenization tokenization,
            @Nullable String model,
            @Nullable ConfirmedPrefix confirmed) {
        this.confirmed = confirmed;
        this.tokenization = Objects.requireNonNull(tokenization, "tokenization");
        this.key = Objects.requireNonNull(key, "key");
        this.excluded = excluded;
        this.attempt = attempt;
        this.model = model;
    }

    /**
     * A first attempt for {@code key}, for any model, excluding no replica.
     *
     * @param key the prompt's key; {@link PromptKey#empty()} routes by load alone
     * @return the request
     * @throws NullPointerException if {@code key} is null
     */
    public static RouteRequest of(PromptKey key) {
        return new RouteRequest(key, List.of(), 0);
    }

    /**
     * A request with no prompt text (routed by load alone).
     *
     * @return a first attempt with {@link PromptKey#empty()}
     */
    public static RouteRequest empty() {
        return new RouteRequest(PromptKey.empty(), List.of(), 0);
    }

    /**
     * The same request, also excluding {@code replica} (for a retry).
     *
     * @param replica the replica it must not go to (compared by identity)
     * @return a new request; this one is unchanged
     */
    public RouteRequest excluding(Replica replica) {
        Objects.requireNonNull(replica, "replica");
        Replica[] all = excluded.toArray(new Replica[excluded.size() + 1]);
        all[excluded.size()] = replica;
        return new RouteRequest(key, List.of(all), attempt, tokenization, model, confirmed);
    }

    /**
     * The same request, also excluding every replica in {@code replicas}.
     *
     * @param replicas the replicas it must not go to; none of them null
     * @return a new request (this one, if {@code replicas} is empty)
     */
    public RouteRequest excluding(Collection<? extends Replica> replicas) {
        RouteRequest r = this;
        for (Replica x : replicas) {
            r = r.excluding(x);
        }
        return r;
    }

    /**
     * The same request marked as attempt {@code n} (0 is the first; a first retry is 1). Routing ignores
     * it; it reaches listeners as {@link RouteDecision#attempt()} and {@link LeaseCompletion#retries()}.
     *
     * @param n the attempt's number, 0 or more
     * @return a new request
     * @throws IllegalArgumentException if {@code n} is negative
     */
    public RouteRequest attempt(int n) {
        if (n < 0) {
            throw new IllegalArgumentException("attempt must be >= 0, was " + n);
        }
        return new RouteRequest(key, excluded, n, tokenization, model, confirmed);
    }

    /**
     * The same request, carrying how its key was tokenized (reported with the decision).
     *
     * @param t how the key was made
     * @return a new request
     * @throws NullPointerException if {@code t} is null
     */
    public RouteRequest withTokenization(Tokenization t) {
        return new RouteRequest(key, excluded, attempt, t, model, confirmed);
    }

    /**
     * The same request, asking for {@code model} (the request body's {@code model} field): only replicas
     * serving it are candidates. Null or empty means no model, as cart-extract treats them alike.
     *
     * @param model the model's name, or null or empty for none
     * @return a new request
     */
    public RouteRequest withModel(@Nullable String model) {
        return new RouteRequest(
                key, excluded, attempt, tokenization, model == null || model.isEmpty() ? null : model, confirmed);
    }

    /**
     * The same request, carrying what the replicas' engines report holding of its prompt (precise mode):
     * for the replicas {@code confirmed} covers, the router's match takes its lengths instead of the prefix
     * tree's guesses. Null removes it. Retries made from this request ({@link #excluding}) keep it.
     *
     * @param confirmed the engines' view of this prompt, or null for none
     * @return a new request
     */
    public RouteRequest withConfirmed(@Nullable ConfirmedPrefix confirmed) {
        return new RouteRequest(key, excluded, attempt, tokenization, model, confirmed);
    }

    /**
     * What the engines report holding of this prompt.
     *
     * @return the view given to {@link #withConfirmed}, or null when the host attached nothing
     */
    public @Nullable ConfirmedPrefix confirmed() {
        return confirmed;
    }

    /**
     * The model the request asks for.
     *
     * @return the model's name (never empty), or null when it names none (any replica may take it)
     */
    public @Nullable String model() {
        return model;
    }

    /**
     * How the key was made, as the host reported it.
     *
     * @return the tokenization; {@link Tokenization#CHARACTER_MODE} if not said
     */
    public Tokenization tokenization() {
        return tokenization;
    }

    /**
     * Attempts that came before this one for the same request.
     *
     * @return 0 for a first attempt, 1 for a first retry, ...
     */
    public int attempt() {
        return attempt;
    }

    /**
     * The request's prompt key.
     *
     * @return the key
     */
    public PromptKey key() {
        return key;
    }

    /**
     * Replicas this request must not go to.
     *
     * @return an unmodifiable list, in the order they were excluded
     */
    public List<Replica> excluded() {
        return excluded;
    }

    /**
     * Whether {@code replica} is excluded (compared by identity).
     *
     * @param replica a replica
     * @return true if the request must not go to it
     */
    public boolean isExcluded(Replica replica) {
        for (int i = 0; i < excluded.size(); i++) {
            if (excluded.get(i) == replica) {
                return true;
            }
        }
        return false;
    }

    @Override
    public String toString() {
        return "RouteRequest[" + key + (model == null ? "" : " model=" + model) + " excluded=" + excluded.size()
                + " attempt=" + attempt + "]";
    }
}
