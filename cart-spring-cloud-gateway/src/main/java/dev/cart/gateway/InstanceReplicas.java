package dev.cart.gateway;

import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.ReplicaSpec;
import dev.cart.core.spi.Replica;
import dev.cart.core.spi.ReplicaSet;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.cloud.client.ServiceInstance;

/**
 * The gateway's service instances as CART's {@link ReplicaSet}: the one place this module touches the replica
 * SPI. Each instance the {@code ServiceInstanceListSupplier} reports (static list, Kubernetes, Consul…) becomes a
 * replica whose id is the instance's base URI; an instance that leaves discovery leaves the set at the next
 * decision (its routes, matched by no candidate any more, age out of the tree).
 *
 * <p>How: each replica is the single member of its own {@link ManagedReplicaSet}, so it keeps everything the
 * router gives managed replicas (an in-flight count capped at {@code max_load}, a circuit breaker fed by request
 * outcomes with admission generations), while membership follows discovery, which a
 * fixed {@code ManagedReplicaSet} cannot. A replica's cap and penalty come from the instance's metadata
 * ({@code cart.max-load}, {@code cart.load-penalty}) or the {@code cart.*} defaults; when they change, the
 * replica is replaced (leases taken on the old one still release on it).
 *
 * <p>Concurrency: {@link #replicas()} reads one volatile snapshot and never blocks. {@link #update} is cheap when
 * the supplier hands back the list it handed back last time (its caching supplier does); otherwise it rebuilds
 * the snapshot under this object's lock. A request may be routed to a replica of an older snapshot; it stays
 * valid (its instance is remembered until the replica has nothing in flight).
 */
final class InstanceReplicas implements ReplicaSet {

    private static final Logger LOG = LoggerFactory.getLogger(InstanceReplicas.class);

    static final String MAX_LOAD_METADATA = "cart.max-load";
    static final String LOAD_PENALTY_METADATA = "cart.load-penalty";

    private record Slot(ReplicaSpec spec, ManagedReplicaSet.Member member, ServiceInstance instance) {}

    /** {@code source}: the supplier's list the members were made from, null before the first. */
    private record Snapshot(@Nullable List<ServiceInstance> source, List<ManagedReplicaSet.Member> members) {}

    private final int defaultMaxLoad;
    private final int defaultLoadPenalty;
    /** Current and departing replicas by id; a departing one stays until its in-flight count is 0. */
    private final Map<String, Slot> slots = new ConcurrentHashMap<>();

    private final Map<Replica, ServiceInstance> instances = new ConcurrentHashMap<>();
    private volatile Snapshot current = new Snapshot(null, List.of());

    InstanceReplicas(int defaultMaxLoad, int defaultLoadPenalty) {
        this.defaultMaxLoad = defaultMaxLoad;
        this.defaultLoadPenalty = defaultLoadPenalty;
    }

    @Override
    public List<? extends Replica> replicas() {
        return current.members();
    }

    /** Brings the set in line with the supplier's current instances. */
    void update(List<ServiceInstance> latest) {
        if (current.source() == latest) {
            return;
        }
        synchronized (this) {
            if (current.source() == latest) {
                return;
            }
            Map<String, ServiceInstance> byId = new LinkedHashMap<>();
            for (ServiceInstance i : latest) {
                byId.putIfAbsent(id(i), i);
            }
            List<ManagedReplicaSet.Member> members = new ArrayList<>(byId.size());
            for (Map.Entry<String, ServiceInstance> e : byId.entrySet()) {
                ReplicaSpec spec = spec(e.getKey(), e.getValue());
                Slot slot = slots.get(e.getKey());
                if (slot == null || !slot.spec().equals(spec)) {
                    if (slot != null) {
                        retire(slot);
                    }
                    slot = new Slot(
                            spec,
                            ManagedReplicaSet.builder()
                                    .add(spec)
                                    .build()
                                    .replicas()
                                    .get(0),
                            e.getValue());
                } else if (slot.instance() != e.getValue()) {
                    slot = new Slot(spec, slot.member(), e.getValue());
                }
                slots.put(e.getKey(), slot);
                instances.put(slot.member(), slot.instance());
                members.add(slot.member());
            }
            List<Slot> gone = new ArrayList<>();
            for (Slot s : slots.values()) {
                if (!byId.containsKey(s.spec().id())) {
                    gone.add(s);
                }
            }
            for (Slot s : gone) {
                slots.remove(s.spec().id());
                retire(s);
            }
            current = new Snapshot(latest, List.copyOf(members));
            java.util.Set<Replica> live = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
            live.addAll(members);
            instances.keySet().removeIf(r -> !live.contains(r) && r.inFlight() == 0);
        }
    }

    /**
     * A replica that left (or was replaced): its instance is kept while requests are in flight on it. Its routes
     * stay in the prefix tree, matched by no candidate, until eviction drops them (the router offers no way to
     * remove a replica's routes).
     */
    private void retire(Slot s) {
        if (s.member().inFlight() == 0) {
            instances.remove(s.member());
        }
    }

    /** The instance behind a replica this set handed out, or null if it left and has nothing in flight. */
    @Nullable
    ServiceInstance instance(Replica replica) {
        return instances.get(replica);
    }

    /** Requests in flight on the current replicas. */
    int inFlight() {
        int n = 0;
        for (ManagedReplicaSet.Member m : current.members()) {
            n += m.inFlight();
        }
        return n;
    }

    /** In-flight count per current replica id, in discovery order. */
    Map<String, Integer> inFlightByReplica() {
        Map<String, Integer> out = new LinkedHashMap<>();
        for (ManagedReplicaSet.Member m : current.members()) {
            out.put(m.id(), m.inFlight());
        }
        return out;
    }

    int size() {
        return current.members().size();
    }

    private ReplicaSpec spec(String id, ServiceInstance i) {
        Map<String, String> md = i.getMetadata();
        int maxLoad = metadataInt(md, MAX_LOAD_METADATA, defaultMaxLoad, 1, id);
        int penalty = metadataInt(md, LOAD_PENALTY_METADATA, defaultLoadPenalty, 0, id);
        return new ReplicaSpec(id, maxLoad, penalty);
    }

    private static int metadataInt(@Nullable Map<String, String> md, String key, int def, int min, String id) {
        String v = md == null ? null : md.get(key);
        if (v == null || v.isBlank()) {
            return def;
        }
        try {
            int n = Integer.parseInt(v.trim());
            if (n >= min) {
                return n;
            }
        } catch (NumberFormatException e) {
            // fall through
        }
        LOG.warn("instance {}: metadata {} must be an integer >= {}, was '{}'; using {}", id, key, min, v, def);
        return def;
    }

    /** A replica's id: the instance's base URI without a trailing slash. */
    static String id(ServiceInstance i) {
        String s = i.getUri().toString();
        while (s.endsWith("/")) {
            s = s.substring(0, s.length() - 1);
        }
        return s;
    }
}
