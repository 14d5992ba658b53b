package dev.cart.core;

import dev.cart.core.spi.ConfirmedPrefix;
import dev.cart.core.spi.Match;
import dev.cart.core.spi.Replica;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * Puts what the engines confirm ({@link ConfirmedPrefix}, precise mode) into the tree's {@link Match}: for a
 * replica the view covers, its holding is the view's length (none when 0), whatever the tree guessed; any
 * other replica keeps the tree's holding. The covered replicas looked at are the candidates (a policy
 * chooses only among them); holders that are not candidates stay as the tree gave them. Holders come out
 * longest first, as the match promises. Stateless.
 */
final class ConfirmedMatch {

    private ConfirmedMatch() {}

    /**
     * {@code tree} with {@code view}'s lengths for the replicas it covers; {@code tree} itself when there is
     * no view.
     *
     * @param candidates the decision's candidates (load views are unwrapped to the pool's replicas)
     */
    static Match merge(Match tree, @Nullable ConfirmedPrefix view, List<Replica> candidates) {
        if (view == null) {
            return tree;
        }
        int keyLength = tree.keyLength();
        List<Match.Holding> out = new ArrayList<>(tree.holders().size() + candidates.size());
        for (Match.Holding h : tree.holders()) {
            if (!view.covers(h.replica())) {
                out.add(h);
            }
        }
        for (int i = 0; i < candidates.size(); i++) {
            Replica r = CombinedLoadReplica.unwrap(candidates.get(i));
            if (view.covers(r)) {
                int len = Math.min(keyLength, Math.max(0, view.matchedLength(r)));
                if (len > 0) {
                    out.add(new Match.Holding(r, len));
                }
            }
        }
        out.sort((a, b) -> Integer.compare(b.matchedLength(), a.matchedLength()));
        int matched = out.isEmpty() ? 0 : out.get(0).matchedLength();
        return new Match(matched, keyLength, out);
    }
}
