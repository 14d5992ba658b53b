package dev.cart.proxy;
import dev.cart.core.CacheFeedback;
import dev.cart.core.spi.LeaseCompletion;
import dev.cart.core.ManagedReplicaSet;
import dev.cart.core.Outcome;
import dev.cart.core.PromptKey;
import dev.cart.core.ReplicaSpec;
import dev.cart.core.RouteDecision;
import dev.cart.core.RouteRequest;
import dev.cart.core.Router;
import dev.cart.policy.Policies;
/**
 * The metrics a routed, answered request updates, as the proxy calls them: its decision, its lease's completion,
 * the first byte, the replica's usage report against the prediction, the answer learned, the request's end.
 * which 0: a 200 (bench); 1: the same calls on a second replica (labels of another meter set).
 */
public class HeaderPath implements java.util.function.LongSupplier {
  static final RouteDecision[] D = new RouteDecision[2];
  static {
    ManagedReplicaSet pool = ManagedReplicaSet.builder().add(new ReplicaSpec("http://127.0.0.1:8001", 64, 0)).add(new ReplicaSpec("http://127.0.0.1:8002", 64, 0)).build();
    Router r = Router.builder().replicas(pool).policy(Policies.cacheAware()).build();
    for (int i = 0; i < 2; i++) {
      D[i] = r.choose(RouteRequest.of(PromptKey.ofText("prompt " + i + " of a thousand characters or so ".repeat(20), 64)).withModel("bench"));
    }
    D[0].lease().close();
    D[1].lease().close();
  }
  static final ProxyMetrics M = new ProxyMetrics(() -> null, 64, new DecisionWindow());
  static final LeaseCompletion[] C = {new LeaseCompletion(D[0], Outcome.SUCCESS, 200, 1_000_000, 0), new LeaseCompletion(D[1], Outcome.SUCCESS, 200, 1_000_000, 0)};
  static final CacheFeedback F = new CacheFeedback(192, 192, 250, CacheFeedback.Verdict.OK);
  int which;
  public long getAsLong() {
    RouteDecision d = D[which];
    String id = d.replica().id();
    M.decision(d, false);
    M.firstByte(id, 900_000);
    M.leaseCompleted(C[which]);
    M.cacheFeedback(d, F);
    M.answerLearned("learned");
    M.request("/v1/chat/completions", 200, id, 1_200_000);
    return id.length();
  }
}
