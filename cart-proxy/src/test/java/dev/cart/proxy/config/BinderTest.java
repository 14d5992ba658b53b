package dev.cart.proxy.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.cart.core.CircuitBreaker;
import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.ReplicaSpec;
import java.lang.reflect.RecordComponent;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/** The records are bound from the files by Jackson, over defaults.yaml: every key reaches its component. */
class BinderTest {

    /** Every key the records declare, each set to a valid value other than its default. */
    private static final String EVERY_KEY = """
            server:
              host: 127.0.0.1
              port: 7001
              max_threads: 16
              max_connections: 500
              max_concurrent_requests: 100
              max_header_bytes: 4096
              max_headers: 50
              max_request_line_bytes: 1024
              request_read_timeout_secs: 7
              idle_timeout_secs: 8
              engine: netty
              max_buffered_body_bytes: 1000000
              max_buffered_answer_bytes: 2000000
              drain_timeout_ms: 0
            workers:
              - url: http://node1:8050/
                max_load: 4
                load_penalty: 3
                models: [small, large, small]
                kv_events: tcp://node1:5557
                kv_events_replay: tcp://node1:5558
                kv_events_ranks: 2
                kv_events_topic: kv
            cache:
              policy: predicted_ttft
              learning_rate: 0.1
              max_tree_size: 5000
              block_chars: 32
              eviction_interval_secs: 5
              daily_cleanup_hour_utc: 3
              route_ttl_secs: 600
              learn: on_success
              feedback: false
              learn_answer: false
              tokenizer: o200k_base
              block_tokens: 32
              token_cache_entries: 10
              token_cache_max_chars: 100
              max_concurrent_tokenizations: 2
            health:
              endpoint: /ready
              interval_secs: 3
              timeout_secs: 2
              failure_threshold: 4
              success_threshold: 5
              models_interval_secs: 7
            circuit_breaker:
              failure_threshold: 6
              success_threshold: 3
              timeout_secs: 9
              half_open_max_requests: 4
            proxy:
              max_retries: 0
              initial_backoff_ms: 50
              backoff_multiplier: 1.5
              jitter_factor: 0
              retryable_statuses: [503]
              connect_timeout_secs: 1
              request_timeout_secs: 60
              add_routed_peer_header: true
              remote_media_url_policy: 403
              max_body_bytes: 1024
              decision_log: false
            cluster:
              redis_url: "redis://r:6379"
              stream: "cart:b"
              instance_id: gw-1
              max_len: 10
              batch_events: 8
              batch_delay_ms: 0
              buffer_events: 16
              load_interval_ms: 50
              load_ttl_ms: 500
              timeout_ms: 500
            flow:
              enabled: true
              max_depth: 10
              max_wait_ms: 5000
              bands: 4
              default_band: 3
              affinity_wait_ms: 10
              hot_spot_depth: 2
              hot_spot_max_holders: 5
              tenant_labels: 1
              recheck_interval_ms: 20
              priority_header: x-p
              tenant_header: x-t
              deadline_header: x-d
              default_output_tokens: 64
              reserve_ratio: 0.25
            kv_events:
              model: small
              block_size: 32
              max_blocks_per_stream: 100
              silence_secs: 2
              gap_hold_secs: 3
              replay_timeout_secs: 4
              overlay_ttl_ms: 5
              tokenize: none
              tokenize_timeout_ms: 6
              receive_hwm: 7
            """;

