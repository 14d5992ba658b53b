package dev.cart.policy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.quicktheories.QuickTheory.qt;
import static org.quicktheories.generators.SourceDSL.integers;
import static org.quicktheories.generators.SourceDSL.lists;

import dev.cart.core.CircuitBreaker;
import dev.cart.core.PromptKey;
import dev.cart.core.Reason;
import dev.cart.core.ReplicaSpec;
import dev.cart.core.RouteDecision;
import dev.cart.core.RouteRequest;
import dev.cart.core.Router;
import dev.cart.core.spi.Replica;
import dev.cart.core.spi.ReplicaSet;
import dev.cart.testing.ReplicaSets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Models over random pools, for every shipped policy, over the managed replica set and a host's own: for
 * random model assignments (replaced at run time, as discovery does), health, loads and request
 * sequences, no request is ever routed to a replica not serving its model, {@code model_not_served} comes
 * exactly when no replica of the pool serves the model, and {@code no_replica} exactly when some do but
 * none of them can take the request.
 */
class ModelPropertiesTest {

    /** Model {@code i} is bit {@code i} of a replica's mask; mask 0 declares nothing: any model. */
    private static final List<String> MODELS = List.of("base", "base-sql-lora", "small", "never-declared");

    @ParameterizedTest
    @EnumSource(ReplicaSets.class)
    void requestsReachOnlyReplicasServingTheirModel(ReplicaSets kind) {
        qt().withFixedSeed(2121L)
                .withExamples(300)
                .forAll(
                        lists().of(integers().between(0, 7)).ofSizeBetween(1, 6),
                        lists().of(integers().between(0, 9)).ofSize(6),
                        integers().between(0, PolicyPropertiesTest.ALL.size() - 1),
                        integers().between(0, 100_000))
                .checkAssert((masks, states, policy, seed) -> check(kind, masks, states, policy, seed));
    }

    private static List<String> names(int mask) {
        List<String> names = new ArrayList<>();
        for (int b = 0; b < 3; b++) {
            if ((mask & (1 << b)) != 0) {
                names.add(MODELS.get(b));
            }
        }
        return names;
    }

    /** What the test itself believes: mask 0 serves any model, else the models of its bits. */
    private static boolean serves(int mask, String model) {
        return model == null || mask == 0 || names(mask).contains(model);
    }

    /** A key as cart-extract makes it: the model's marker first, then the prompt. */
    private static PromptKey key(String model, int prompt) {
        String marker = "\0model:" + String.format("%016x", model == null ? 0 : model.hashCode()) + "\0";
        return PromptKey.ofText(marker + CacheAwarePolicyTest.SYSTEM + (prompt % 3) + " question " + prompt, 64);
    }

    private static void check(ReplicaSets kind, List<Integer> masksIn, List<Integer> states, int policy, int seed) {
        int[] masks = masksIn.stream().mapToInt(Integer::intValue).toArray();
        List<ReplicaSpec> specs = new ArrayList<>();
        for (int i = 0; i < masks.length; i++) {
            specs.add(new ReplicaSpec("http://r" + i, 3, i % 2, names(masks[i])));
        }
        ReplicaSet set = kind.build(specs, CircuitBreaker.Config.defaults(), new PolicyPropertiesTest.MutableTime());
        List<Replica> replicas = List.copyOf(set.replicas());
        for (int i = 0; i < replicas.size(); i++) {
            if (states.get(i) == 0) {
                kind.makeUnhealthy(replicas.get(i)); // some replicas down from the start
            }
        }
        SplittableRandom rnd = new SplittableRandom(seed);
        List<RouteDecision> open = new ArrayList<>();
        try (Router router = Router.builder()
                .replicas(set)
                .policy(PolicyPropertiesTest.ALL.get(policy).get())
                .random(() -> rnd)
                .evictionInterval(Duration.ZERO)
                .build()) {
            for (int q = 0; q < 40; q++) {
                if (rnd.nextInt(10) == 0) { // discovery replaces one replica's models
                    int i = rnd.nextInt(replicas.size());
                    masks[i] = rnd.nextInt(8);
                    kind.serveModels(replicas.get(i), names(masks[i]));
                }
                int m = rnd.nextInt(MODELS.size() + 1);
                String model = m == MODELS.size() ? null : MODELS.get(m);
                Replica avoid = rnd.nextInt(4) == 0 ? replicas.get(rnd.nextInt(replicas.size())) : null;
                boolean servedByAny = false;
                boolean usable = false;
                for (int i = 0; i < replicas.size(); i++) {
                    Replica r = replicas.get(i);
                    if (serves(masks[i], model)) {
                        servedByAny = true;
                        usable |= r != avoid && r.isAvailable() && r.inFlight() < r.maxLoad();
                    }
                }
                RouteRequest request =
                        RouteRequest.of(key(model, rnd.nextInt(9))).withModel(model);
                RouteDecision d = router.choose(avoid == null ? request : request.excluding(avoid));
                if (!servedByAny) {
                    assertEquals(Reason.MODEL_NOT_SERVED, d.reason(), "no replica serves " + model);
                    assertFalse(d.routed());
                } else if (!usable) {
                    assertEquals(Reason.NO_REPLICA, d.reason(), model + " is served, but not now");
                    assertFalse(d.routed());
                } else {
                    assertTrue(d.routed(), "a usable replica serves " + model + ": " + d);
                    int chosen = replicas.indexOf(d.replica());
                    assertTrue(
                            serves(masks[chosen], model),
                            d.replica().id() + " does not serve " + model + " (mask " + masks[chosen] + ")");
                    assertTrue(d.replica() != avoid, "an excluded replica was chosen");
                }
                if (d.routed() && rnd.nextInt(3) > 0) {
                    open.add(d); // held: replicas fill up to their cap of 3
                } else {
                    d.lease().close();
                }
                if (!open.isEmpty() && rnd.nextInt(3) == 0) {
                    open.remove(rnd.nextInt(open.size())).lease().close();
                }
            }
        } finally {
            open.forEach(d -> d.lease().close());
        }
        assertEquals(0, ReplicaSets.totalInFlight(set));
    }
}
