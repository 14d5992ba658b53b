package dev.cart.core;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import dev.cart.core.internal.Checks;
import dev.cart.core.spi.Replica;
import java.time.Clock;
import java.time.Duration;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * One replica's circuit breaker, the one {@link ManagedReplicaSet} gives each member, for a host that
 * writes its own {@link Replica} too: CLOSED counts consecutive failures and opens at the threshold; OPEN
 * refuses traffic until the timeout passes; HALF_OPEN admits at most {@code halfOpenMaxRequests} trial
 * requests at once, closes after {@code successThreshold} successful trials and reopens on a failed one.
 *
 * <p>A host's replica uses it like this: {@link Replica#isAvailable()} asks {@link #wouldAdmit()};
 * {@link Replica#tryAcquire()} asks {@link #tryAcquire()} for a {@link Permit} (null: refuse the request),
 * gives the permit back with {@link Permit#cancel()} if the replica cannot take the request after all (it
 * is full), and otherwise keeps it in the admission, whose {@link Replica.Admission#release} reports the
 * outcome with {@link Permit#record}:
 *
 * <pre>{@code
 * public Admission tryAcquire() {
 *     CircuitBreaker.Permit permit = breaker.tryAcquire();
 *     if (permit == null) {
 *         return null;                       // open, or no half-open trial slot free
 *     }
 *     if (!inFlight.tryIncrementBelow(maxLoad)) {
 *         permit.cancel();                   // the request goes elsewhere: says nothing about the replica
 *         return null;
 *     }
 *     return outcome -> {
 *         inFlight.decrement();
 *         permit.record(outcome);
 *     };
 * }
 * }</pre>
 *
 * <p>Every transition starts a new generation. A request is admitted under the current generation and
 * reports its outcome with it; outcomes of an older generation (a request admitted before the circuit
 * opened, finishing while it is half-open) are ignored, so only trials decide a half-open circuit and
 * old requests do not take trial slots.
 *
 * <p>Concurrency: thread-safe; nothing blocks but the breaker's own short critical sections. Every
 * transition and counter update happens under the object's monitor. State, generation, the open time and
 * the failure count are also read without it on the hot path (an admission of a closed circuit, the
 * outcome of an ordinary success), so they are volatile rather than {@code @GuardedBy}; the half-open
 * counters are only touched under the monitor. The clock is injected ({@link Builder#clock}).
 */
public final class CircuitBreaker {

    /**
     * Hears a breaker's transitions (for logs and metrics). Called on the thread whose call made the
     * transition (a {@link #state()} read that found the open timeout over, or an outcome), while the
     * breaker's lock is held: it must be quick and must not block; it may read the breaker.
     */
    @FunctionalInterface
    public interface Listener {
        /**
         * The circuit moved from {@code from} to {@code to} (never equal).
         *
         * @param from the state before
         * @param to   the state now
         */
        void onTransition(State from, State to);
    }

    private static final Listener NONE = (from, to) -> {};

    private final Config config;
    private final Clock clock;
    private final Listener listener;
    private volatile State state = State.CLOSED;
    private volatile long generation;
    private volatile long openedAtMillis;
    private volatile int consecutiveFailures;
    /** The permit of the current generation, shared by every request admitted under it. */
    private volatile Permit permit = new Permit(0);

    @GuardedBy("this")
    private int halfOpenSuccesses;

    @GuardedBy("this")
    private int trials;

    private CircuitBreaker(Config config, Clock clock, Listener listener) {
        this.config = config;
        this.clock = clock;
        this.listener = listener;
    }

    /**
     * A builder: {@link Config#defaults()}, the system clock, no listener.
     *
     * @return a new builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * The settings it was built with.
     *
     * @return the configuration
     */
    public Config config() {
        return config;
    }

    /**
     * Admits one request, or refuses it: a permit when the circuit is closed, or half-open with a trial
     * slot free (the permit then holds the slot until it is recorded or cancelled); null when it is open or
     * every trial slot is taken. Cheap when closed: a few volatile reads, no lock, no allocation.
     *
     * @return the permit, to be {@linkplain Permit#record recorded} or {@linkplain Permit#cancel cancelled}
     *     exactly once; null if the request must go elsewhere
     */
    public @Nullable Permit tryAcquire() {
        long g = admit();
        if (g < 0) {
            return null;
        }
        Permit p = permit;
        return p.generation == g ? p : new Permit(g); // a transition raced the admission: one allocation
    }

    /**
     * True if {@link #tryAcquire()} would admit a request now: closed, or half-open with a trial slot free.
     * A hint (for {@link Replica#isAvailable()}); {@code tryAcquire} decides.
     *
     * @return true if {@link #tryAcquire()} would most likely return a permit now
     */
    public boolean wouldAdmit() {
        return switch (state()) {
            case CLOSED -> true;
            case OPEN -> false;
            case HALF_OPEN -> trialsAvailable();
        };
    }

    /**
     * The state now. Reading it moves an open circuit whose timeout has passed to half-open (the listener
     * hears that transition then).
     *
     * @return the state now
     */
    public State state() {
        State s = state;
        if (s == State.OPEN
                && clock.millis() - openedAtMillis >= config.openTimeout().toMillis()) {
            synchronized (this) {
                if (state == State.OPEN
                        && clock.millis() - openedAtMillis
                                >= config.openTimeout().toMillis()) {
                    transition(State.HALF_OPEN);
                }
                return state;
            }
        }
        return s;
    }

    private synchronized boolean trialsAvailable() {
        return state != State.HALF_OPEN || trials < config.halfOpenMaxRequests();
    }

    /** Admits one request: its generation, or -1 if refused (open, or no trial slot free). */
    private long admit() {
        State s = state();
        if (s == State.CLOSED) {
            long g = generation;
            if (state == State.CLOSED) {
                return g;
            }
        }
        synchronized (this) {
            switch (state()) {
                case CLOSED:
                    return generation;
                case HALF_OPEN:
                    if (trials < config.halfOpenMaxRequests()) {
                        trials++;
                        return generation;
                    }
                    return -1;
                default:
                    return -1;
            }
        }
    }

    /** Gives back an admission that did not become a request (the replica was full). */
    private synchronized void unadmit(long g) {
        if (g == generation && state == State.HALF_OPEN && trials > 0) {
            trials--;
        }
    }

    /** Records the outcome of a request admitted under generation {@code g}. */
    private void record(long g, Outcome outcome) {
        if (g != generation) {
            return; // evidence from before the last transition
        }
        if (state == State.CLOSED && outcome == Outcome.SUCCESS && consecutiveFailures == 0) {
            return; // the common case: nothing to write
        }
        synchronized (this) {
            if (g != generation) {
                return;
            }
            switch (state) {
                case CLOSED -> {
                    if (outcome == Outcome.SUCCESS) {
                        consecutiveFailures = 0;
                    } else if (outcome == Outcome.FAILURE && ++consecutiveFailures >= config.failureThreshold()) {
                        transition(State.OPEN);
                    }
                }
                case HALF_OPEN -> {
                    trials--;
                    if (outcome == Outcome.FAILURE) {
                        transition(State.OPEN);
                    } else if (outcome == Outcome.SUCCESS && ++halfOpenSuccesses >= config.successThreshold()) {
                        transition(State.CLOSED);
                    }
                }
                case OPEN -> {} // cannot happen: no admission under an open generation
            }
        }
    }

    @GuardedBy("this")
    private void transition(State to) {
        State from = state;
        if (from == to) {
            return;
        }
        generation++;
        trials = 0;
        halfOpenSuccesses = 0;
        consecutiveFailures = 0;
        if (to == State.OPEN) {
            openedAtMillis = clock.millis();
        }
        permit = new Permit(generation);
        state = to;
        listener.onTransition(from, to);
    }

    /**
     * One admission's hold on the breaker: the generation it was admitted under, and (half-open) its trial
     * slot. Every request admitted under the same generation may share one permit: a permit carries no
     * per-request state, so each of {@link #record} and {@link #cancel} stands for one admission and must be
     * called once per admission, never both. Thread-safe.
     */
    public final class Permit {
        private final long generation;

        private Permit(long generation) {
            this.generation = generation;
        }

        /**
         * Reports how the admitted request ended. {@link Outcome#FAILURE} counts towards opening a closed
         * circuit and reopens a half-open one; {@link Outcome#SUCCESS} resets the failure count, or counts
         * towards closing a half-open circuit; {@link Outcome#CANCELLED} says nothing about the replica (it
         * only frees a trial slot). Ignored when the circuit has moved on since the admission.
         *
         * @param outcome how the request ended
         */
        public void record(Outcome outcome) {
            CircuitBreaker.this.record(generation, Objects.requireNonNull(outcome, "outcome"));
        }

        /**
         * Gives the admission back unused: the request never reached the replica (it was full, or the host
         * sent it elsewhere). Frees its half-open trial slot; otherwise nothing.
         */
        public void cancel() {
            unadmit(generation);
        }
    }

    /** Builds a {@link CircuitBreaker}; every setting has a default. Not thread-safe. */
    public static final class Builder {
        private Config config = Config.defaults();
        private Clock clock = Clock.systemUTC();
        private Listener listener = NONE;

        private Builder() {}

        /**
         * Thresholds and timeout ({@link Config#defaults()} by default).
         *
         * @param config the thresholds and timeout
         * @return this builder
         * @throws NullPointerException if the value is null
         */
        public Builder config(Config config) {
            this.config = Objects.requireNonNull(config, "config");
            return this;
        }

        /**
         * The clock of the open timeout (the system clock by default; a test injects its own).
         *
         * @param clock the wall clock
         * @return this builder
         * @throws NullPointerException if the value is null
         */
        public Builder clock(Clock clock) {
            this.clock = Objects.requireNonNull(clock, "clock");
            return this;
        }

        /**
         * Hears every transition (none by default).
         *
         * @param listener the listener; called on routing threads, must be quick
         * @return this builder
         * @throws NullPointerException if the value is null
         */
        public Builder listener(Listener listener) {
            this.listener = Objects.requireNonNull(listener, "listener");
            return this;
        }

        /**
         * The breaker, closed.
         *
         * @return a new breaker in the closed state
         */
        public CircuitBreaker build() {
            return new CircuitBreaker(config, clock, listener);
        }
    }

    /**
     * Settings of a circuit breaker (each member's of a {@link ManagedReplicaSet}, or a host's own).
     *
     * @param failureThreshold    consecutive failures that open the circuit ({@code failure_threshold})
     * @param successThreshold    successes in half-open that close it again ({@code success_threshold})
     * @param openTimeout         how long it stays open before half-opening ({@code timeout_secs})
     * @param halfOpenMaxRequests requests admitted at once while half-open ({@code half_open_max_requests})
     */
    public record Config(int failureThreshold, int successThreshold, Duration openTimeout, int halfOpenMaxRequests) {

        private static final Config DEFAULTS = new Config(5, 2, Duration.ofSeconds(30), 2);

        /**
         * Checks that the thresholds and the trial count are at least 1 and the timeout positive.
         *
         * @param failureThreshold    consecutive failures that open the circuit, at least 1
         * @param successThreshold    successes in half-open that close it again, at least 1
         * @param openTimeout         how long it stays open before half-opening, positive
         * @param halfOpenMaxRequests requests admitted at once while half-open, at least 1
         * @throws IllegalArgumentException if an argument is out of range
         */
        public Config {
            Checks.atLeast("CircuitBreaker.Config.failureThreshold", failureThreshold, 1);
            Checks.atLeast("CircuitBreaker.Config.successThreshold", successThreshold, 1);
            Checks.positive("CircuitBreaker.Config.openTimeout", openTimeout);
            Checks.atLeast("CircuitBreaker.Config.halfOpenMaxRequests", halfOpenMaxRequests, 1);
        }

        /**
         * The defaults: open after 5 consecutive failures, stay open 30 s, then admit 2 trials at once and
         * close after 2 successful ones.
         *
         * @return the default settings
         */
        public static Config defaults() {
            return DEFAULTS;
        }
    }

    /** State of a replica's circuit breaker. */
    public enum State {
        /** Traffic flows; consecutive failures are counted. */
        CLOSED,
        /** Too many consecutive failures: no traffic until the open timeout has passed. */
        OPEN,
        /** Trial traffic only (a bounded number of requests at once) until enough successes close it. */
        HALF_OPEN;

        /**
         * Lower-case name as used in logs, metrics and the /workers endpoint.
         *
         * @return {@code closed}, {@code open} or {@code half_open}
         */
        public String label() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }
    }
}