    @Test
    void everyKeyReachesItsComponent() throws Exception {
        ProxyConfig c = ConfigLoader.parse(EVERY_KEY);
        ProxyConfig d = ConfigLoader.load(List.of(), false);
        Set<String> differing = new TreeSet<>();
        differing(c.server(), d.server(), "server", differing);
        differing(c.workers().get(0), ConfigLoader.worker("http://x:1"), "workers[]", differing);
        differing(c.cache(), d.cache(), "cache", differing);
        differing(c.health(), d.health(), "health", differing);
        differing(c.circuitBreaker(), d.circuitBreaker(), "circuit_breaker", differing);
        differing(c.proxy(), d.proxy(), "proxy", differing);
        differing(c.cluster(), d.cluster(), "cluster", differing);
        differing(c.flow(), d.flow(), "flow", differing);
        differing(c.kvEvents(), d.kvEvents(), "kv_events", differing);
        Set<String> settable = new TreeSet<>(Schema.keyPaths());
        settable.remove("server.engine"); // one choice left (netty): it cannot differ from its default
        assertEquals(settable, differing, "every key set above is bound to its own component");
        assertEquals(Map.of("learning_rate", 0.1), c.cache().policySettings());
        assertEquals(
                new ProxyConfig.Worker(
                        "http://node1:8050",
                        4,
                        3,
                        List.of("small", "large"),
                        "tcp://node1:5557",
                        "tcp://node1:5558",
                        2,
                        "kv"),
                c.workers().get(0));
        assertEquals(
                new ProxyConfig.Tokens("o200k_base", 32, 10, 100, 2), c.cache().tokens(), "token mode's view");
    }

    /** Adds {@code prefix.key} for each component of {@code a} that differs from {@code b}'s. */
    private static void differing(Record a, Record b, String prefix, Set<String> out) throws Exception {
        for (RecordComponent rc : a.getClass().getRecordComponents()) {
            Object x = rc.getAccessor().invoke(a);
            Object y = rc.getAccessor().invoke(b);
            String key = prefix + "."
                    + Schema.of(a.getClass()).keys().values().stream()
                            .filter(k -> k.component().getName().equals(rc.getName()))
                            .findFirst()
                            .orElseThrow()
                            .name();
            if (!java.util.Objects.equals(x, y) && !key.equals("cache.policy_settings")) {
                out.add(key);
            }
        }
    }

    @Test
    void theDefaultsAreTheLibrarys() throws Exception {
        ProxyConfig d = ConfigLoader.load(List.of(), false);
        assertEquals(ManagedReplicaSet.HealthConfig.defaults(), d.health().thresholds());
        assertEquals(CircuitBreaker.Config.defaults(), d.circuitBreaker().toCore());
        assertEquals(
                ReplicaSpec.DEFAULT_MAX_LOAD,
                ProxyConfig.Worker.of("http://a:1").maxLoad());
        assertEquals(List.of(), d.workers());
        assertEquals(ProxyConfig.Server.DEFAULT_PORT, d.server().port());
        assertEquals(ClusterConfig.off(), d.cluster());
    }

    @Test
    void aServerWithAnotherPortOrHostKeepsTheRest() throws Exception {
        ProxyConfig.Server s = ConfigLoader.parse(EVERY_KEY).server();
        ProxyConfig.Server moved = s.withPort(0).withHost("::1");
        assertEquals(0, moved.port());
        assertEquals("::1", moved.host());
        assertEquals(s, moved.withPort(7001).withHost("127.0.0.1"));
        assertEquals(
                ProxyConfig.Server.Engine.NETTY,
                s.withEngine(ProxyConfig.Server.Engine.NETTY).engine());
        assertEquals(
                s.maxBufferedAnswerBytes(),
                s.withEngine(ProxyConfig.Server.Engine.NETTY).maxBufferedAnswerBytes());
    }

    @Test
    void aWorkerWithAnEmptyUrlIsRefusedNotDropped() {
        ConfigException e = assertThrows(
                ConfigException.class, () -> ConfigLoader.parse("workers:\n  - url:\n  - url: http://b:1\n"));
        assertEquals(List.of("workers[0].url: required"), e.problems());
    }

    @Test
    void aBlankHostIsRefusedFromTheFilesAndFromCode() throws Exception {
        ConfigException e = assertThrows(
                ConfigException.class,
                () -> ConfigLoader.parse("server:\n  host: \" \"\nworkers:\n  - url: http://a:1\n"));
        assertEquals(List.of("server.host: must not be empty"), e.problems());
        ProxyConfig c = ConfigLoader.parse("workers:\n  - url: http://a:1\n");
        IllegalArgumentException fromCode = assertThrows(
                IllegalArgumentException.class, () -> c.withServer(c.server().withHost(" ")));
        assertEquals("server.host: must not be empty", fromCode.getMessage());
    }
}
