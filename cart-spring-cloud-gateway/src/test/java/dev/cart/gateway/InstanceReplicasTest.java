package dev.cart.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.core.Lease;
import dev.cart.core.PromptKey;
import dev.cart.core.Reason;
import dev.cart.core.RouteDecision;
import dev.cart.core.RouteRequest;
import dev.cart.core.Router;
import dev.cart.core.spi.Replica;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.cloud.client.DefaultServiceInstance;
import org.springframework.cloud.client.ServiceInstance;

/** Discovery's instances as CART's replicas: membership follows the instance list; nothing is lost on the way. */
class InstanceReplicasTest {

    private static ServiceInstance instance(int port, Map<String, String> metadata) {
        return new DefaultServiceInstance("llm-" + port, "llm", "10.0.0.1", port, false, metadata);
    }

    private static Router router(InstanceReplicas replicas) {
        return Router.builder()
                .replicas(replicas)
                .policy("cache_aware")
                .evictionInterval(Duration.ZERO)
                .firstTokenReports(true)
                .build();
    }

    private static PromptKey key(String text) {
        return PromptKey.ofText(text, PromptKey.DEFAULT_BLOCK_CHARS);
    }

    @Test
    void replicasFollowTheInstanceListAndKeepTheirState() {
        InstanceReplicas set = new InstanceReplicas(256, 0);
        Router router = router(set);
        List<ServiceInstance> two = List.of(instance(8000, Map.of()), instance(8001, Map.of()));
        set.update(two);
        assertEquals(List.of("http://10.0.0.1:8000", "http://10.0.0.1:8001"), ids(set));

        String prompt = "a shared system prompt for everyone. ".repeat(20);
        RouteDecision first = router.choose(RouteRequest.of(key(prompt)));
        Replica holder = first.replica();
        first.lease().close();

        // a new list object with one more instance: the existing replicas are the same objects (tree routes kept)
        List<ServiceInstance> three = new ArrayList<>(two);
        three.add(instance(8002, Map.of()));
        set.update(three);
        assertEquals(3, set.replicas().size());
        assertTrue(set.replicas().contains(holder));
        RouteDecision again = router.choose(RouteRequest.of(key(prompt + "more")));
        assertEquals(Reason.CACHE_HIT, again.reason());
        assertSame(holder, again.replica());
        again.lease().close();
    }

    @Test
    void aRemovedInstanceLeavesTheSetButItsLeaseStillReleases() {
        InstanceReplicas set = new InstanceReplicas(256, 0);
        Router router = router(set);
        ServiceInstance a = instance(8000, Map.of());
        ServiceInstance b = instance(8001, Map.of());
        set.update(List.of(a, b));
        String prompt = "the prompt that teaches the tree a route. ".repeat(20);
        RouteDecision d = router.choose(RouteRequest.of(key(prompt)));
        Lease lease = d.lease();
        ServiceInstance chosen = set.instance(d.replica());
        assertNotNull(chosen);

        set.update(List.of(chosen == a ? b : a)); // the chosen instance leaves discovery mid-request
        assertEquals(1, set.replicas().size());
        assertNotNull(set.instance(d.replica()), "its instance is known while its request is in flight");

        lease.succeeded();
        lease.close();
        assertEquals(0, d.replica().inFlight());
        RouteDecision next = router.choose(RouteRequest.of(key(prompt)));
        assertTrue(set.replicas().contains(next.replica()), "routed to a replica still in discovery");
        assertEquals(Reason.MISS, next.reason(), "the departed holder's route does not count as a hit");
        next.lease().close();
        set.update(List.of(chosen == a ? b : a, instance(8009, Map.of())));
        assertNull(set.instance(d.replica()), "forgotten once nothing is in flight on it");
    }

    @Test
    void metadataSetsAdmissionCapAndPenaltyAndABadValueFallsBackToTheDefault() {
        InstanceReplicas set = new InstanceReplicas(256, 0);
        set.update(List.of(
                instance(8000, Map.of("cart.max-load", "1", "cart.load-penalty", "3")),
                instance(8001, Map.of("cart.max-load", "lots"))));
        Replica capped = set.replicas().get(0);
        assertEquals(1, capped.maxLoad());
        assertEquals(3, capped.loadPenalty());
        assertEquals(256, set.replicas().get(1).maxLoad());

        Router router = router(set);
        List<Lease> leases = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            RouteDecision d = router.choose(RouteRequest.empty());
            leases.add(d.lease());
        }
        assertEquals(1, capped.inFlight(), "never past its cap");
        assertEquals(5, set.inFlight());
        leases.forEach(Lease::close);
        assertEquals(0, set.inFlight());
        assertEquals(Map.of("http://10.0.0.1:8000", 0, "http://10.0.0.1:8001", 0), set.inFlightByReplica());
    }

    @Test
    void changedMetadataReplacesTheReplicaWithoutLosingInFlightRequests() {
        InstanceReplicas set = new InstanceReplicas(256, 0);
        Router router = router(set);
        set.update(List.of(instance(8000, Map.of("cart.max-load", "4"))));
        RouteDecision d = router.choose(RouteRequest.empty());
        set.update(List.of(instance(8000, Map.of("cart.max-load", "8"))));
        Replica now = set.replicas().get(0);
        assertEquals(8, now.maxLoad());
        assertEquals(1, d.replica().inFlight());
        d.lease().close();
        assertEquals(0, d.replica().inFlight());
        assertEquals(0, now.inFlight());
    }

    private static List<String> ids(InstanceReplicas set) {
        List<String> out = new ArrayList<>();
        for (Replica r : set.replicas()) {
            out.add(r.id());
        }
        return out;
    }
}
