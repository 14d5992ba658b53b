package dev.cart.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class SimulationTest {

    @Test
    void smoke() {
        Workload w = Workloads.sharedPrefix(7, 8, 8, 1024, 64, 32).poisson(8, 7);
        for (var p : java.util.List.of("rr", "lm")) {
            Simulation sim = Simulation.builder().replicas(4).seed(3)
                    .policy(p, p.equals("rr") ? TestPolicies::roundRobin : TestPolicies::longestMatch).build();
            RunResult r = sim.run(w);
            System.out.println(r);
            assertEquals(w.size(), r.completed());
            assertTrue(r.hitRatio() <= r.idealHitRatio() + 1e-9);
        }
    }
}
