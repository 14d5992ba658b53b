package dev.cart.proxy;
import dev.cart.core.ManagedReplicaSet;
import dev.cart.policy.Policies;
import dev.cart.core.PromptKey;
import dev.cart.core.ReplicaSpec;
import dev.cart.core.RouteDecision;
import dev.cart.core.RouteRequest;
import dev.cart.core.Router;
import dev.cart.core.ServedUsage;
/**
 * A routed request's decision line, filled as the proxy fills it and written through the build's own logback
 * configuration (its console appender: run with stdout to a file, as the proxy runs). which 0: proxy.decision_log
 * on; 1: off (the line is neither built nor written), the floor.
 */
public class HeaderPath implements java.util.function.LongSupplier {
  static final RouteDecision D;
  static {
    ManagedReplicaSet pool = ManagedReplicaSet.builder().add(new ReplicaSpec("http://127.0.0.1:8001", 64, 0)).add(new ReplicaSpec("http://127.0.0.1:8002", 64, 0)).build();
    Router r = Router.builder().replicas(pool).policy(Policies.cacheAware()).build();
    D = r.choose(RouteRequest.of(PromptKey.ofText("a system prompt of a thousand characters or so ".repeat(20), 64)).withModel("bench"));
    D.lease().close();
  }
  static final ServedUsage USAGE = new ServedUsage(250, 192);
  int which;
  public long getAsLong() {
    DecisionLog log = new DecisionLog(which == 0, "/v1/chat/completions", "POST");
    log.request("bench", false);
    log.decision(D, false);
    log.retries(0);
    log.upstreamStarted();
    log.status(200);
    log.usage(USAGE);
    log.result("ok");
    log.emit();
    return log.replica().length();
  }
}
