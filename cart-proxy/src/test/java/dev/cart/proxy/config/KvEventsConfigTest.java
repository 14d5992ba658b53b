package dev.cart.proxy.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Precise mode's keys ({@code workers[].kv_events*} and the {@code kv_events} section): off without a worker
 * that names an endpoint, every key read, every mistake named with its key.
 */
class KvEventsConfigTest {

    private static List<String> problems(String yaml) {
        return assertThrows(ConfigException.class, () -> ConfigLoader.parse(yaml))
                .problems();
    }

    @Test
    void offWithoutAWorkerThatNamesItsEvents() throws Exception {
        ProxyConfig c = ConfigLoader.parse("workers:\n  - url: http://node1:8000\n");
        assertFalse(c.precise());
        ProxyConfig.Worker w = c.workers().get(0);
        assertNull(w.kvEvents());
        assertNull(w.kvEventsReplay());
        assertEquals(1, w.kvEventsRanks());
        assertEquals("", w.kvEventsTopic());
        KvEventsSettings k = c.kvEvents();
        assertNull(k.model());
        assertEquals(16, k.blockSize());
        assertEquals(4_194_304, k.maxBlocksPerStream());
        assertEquals(500, k.tokenizeTimeoutMs());
        assertTrue(k.tokenizeByEngine());
    }

    @Test
    void everyKeyIsRead() throws Exception {
        ProxyConfig c = ConfigLoader.parse("workers:\n  - url: http://node1:8000\n"
                + "    kv_events: tcp://node1:5557\n    kv_events_replay: tcp://node1:5558\n"
                + "    kv_events_ranks: 2\n    kv_events_topic: kv\n"
                + "kv_events:\n  model: llama\n  block_size: 32\n  max_blocks_per_stream: 1000\n  silence_secs: 7\n"
                + "  gap_hold_secs: 0\n  replay_timeout_secs: 9\n  overlay_ttl_ms: 250\n  tokenize: none\n"
                + "  tokenize_timeout_ms: 800\n  receive_hwm: 50\n");
        assertTrue(c.precise());
        ProxyConfig.Worker w = c.workers().get(0);
        assertEquals("tcp://node1:5557", w.kvEvents());
        assertEquals("tcp://node1:5558", w.kvEventsReplay());
        assertEquals(2, w.kvEventsRanks());
        assertEquals("kv", w.kvEventsTopic());
        assertEquals(new KvEventsSettings("llama", 32, 1000, 7, 0, 9, 250, "none", 800, 50), c.kvEvents());
        assertFalse(c.kvEvents().tokenizeByEngine());
    }

    @Test
    void theWorkersOneModelNamesTheEnginesBlocks() throws Exception {
        ProxyConfig c = ConfigLoader.parse(
                "workers:\n  - url: http://node1:8000\n    kv_events: tcp://node1:5557\n    models: [llama]\n");
        assertTrue(c.precise());
    }

    @Test
    void mistakesAreNamedWithTheirKeys() {
        assertEquals(
                List.of("workers[0].kv_events: must be a ZMQ endpoint tcp://host:port (such as"
                        + " 'tcp://node1:5557'), was 'http://node1:5557'"),
                problems("kv_events:\n  model: m\nworkers:\n  - url: http://node1:8000\n"
                        + "    kv_events: http://node1:5557\n"));
        assertEquals(
                List.of("workers[0].kv_events: must name a host to connect to and a port in [1, 65535],"
                        + " tcp://host:port, was 'tcp://*:5557'"),
                problems("kv_events:\n  model: m\nworkers:\n  - url: http://node1:8000\n"
                        + "    kv_events: tcp://*:5557\n"));
        assertEquals(
                List.of("workers[0].kv_events_replay: needs kv_events (the engine's PUB endpoint) beside it"),
                problems("workers:\n  - url: http://node1:8000\n    kv_events_replay: tcp://node1:5558\n"));
        assertEquals(
                List.of("workers[0].kv_events: precise mode needs the model name requests use for this"
                        + " engine: set kv_events.model, or list exactly one model in workers[].models"),
                problems("workers:\n  - url: http://node1:8000\n    kv_events: tcp://node1:5557\n"));
        assertEquals(
                List.of("workers[0].kv_events_ranks: must be in [1, 64], was 0"),
                problems("kv_events:\n  model: m\nworkers:\n  - url: http://node1:8000\n"
                        + "    kv_events: tcp://node1:5557\n    kv_events_ranks: 0\n"));
        assertEquals(
                List.of("workers[0].kv_events: with kv_events_ranks 4 the last rank's port would be 65537,"
                        + " above 65535"),
                problems("kv_events:\n  model: m\nworkers:\n  - url: http://node1:8000\n"
                        + "    kv_events: tcp://node1:65534\n    kv_events_ranks: 4\n"));
        assertEquals(
                List.of("kv_events.tokenize: must be one of engine, none, was the string 'magic'"),
                problems("kv_events:\n  tokenize: magic\nworkers:\n  - url: http://node1:8000\n"));
        assertEquals(
                List.of("kv_events.block_size: must be in [1, 1024], was 0"),
                problems("kv_events:\n  block_size: 0\nworkers:\n  - url: http://node1:8000\n"));
        List<String> unknown = problems("kv_events:\n  blok_size: 16\nworkers:\n  - url: http://node1:8000\n");
        assertEquals(1, unknown.size(), unknown.toString());
        assertTrue(
                unknown.get(0).startsWith("kv_events.blok_size: unknown key (did you mean 'block_size'?)"),
                unknown.get(0));
    }

    @Test
    void atMost64StreamsAltogether() {
        StringBuilder yaml = new StringBuilder("kv_events:\n  model: m\nworkers:\n");
        for (int i = 0; i < 3; i++) {
            yaml.append("  - url: http://node")
                    .append(i)
                    .append(":8000\n    kv_events: tcp://node")
                    .append(i)
                    .append(":5557\n    kv_events_ranks: 30\n");
        }
        assertEquals(
                List.of("workers: precise mode follows at most 64 KV-event streams (each worker with"
                        + " kv_events has one per rank), the workers have 90"),
                problems(yaml.toString()));
    }

    @Test
    void aChangeOfTheSectionIsNotAReload() throws Exception {
        ProxyConfig a = ConfigLoader.parse("workers:\n  - url: http://node1:8000\n");
        ProxyConfig b = ConfigLoader.parse("workers:\n  - url: http://node1:8000\nkv_events:\n  block_size: 32\n");
        assertEquals(List.of("kv_events"), a.sectionsDifferingFrom(b));
    }

    @Test
    void recordsBuiltInCodeMeetTheSameRules() throws Exception {
        ProxyConfig c = ConfigLoader.parse("workers:\n  - url: http://node1:8000\n");
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> c.withWorkers(List.of(c.workers().get(0).withKvEvents("tcp://node1:5557", null))));
        assertTrue(
                e.getMessage().startsWith("workers[0].kv_events: precise mode needs the model name"), e.getMessage());
    }
}
