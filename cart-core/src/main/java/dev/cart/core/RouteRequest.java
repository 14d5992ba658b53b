package dev.cart.core;

import java.util.Collection;
import java.util.List;
import java.util.Objects;

/**
 * What the router needs to know about one request: its prompt key and the replicas it must avoid (a
 * retry excludes those that already failed it).
 */
public final class RouteRequest {

    private final PromptKey key;
    private final List<Replica> excluded;

    private RouteRequest(PromptKey key, List<Replica> excluded) {
        this.key = Objects.requireNonNull(key, "key");
        this.excluded = excluded;
    }

    /** A first attempt for {@code key}. */
    public static RouteRequest of(PromptKey key) {
        return new RouteRequest(key, List.of());
    }

    /** A request with no prompt text (routed by load alone). */
    public static RouteRequest empty() {
        return new RouteRequest(PromptKey.empty(), List.of());
    }

    /** The same request, also excluding {@code replica} (for a retry). */
    public RouteRequest excluding(Replica replica) {
        Objects.requireNonNull(replica, "replica");
        Replica[] all = excluded.toArray(new Replica[excluded.size() + 1]);
        all[excluded.size()] = replica;
        return new RouteRequest(key, List.of(all));
    }

    /** The same request, also excluding every replica in {@code replicas}. */
    public RouteRequest excluding(Collection<? extends Replica> replicas) {
        RouteRequest r = this;
        for (Replica x : replicas) {
            r = r.excluding(x);
        }
        return r;
    }

    public PromptKey key() {
        return key;
    }

    /** Replicas this request must not go to. */
    public List<Replica> excluded() {
        return excluded;
    }

    /** True if {@code replica} is excluded (compared by identity). */
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
        return "RouteRequest[" + key + " excluded=" + excluded.size() + "]";
    }
}
