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

    /**
     * The same requests arriving in bursts: a Poisson process whose rate is {@code highPerSecond} for
     * {@code highSeconds}, then {@code lowPerSecond} for {@code lowSeconds}, repeated (the rate is piecewise
     * constant; each gap is a unit exponential spent across the phases at their rates).
     */
    public Workload bursts(
            double highPerSecond, double lowPerSecond, double highSeconds, double lowSeconds, long seed) {
        if (!(highPerSecond > 0) || !(lowPerSecond > 0) || !(highSeconds > 0) || !(lowSeconds > 0)) {
            throw new IllegalArgumentException("burst rates and lengths must be positive");
        }
        SplittableRandom rnd = new SplittableRandom(Filler.seed(seed, 0xB57L));
        List<WorkloadRequest> out = new ArrayList<>(requests.size());
        double t = 0;
        double end = highSeconds; // the end of the current phase
        boolean high = true;
        for (WorkloadRequest r : requests) {
            out.add(r.at(Math.round(t * 1e9)));
            double e = -Math.log(1.0 - rnd.nextDouble());
            while (true) {
                double rate = high ? highPerSecond : lowPerSecond;
                double room = (end - t) * rate;
                if (e <= room) {
                    t += e / rate;
                    break;
                }
                e -= room;
                t = end;
                high = !high;
                end += high ? highSeconds : lowSeconds;
            }
        }
        return new Workload(
                name,
                description
                        + String.format(
                                ", bursts of %.2f req/s for %.1f s then %.2f req/s for %.1f s",
                                highPerSecond, highSeconds, lowPerSecond, lowSeconds),
                out);
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
