package dev.cart.redis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import dev.cart.core.ManagedReplicaSet;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.sync.RedisCommands;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The shared load view against a real redis-server: sums of the other instances, every change seen
 * (published on change, not polled), expiry of a dead one, garbage on the channel ignored.
 */
class RedisLoadViewTest {

    private final List<AutoCloseable> open = new ArrayList<>();

    @AfterEach
    void closeAll() throws Exception {
        for (int i = open.size() - 1; i >= 0; i--) {
            open.get(i).close();
        }
    }

    private static ManagedReplicaSet pool() {
        return ManagedReplicaSet.builder()
                .add("http://vllm-0:8000")
                .add("http://vllm-1:8000")
                .build();
    }

    private RedisLoadView view(String uri, String id, ManagedReplicaSet pool) {
        RedisLoadView v = RedisLoadView.builder()
                .uri(uri)
                .pool("cart:pool")
                .instanceId(id)
                .replicas(pool)
                .build();
        open.add(v);
        return v.start();
    }

    @Test
    void eachInstanceSeesTheSumOfTheOthersAndADeadInstanceStopsCountingWithinTheTtl() throws Exception {
        RedisServerProcess redis = RedisServerProcess.start(RedisServerProcess.freePort());
        open.add(redis);
        ManagedReplicaSet poolA = pool();
        ManagedReplicaSet poolB = pool();
        ManagedReplicaSet poolC = pool();
        RedisLoadView a = view(redis.uri(), "a", poolA);
        RedisLoadView b = view(redis.uri(), "b", poolB);
        RedisLoadView c = view(redis.uri(), "c", poolC);
        List<dev.cart.core.spi.Replica.Admission> held = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            held.add(Objects.requireNonNull(poolA.replicas().get(0).tryAcquire()));
        }
        assertNotNull(poolB.replicas().get(0).tryAcquire());
        assertNotNull(poolB.replicas().get(1).tryAcquire());
        Await.until(
                () -> c.remoteInFlight("http://vllm-0:8000") == 4 && c.remoteInFlight("http://vllm-1:8000") == 1,
                () -> "c sees a+b: " + c.remoteInFlight("http://vllm-0:8000") + ", "
                        + c.remoteInFlight("http://vllm-1:8000"));
        Await.until(() -> a.remoteInFlight("http://vllm-0:8000") == 1, () -> "a sees b only");
        assertEquals(2, c.peers());
        assertEquals(0, c.remoteInFlight("http://unknown:1"));
        held.get(0).release(dev.cart.core.Outcome.SUCCESS);
        Await.until(() -> c.remoteInFlight("http://vllm-0:8000") == 3, () -> "a's release seen");
        a.close(); // stops writing, as a crashed instance would: its figures expire with the key's TTL
        Await.until(() -> c.remoteInFlight("http://vllm-0:8000") == 1 && c.peers() == 1, () -> "a expired");
        redis.kill(); // and with Redis gone, a view too old to trust is empty
        Await.until(() -> c.remoteInFlight("http://vllm-0:8000") == 0 && c.peers() == 0, () -> "stale view dropped");
    }

    @Test
    void everyChangeIsPublishedAndGarbageOnTheChannelIsIgnored() throws Exception {
        RedisServerProcess redis = RedisServerProcess.start(RedisServerProcess.freePort());
        open.add(redis);
        ManagedReplicaSet poolA = pool();
        ManagedReplicaSet poolB = pool();
        RedisLoadView a = view(redis.uri(), "a", poolA);
        RedisLoadView b = view(redis.uri(), "b", poolB);
        Await.until(() -> a.peers() == 1 && b.peers() == 1, () -> "each hears the other");
        RedisClient admin = RedisClient.create(redis.uri());
        try {
            RedisCommands<String, String> c = admin.connect().sync();
            for (String junk : new String[] {
                "", "v1", "v2 x\nhttp://vllm-0:8000 7 7", "v1 z\nhttp://vllm-0:8000 seven 0", "v1 z\nno-figures"
            }) {
                c.publish("cart:pool:load", junk);
            }
            // each change of a's count shows on b, one step at a time, whatever arrives in between
            List<dev.cart.core.spi.Replica.Admission> held = new ArrayList<>();
            for (int n = 1; n <= 5; n++) {
                held.add(Objects.requireNonNull(poolA.replicas().get(1).tryAcquire()));
                int expected = n;
                Await.until(
                        () -> b.remoteInFlight("http://vllm-1:8000") == expected,
                        () -> "b sees " + expected + ", has " + b.remoteInFlight("http://vllm-1:8000"));
            }
            for (var h : held) {
                h.release(dev.cart.core.Outcome.SUCCESS);
            }
            Await.until(() -> b.remoteInFlight("http://vllm-1:8000") == 0, () -> "b sees the releases");
            assertEquals(1, b.peers(), "the garbage made no peer");
            assertEquals(0, b.remoteInFlight("http://vllm-0:8000"));
            Await.until(() -> b.messages()[2] == 5, () -> "malformed counted: " + b.messages()[2]);
        } finally {
            admin.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }
}
