package dev.cart.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.cart.extract.Endpoint;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class WorkloadsTest {

    @Test
    void sharedPrefixHasSglangDefaults() {
        Workload w = Workloads.sharedPrefix(1);
        assertEquals(1024, w.size());
        Set<String> systems = new HashSet<>();
        for (WorkloadRequest r : w.requests()) {
            assertEquals(Endpoint.COMPLETIONS, r.endpoint());
            assertEquals(256, r.maxTokens());
            assertEquals((2048 + 128) * 4 + 2, r.prompt().length());
            systems.add(r.prompt().substring(0, 2048 * 4));
        }
        assertEquals(64, systems.size());
        Map<String, Integer> perSystem = new HashMap<>();
        for (WorkloadRequest r : w.requests()) {
            perSystem.merge(r.prompt().substring(0, 2048 * 4), 1, Integer::sum);
        }
        assertTrue(
                perSystem.values().stream().allMatch(n -> n == 16),
                "each system prompt shared by 16: " + perSystem.values());
        Set<String> questions = new HashSet<>();
        for (WorkloadRequest r : w.requests()) {
            questions.add(r.prompt().substring(2048 * 4));
        }
        assertEquals(1024, questions.size(), "every question is its own");
    }

    /** Every generator, by name, as a function of the seed. */
    static final Map<String, java.util.function.LongFunction<Workload>> GENERATORS = Map.of(
            "sharedPrefix",
            Workloads::sharedPrefix,
            "rag",
            seed -> Workloads.rag(seed, 4 * 150_000L),
            "multiTurn",
            Workloads::multiTurn,
            "branching",
            Workloads::branching,
            "hotPrefix80",
            seed -> Workloads.hotPrefix(seed, 0.8),
            "hotPrefix100",
            seed -> Workloads.hotPrefix(seed, 1.0));

    /** What a request is, for comparing whole workloads. */
    static List<String> fingerprint(Workload w) {
        List<String> out = new java.util.ArrayList<>();
        for (WorkloadRequest r : w.requests()) {
            out.add(r.endpoint() + "|" + r.session() + "|" + r.maxTokens() + "|" + r.arrivalNanos() + "|"
                    + r.replicaPrompt() + "|" + r.reply());
        }
        return out;
    }

    @Test
    void theSameSeedGivesTheSameWorkloadAndAnotherSeedAnotherOne() {
        for (Map.Entry<String, java.util.function.LongFunction<Workload>> g : GENERATORS.entrySet()) {
            List<String> first = fingerprint(g.getValue().apply(11));
            List<String> other = fingerprint(g.getValue().apply(12)); // built in between: no state carried over
            List<String> again = fingerprint(g.getValue().apply(11));
            assertEquals(first, again, g.getKey() + ": seed 11 twice");
            assertNotEquals(first, other, g.getKey() + ": seeds 11 and 12");
            long differing = java.util.stream.IntStream.range(0, Math.min(first.size(), other.size()))
                    .filter(i -> !first.get(i).equals(other.get(i)))
                    .count();
            assertTrue(
                    differing > first.size() / 2,
                    g.getKey() + ": most requests differ between seeds, " + differing + " of " + first.size());
        }
    }

    @Test
    void ragDocumentsOutgrowOneReplicaAndFollowZipf() {
        long replicaCache = 150_000;
        Workload w = Workloads.rag(3, 4 * replicaCache);
        Map<String, Integer> byDoc = new HashMap<>();
        Map<String, Integer> docChars = new HashMap<>();
        for (WorkloadRequest r : w.requests()) {
            String user = r.messages().get(1).content();
            String doc = user.substring(0, user.indexOf("\n\nQuestion: "));
            String id = doc.substring(0, doc.indexOf(':'));
            byDoc.merge(id, 1, Integer::sum);
            docChars.put(id, doc.length());
        }
        assertEquals(2048, w.size());
        int top = byDoc.getOrDefault("Document 0", 0);
        assertTrue(top > 2048 / 10, "rank 1 of Zipf(1.1) over ~160 documents draws ~20%: " + top);
        assertTrue(top > byDoc.getOrDefault("Document 10", 0) * 5);
        long totalTokens = docChars.values().stream().mapToLong(c -> c / 4).sum();
        assertTrue(totalTokens > replicaCache, "requested documents exceed one replica's cache: " + totalTokens);
        assertTrue(w.description().contains("of the cluster cache"));
    }

    @Test
    void multiTurnPromptsGrowByAppendingAndInterleaveUsers() {
        Workloads.ChatSpec spec = new Workloads.ChatSpec(5, 4, 64, 8, 16, 8, 16);
        Workload w = Workloads.multiTurn(4, spec);
        assertEquals(20, w.size());
        Set<String> firstRound = new HashSet<>();
        for (int i = 0; i < 5; i++) {
            firstRound.add(w.requests().get(i).session());
        }
        assertEquals(5, firstRound.size(), "round 1 visits every user before anyone's round 2");
        Map<String, WorkloadRequest> last = new HashMap<>();
        for (WorkloadRequest r : w.requests()) {
            WorkloadRequest prev = last.put(r.session(), r);
            if (prev != null) {
                List<Message> before = prev.messages();
                List<Message> now = r.messages();
                assertEquals(before, now.subList(0, before.size()), "the history is kept verbatim");
                assertEquals("assistant", now.get(before.size()).role());
                assertEquals(
                        prev.maxTokens() * 4,
                        now.get(before.size()).content().length(),
                        "the reply has as many tokens as the turn asked for");
                assertEquals(
                        prev.reply(), now.get(before.size()).content(), "the reply generated is the reply sent back");
                assertTrue(
                        r.replicaPrompt().startsWith(prev.replicaPrompt() + prev.reply()),
                        "turn N and its reply are a prefix of turn N+1");
                assertTrue(r.replicaPrompt().startsWith(prev.replicaPrompt()), "turn N is a prefix of turn N+1");
            }
            assertEquals("system", r.messages().get(0).role());
        }
    }

    @Test
    void branchesShareTheMainLineAndResumptionsTruncateIt() {
        Workload w = Workloads.branching(
                5, new Workloads.BranchSpec(4, 200, 0.5, 0.3, 6, new Workloads.ChatSpec(0, 0, 32, 8, 16, 8, 16)));
        int branchLike = 0;
        Map<String, WorkloadRequest> prevInSession = new HashMap<>();
        for (WorkloadRequest r : w.requests()) {
            WorkloadRequest prev = prevInSession.put(r.session(), r);
            if (prev != null && !r.replicaPrompt().startsWith(prev.replicaPrompt())) {
                // not a continuation of the previous request: shares a shorter prefix (branch or resumption)
                String a = prev.replicaPrompt();
                String b = r.replicaPrompt();
                int common = 0;
                while (common < Math.min(a.length(), b.length()) && a.charAt(common) == b.charAt(common)) {
                    common++;
                }
                assertTrue(common >= r.messages().get(0).content().length(), "at least the system prompt is shared");
                branchLike++;
            }
        }
        assertTrue(branchLike > 20, "branches and resumptions happen: " + branchLike);
        int continued = 0;
        for (int i = 0; i < w.size(); i++) {
            WorkloadRequest r = w.requests().get(i);
            for (int j = i + 1; j < w.size(); j++) {
                WorkloadRequest later = w.requests().get(j);
                if (later.session().equals(r.session())) {
                    if (r.reply() != null
                            && later.messages().size() > r.messages().size()
                            && later.messages().subList(0, r.messages().size()).equals(r.messages())) {
                        assertEquals(
                                Message.assistant(r.reply()),
                                later.messages().get(r.messages().size()),
                                "a main-line reply is carried back by the conversation's later requests");
                        continued++;
                    }
                    break;
                }
            }
        }
        assertTrue(continued > 20, "main-line replies carried back: " + continued);
        assertTrue(w.description().contains("branch") && w.description().contains("resume"));
    }

    @Test
    void hotPrefixShare() {
        Workload w80 = Workloads.hotPrefix(6, 0.8);
        Workload w100 = Workloads.hotPrefix(6, 1.0);
        String hot = w100.requests().get(0).messages().get(0).content();
        long hot80 = w80.requests().stream()
                .filter(r -> r.messages().get(0).content().equals(hot))
                .count();
        assertTrue(hot80 > 0.75 * 1024 && hot80 < 0.85 * 1024, "about 80%: " + hot80);
        assertTrue(w100.requests().stream()
                .allMatch(r -> r.messages().get(0).content().equals(hot)));
        assertEquals("hot-prefix-80", w80.name());
    }

    @Test
    void burstsArriveAtTheHighRateInTheirPhaseAndTheLowRateBetween() {
        Workload w = Workloads.hotPrefix(1, 1.0).bursts(60, 10, 1.0, 2.0, 9);
        long[] inHigh = new long[1];
        long[] inLow = new long[1];
        long last = 0;
        for (WorkloadRequest r : w.requests()) {
            long t = r.arrivalNanos();
            assertTrue(t >= last, "arrivals in order");
            last = t;
            double inPeriod = (t / 1e9) % 3.0;
            if (inPeriod < 1.0) {
                inHigh[0]++;
            } else {
                inLow[0]++;
            }
        }
        double periods = last / 1e9 / 3.0;
        assertTrue(periods >= 5, "enough periods to measure: " + periods);
        // 60 per second for 1 s and 10 per second for 2 s of every period: 60 and 20 per period
        assertEquals(60, inHigh[0] / periods, 12, "high phase");
        assertEquals(20, inLow[0] / periods, 6, "low phase");
        assertEquals(
                fingerprintWithoutTimes(Workloads.hotPrefix(1, 1.0)),
                fingerprintWithoutTimes(w),
                "arrivals change the times, not the requests");
    }

    @Test
    void poissonArrivalsHaveTheRequestedRateAndAreSeeded() {
        Workload w = Workloads.hotPrefix(1, 1.0).poisson(20, 9);
        assertEquals(20, w.meanRate(), 2.0);
        Workload other = Workloads.hotPrefix(1, 1.0).poisson(20, 10);
        Workload again = Workloads.hotPrefix(1, 1.0).poisson(20, 9);
        int same = 0;
        for (int i = 0; i < w.size(); i++) {
            assertEquals(
                    w.requests().get(i).arrivalNanos(), again.requests().get(i).arrivalNanos(), "seed 9 twice");
            same += w.requests().get(i).arrivalNanos()
                            == other.requests().get(i).arrivalNanos()
                    ? 1
                    : 0;
        }
        assertTrue(same < 10, "seeds 9 and 10 give other arrival times (" + same + " equal)");
        assertEquals(
                fingerprintWithoutTimes(Workloads.hotPrefix(1, 1.0)),
                fingerprintWithoutTimes(w),
                "arrivals change the times, not the requests");
        for (int i = 1; i < w.size(); i++) {
            assertTrue(w.requests().get(i).arrivalNanos()
                    >= w.requests().get(i - 1).arrivalNanos());
        }
    }

    @Test
    void traceBlocksBecomeDeterministicText(@TempDir Path dir) throws IOException {
        Path trace = dir.resolve("t.jsonl");
        Files.writeString(
                trace,
                String.join(
                        "\n",
                        "{\"timestamp\": 0, \"input_length\": 1100, \"output_length\": 7, \"hash_ids\": [1, 2, 3]}",
                        "{\"timestamp\": 40, \"input_length\": 600, \"output_length\": 3, \"hash_ids\": [1, 4]}",
                        "{\"timestamp\": 90, \"input_length\": 100, \"output_length\": 0, \"hash_ids\": [5]}"));
        Workload w = Workloads.mooncake(trace, 256);
        List<WorkloadRequest> rs = w.requests();
        assertEquals(3, rs.size());
        assertEquals((int) Math.ceil(1100 * 256 / 512.0), rs.get(0).prompt().length());
        assertEquals(300, rs.get(1).prompt().length());
        assertEquals(rs.get(0).prompt().substring(0, 256), rs.get(1).prompt().substring(0, 256), "same id, same text");
        assertNotEquals(
                rs.get(0).prompt().charAt(257),
                rs.get(1).prompt().charAt(257),
                "different ids differ from their first characters");
        assertEquals(40_000_000L, rs.get(1).arrivalNanos());
        assertEquals(7, rs.get(0).maxTokens());
        assertEquals(1, rs.get(2).maxTokens(), "a zero-length output still generates one token");
        String nine = Workloads.blockText(9, 256);
        assertEquals(256, nine.length());
        assertTrue(rs.get(0).prompt().contains(Workloads.blockText(2, 256)), "a request is its blocks' text");
        assertNotEquals(
                nine.substring(0, 8),
                Workloads.blockText(10, 256).substring(0, 8),
                "ids 9 and 10 differ from the start");
    }

    static List<String> fingerprintWithoutTimes(Workload w) {
        return w.requests().stream()
                .map(r -> r.session() + "|" + r.maxTokens() + "|" + r.replicaPrompt())
                .toList();
    }

    @Test
    void theMooncakeTraceKeepsItsReuseWhenScaled() {
        // the report's default trace path, from the repository root (two levels above this module)
        Path trace = Path.of("../..").resolve(new Report.Settings().trace).normalize();
        assumeTrue(
                Files.isReadable(trace),
                () -> "SKIPPED: no trace at " + trace.toAbsolutePath()
                        + "; the Mooncake replay's scaling is not checked (the report marks the workload skipped too)");
        Workload w = Workloads.mooncake(trace);
        assertEquals(3993, w.size());
        double ideal = PreparedWorkload.of(w, EngineConfig.defaults()).idealHitRatio();
        // The trace's README measures 65.1% of input tokens reusable with 512-token blocks.
        assertTrue(ideal > 0.62 && ideal < 0.70, "ideal hit ratio " + ideal);
    }
}
