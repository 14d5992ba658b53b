package dev.cart.proxy.observe;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.PromptKey;
import dev.cart.core.ReplicaSpec;
import dev.cart.core.RouteDecision;
import dev.cart.core.RouteRequest;
import dev.cart.core.Router;
import dev.cart.core.ServedUsage;
import dev.cart.policy.Policies;
import java.util.Locale;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class DecisionLogTest {

    /** The decision line's ratio reads as {@code %.3f} wrote it, ties and all, without a Formatter. */
    @Test
    void ratioIsWrittenAsFormatWritesIt() {
        double[] fixed = {0, 1, 0.951, 0.5035, 0.0005, 0.9995, 2.0275, 1e-9, 0.1, 0.125, Double.NaN, -0.25, 1e12};
        for (double r : fixed) {
            assertEquals(String.format(Locale.ROOT, "%.3f", r), DecisionLog.ratio(r), "ratio " + r);
        }
        SplittableRandom rnd = new SplittableRandom(7);
        for (int i = 0; i < 200_000; i++) {
            double r = i % 2 == 0 ? rnd.nextDouble() : (double) rnd.nextInt(5000) / (1 + rnd.nextInt(5000));
            assertEquals(String.format(Locale.ROOT, "%.3f", r), DecisionLog.ratio(r), "ratio " + r);
        }
    }

    /**
     * A whole routed line reads exactly as its values: a replica id kept as it is whatever its characters (past
     * Latin-1 too), values made safe and cut to their lengths, numbers as {@code Long.toString} writes them, and
     * a long line does not leave the thread's builder wrong for the next one.
     */
    @Test
    void aDecisionLineReadsAsItsValuesWhateverTheReplicaId() {
        String[] ids = {"http://127.0.0.1:8001", "http://café:8000", "http://例え.jp:8000", "http://n/" + "x".repeat(1500)
        };
        for (String id : ids) {
            Router router = Router.builder()
                    .replicas(ManagedReplicaSet.builder()
                            .add(new ReplicaSpec(id, 64, 0))
                            .build())
                    .policy(Policies.cacheAware())
                    .build();
            RouteDecision d = router.choose(RouteRequest.of(PromptKey.ofText("Some prompt text. ".repeat(30), 64)));
            DecisionLog log = new DecisionLog(true, "/v1/chat/" + "c".repeat(300), "POST");
            log.request("llama 3 é " + "m".repeat(120), true);
            log.decision(d, false);
            log.status(-1);
            log.usage(new ServedUsage(Long.MAX_VALUE, 0));
            log.retries(2);
            log.result("client_closed");
            log.flow(7_000_000, 1, "t-1f2e3d4c5b6a7980" + "x".repeat(100));
            String expected = "decision endpoint=" + DecisionLog.safe("/v1/chat/" + "c".repeat(300), 200)
                    + " method=POST model=llama?3???" + "m".repeat(90) + " stream=true reason="
                    + d.reason().code() + " replica=" + id + " matched=" + d.matchedLength() + " key_len="
                    + d.keyLength() + " ratio=" + String.format(Locale.ROOT, "%.3f", d.matchedRatio())
                    + " decision_us=" + d.decisionNanos() / 1000 + " status=-1 prompt_tokens=" + Long.MAX_VALUE
                    + " cached=0 upstream_ms=- retries=2 result=client_closed total_ms=T predicted_ms=- runner_up=-"
                    + " runner_up_ms=- queued_ms=7 band=1 tenant=t-1f2e3d4c5b6a7980" + "x".repeat(46);
            assertEquals(expected, log.line().replaceFirst("total_ms=\\d+", "total_ms=T"), id);
            // the thread's builder is right for the next, short line too
            DecisionLog next = new DecisionLog(true, "/v1/models", "GET");
            next.preciseKeys();
            assertEquals(
                    "decision endpoint=/v1/models method=GET model=- stream=- reason=- replica=- matched=- key_len=-"
                            + " ratio=- decision_us=- status=- prompt_tokens=- cached=- upstream_ms=- retries=0 result=-"
                            + " total_ms=T predicted_ms=- runner_up=- runner_up_ms=- queued_ms=- band=- tenant=-"
                            + " mode=- confirmed_tokens=- held_tokens=- tokenize_ms=- precise=- precise_reason=-",
                    next.line().replaceFirst("total_ms=\\d+", "total_ms=T"));
        }
    }
}
