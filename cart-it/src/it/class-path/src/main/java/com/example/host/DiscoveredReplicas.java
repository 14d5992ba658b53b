package com.example.host;

import dev.cart.core.spi.ReplicaSet;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;

/** The pool as the host's own service discovery sees it, replaced as a whole when discovery reports. */
final class DiscoveredReplicas implements ReplicaSet {
    private volatile List<HostReplica> current = List.of();

    @Override
    public List<HostReplica> replicas() {
        return current; // an immutable snapshot: the router reads it once per decision
    }

    /** Discovery's latest list; a replica that stays keeps its object (the router compares by identity). */
    synchronized void update(List<String> urls, int maxLoad) {
        Map<String, HostReplica> known =
                current.stream().collect(Collectors.toMap(HostReplica::id, Function.identity()));
        List<HostReplica> next = new ArrayList<>();
        for (String url : urls) {
            next.add(known.getOrDefault(url, new HostReplica(url, maxLoad)));
        }
        current = List.copyOf(next);
    }
}
