package dev.cart.sim;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.SplittableRandom;

/**
 * A named list of requests, generated from a seed by {@link Workloads}. Immutable.
 *
 * @param name        short name used in reports
 * @param description one line on how it was generated
 * @param requests    requests in the order clients send them (arrival times ascending)
 */
public record Workload(String name, String description, List<WorkloadRequest> requests) {

    public Workload {
        Objects.requireNonNull(name);
        Objects.requireNonNull(description);
        requests = List.copyOf(requests);
    }

    public int size() {
        return requests.size();
    }

    /** The same requests with open-loop Poisson arrivals at {@code perSecond}, drawn from {@code seed}. */
    public Workload poisson(double perSecond, long seed) {
        if (!(perSecond > 0)) {
            throw new IllegalArgumentException("arrival rate must be positive, was " + perSecond);
        }
        SplittableRandom rnd = new SplittableRandom(Filler.seed(seed, 0xA77L));
        List<WorkloadRequest> out = new ArrayList<>(requests.size());
        double t = 0;
        for (WorkloadRequest r : requests) {
            out.add(r.at(Math.round(t * 1e9)));
            t += -Math.log(1.0 - rnd.nextDouble()) / perSecond;
        }
        return new Workload(name, description + String.format(", Poisson arrivals at %.2f req/s", perSecond), out);
    }

    /** The same requests with every arrival time multiplied by {@code factor} (below 1 compresses time). */
    public Workload timeScaled(double factor) {
        if (!(factor > 0)) {
            throw new IllegalArgumentException("time factor must be positive, was " + factor);
        }
        List<WorkloadRequest> out = new ArrayList<>(requests.size());
        for (WorkloadRequest r : requests) {
            out.add(r.at(Math.round(r.arrivalNanos() * factor)));
        }
        return new Workload(name, description + String.format(", timestamps x%.4f", factor), out);
    }

    /** The first {@code n} requests. */
    public Workload head(int n) {
        return new Workload(name, description, requests.subList(0, Math.min(n, requests.size())));
    }

    /** Mean prompt length in characters of the replica's rendering. */
    public double meanPromptChars() {
        long sum = 0;
        for (WorkloadRequest r : requests) {
            sum += r.replicaPrompt().length();
        }
        return requests.isEmpty() ? 0 : (double) sum / requests.size();
    }

    /** Mean arrival rate over the run (requests per second), from the arrival times. */
    public double meanRate() {
        if (requests.size() < 2) {
            return 0;
        }
        long span = requests.get(requests.size() - 1).arrivalNanos()
                - requests.get(0).arrivalNanos();
        return span <= 0 ? 0 : (requests.size() - 1) / (span / 1e9);
    }

    @Override
    public String toString() {
        return "Workload[" + name + ", " + requests.size() + " requests]";
    }
}
