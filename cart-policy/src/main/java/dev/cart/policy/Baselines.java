package dev.cart.policy;

import dev.cart.core.Reason;
import dev.cart.core.spi.Choice;
import dev.cart.core.spi.Replica;
import dev.cart.core.spi.RoutingContext;
import dev.cart.core.spi.RoutingPolicy;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The baseline policies: they ignore the prefix tree (and do not feed it), so they show what cache
 * awareness adds. All thread-safe.
 */
final class Baselines {

    private Baselines() {}

    /** Each candidate in turn. */
    static final class RoundRobin implements RoutingPolicy {
        private final AtomicLong next = new AtomicLong();

        @Override
        public Choice choose(RoutingContext ctx) {
            List<Replica> c = ctx.candidates();
            return Choice.of(c.get((int) Math.floorMod(next.getAndIncrement(), (long) c.size())), Reason.POLICY);
        }

        @Override
        public boolean usesPrefixTree() {
            return false;
        }

        @Override
        public String name() {
            return "round_robin";
        }
    }

    /** A candidate uniformly at random. */
    static final class Random implements RoutingPolicy {
        @Override
        public Choice choose(RoutingContext ctx) {
            List<Replica> c = ctx.candidates();
            return Choice.of(c.get(ctx.random().nextInt(c.size())), Reason.POLICY);
        }

        @Override
        public boolean usesPrefixTree() {
            return false;
        }

        @Override
        public String name() {
            return "random";
        }
    }

    /** The least-loaded candidate, ties at random. */
    static final class LeastLoaded implements RoutingPolicy {
        @Override
        public Choice choose(RoutingContext ctx) {
            return Choice.of(ctx.leastLoaded(), Reason.POLICY);
        }

        @Override
        public boolean usesPrefixTree() {
            return false;
        }

        @Override
        public String name() {
            return "least_loaded";
        }
    }

    /** The less loaded of two distinct candidates drawn at random. */
    static final class PowerOfTwo implements RoutingPolicy {
        @Override
        public Choice choose(RoutingContext ctx) {
            List<Replica> c = ctx.candidates();
            int n = c.size();
            if (n == 1) {
                return Choice.of(c.get(0), Reason.POLICY);
            }
            int a = ctx.random().nextInt(n);
            int b = ctx.random().nextInt(n - 1);
            if (b >= a) {
                b++;
            }
            long la = c.get(a).load();
            long lb = c.get(b).load();
            Replica pick =
                    la < lb ? c.get(a) : lb < la ? c.get(b) : c.get(ctx.random().nextBoolean() ? a : b);
            return Choice.of(pick, Reason.POLICY);
        }

        @Override
        public boolean usesPrefixTree() {
            return false;
        }

        @Override
        public String name() {
            return "power_of_two";
        }
    }

    /**
     * Rendezvous hashing on the key's anchor (its first message, or its first characters), with a load
     * bound ({@code hash_load_factor}, default 1.25; 0 for plain hashing). Requests without text go to
     * the least-loaded candidate.
     */
    static final class ConsistentHash implements RoutingPolicy {
        private final double loadFactor;

        ConsistentHash(double loadFactor) {
            this.loadFactor = loadFactor;
        }

        @Override
        public Choice choose(RoutingContext ctx) {
            if (ctx.key().isEmpty()) {
                return Choice.of(ctx.leastLoaded(), Reason.EMPTY_TEXT);
            }
            return Choice.of(Rendezvous.pick(ctx.key().anchorHash(), ctx.candidates(), loadFactor), Reason.POLICY);
        }

        @Override
        public boolean usesPrefixTree() {
            return false;
        }

        @Override
        public String name() {
            return "consistent_hash";
        }
    }
}
