package dev.cart.core;

import dev.cart.core.internal.PrefixTree;
import dev.cart.core.spi.Match;
import dev.cart.core.spi.Replica;
import dev.cart.core.spi.RoutingContext;
import dev.cart.core.sync.RemoteLoad;
import java.util.ArrayList;
import java.util.List;
import java.util.random.RandomGenerator;
import org.jspecify.annotations.Nullable;

/**
 * The router's {@link RoutingContext} for one decision: the tree is matched on first use. Not shared.
 *
 * <p>With a {@link RemoteLoad}, the candidates are {@link CombinedLoadReplica} views, and the match the
 * policy sees names those views in place of the tree's replicas (so a policy compares holders with
 * candidates by identity as usual); {@link #treeMatch()} keeps the tree's own answer for the router. A
 * view's pending prefill is this router's count plus the others' ({@link #pendingPrefill}).
 */
final class RouterContext implements RoutingContext {

    private final RouteRequest request;
    private final List<Replica> candidates;
    private final @Nullable PrefixTree tree;
    private final RandomGenerator random;
    private final boolean combined;
    private final ReplicaLedger ledger;
    private @Nullable Match treeMatch;
    private @Nullable Match match;

    /**
     * @param tree   the tree to match against, or null when the key cannot match it (another unit)
     * @param ledger the router's per-replica figures, read for {@link #pendingPrefill}
     */
    RouterContext(
            RouteRequest request,
            List<Replica> candidates,
            @Nullable PrefixTree tree,
            RandomGenerator random,
            ReplicaLedger ledger) {
        this.request = request;
        this.ledger = ledger;
        this.candidates = candidates;
        this.tree = tree;
        this.random = random;
        this.combined = !candidates.isEmpty() && candidates.get(0) instanceof CombinedLoadReplica;
    }

    @Override
    public RouteRequest request() {
        return request;
    }

    @Override
    public List<Replica> candidates() {
        return candidates;
    }

    @Override
    public Match match() {
        Match m = match;
        if (m == null) {
            m = combined ? withViews(treeMatch()) : treeMatch();
            match = m;
        }
        return m;
    }

    /**
     * The tree's match, naming the pool's own replicas, with what the engines confirm in place of the
     * tree's guess for the replicas the request's {@link RouteRequest#confirmed() confirmed view} covers.
     */
    Match treeMatch() {
        Match m = treeMatch;
        if (m == null) {
            m = tree == null ? Match.none(request.key().length()) : tree.match(request.key());
            m = ConfirmedMatch.merge(m, request.confirmed(), candidates); // precise mode, where the host has it
            treeMatch = m;
        }
        return m;
    }

    /** {@code m} with each holder that is a candidate replaced by its candidate view. */
    private Match withViews(Match m) {
        if (m.holders().isEmpty()) {
            return m;
        }
        List<Match.Holding> mapped = new ArrayList<>(m.holders().size());
        for (Match.Holding h : m.holders()) {
            Replica view = h.replica();
            for (int i = 0; i < candidates.size(); i++) {
                if (((CombinedLoadReplica) candidates.get(i)).local == view) {
                    view = candidates.get(i);
                    break;
                }
            }
            mapped.add(view == h.replica() ? h : new Match.Holding(view, h.matchedLength()));
        }
        return new Match(m.matchedLength(), m.keyLength(), mapped);
    }

    @Override
    public RandomGenerator random() {
        return random;
    }

    /** This router's count for the replica, plus the other instances' for a combined view. */
    @Override
    public long pendingPrefill(Replica replica) {
        if (replica instanceof CombinedLoadReplica c) {
            return ledger.pendingPrefill(c.local) + c.remotePendingPrefill();
        }
        return ledger.pendingPrefill(replica);
    }

    /** Candidates are updated by the router when an acquisition races and fails. */
    void drop(Replica replica) {
        for (int i = 0; i < candidates.size(); i++) {
            if (candidates.get(i) == replica) {
                candidates.remove(i);
                return;
            }
        }
    }
}
