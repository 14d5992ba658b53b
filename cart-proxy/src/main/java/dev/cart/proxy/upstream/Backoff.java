package dev.cart.proxy.upstream;

import dev.cart.proxy.config.ProxyConfig;
import java.time.Duration;
import java.util.random.RandomGenerator;

/**
 * Exponential backoff with jitter: the wait before retry {@code n} (1-based) is
 * {@code initial * multiplier^(n-1)}, scaled by a random factor in {@code [1 - jitter, 1 + jitter]}.
 */
public record Backoff(long initialMillis, double multiplier, double jitter) {

    static Backoff of(ProxyConfig.Proxy p) {
        return new Backoff(p.initialBackoffMs(), p.backoffMultiplier(), p.jitterFactor());
    }

    public Duration delay(int retry, RandomGenerator random) {
        double base = initialMillis * Math.pow(multiplier, Math.max(0, retry - 1));
        double factor = jitter == 0 ? 1.0 : 1.0 + jitter * (2 * random.nextDouble() - 1);
        long nanos = (long)
                Math.min(base * factor * 1_000_000.0, Duration.ofMinutes(5).toNanos());
        return Duration.ofNanos(Math.max(0, nanos));
    }
}
