package dev.cart.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class PhasePartsTest {

    @Test
    void theLoopsUserTimeIsSpreadByShareOfSamplesLargestFirst() {
        Map<String, Double> spread = PhaseParts.spread(Map.of("extraction", 30L, "metrics", 10L, "relay", 60L), 20.0);
        assertEquals(List.of("relay", "extraction", "metrics"), List.copyOf(spread.keySet()));
        assertEquals(12.0, spread.get("relay"), 1e-9);
        assertEquals(6.0, spread.get("extraction"), 1e-9);
        assertEquals(2.0, spread.get("metrics"), 1e-9);
    }

    @Test
    void noSamplesSpreadNothing() {
        assertTrue(PhaseParts.spread(Map.of(), 20.0).isEmpty());
    }

    @Test
    void onlyNettysEventLoopsAreLoopsAsProcNamesThem() {
        assertTrue(PhaseParts.isLoop("multiThreadIoEv")); // /proc cuts names at 15 characters
        assertTrue(PhaseParts.isLoop("epollEventLoopG"));
        assertFalse(PhaseParts.isLoop("cart-extract-1"));
        assertFalse(PhaseParts.isLoop("C2 CompilerThre"));
    }

    @Test
    void aTargetMeasuredTwiceInARunKeepsBothColumns() {
        Set<String> taken = new LinkedHashSet<>();
        taken.add(PhaseParts.unique(taken, "cart 1024 B json"));
        taken.add(PhaseParts.unique(taken, "ref-netty 1024 B json"));
        taken.add(PhaseParts.unique(taken, "cart 1024 B json"));
        taken.add(PhaseParts.unique(taken, "cart 1024 B json"));
        assertEquals(
                List.of("cart 1024 B json", "ref-netty 1024 B json", "cart 1024 B json #2", "cart 1024 B json #3"),
                List.copyOf(taken));
    }
}
