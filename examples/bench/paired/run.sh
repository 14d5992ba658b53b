#!/bin/sh
# Paired thread-CPU timing of one piece of the proxy's request path in two builds, in one JVM: each build's
# jar (cart-proxy/target/cart-proxy.jar of that build) in a class loader of its own with a harness
# compiled against it, rounds alternating (ABBA), thread CPU time and bytes allocated per call.
#
#   sh examples/bench/paired/run.sh headers  BEFORE.jar AFTER.jar [ROUNDS]
#       the request's and the answer's headers on the Netty front's path (BEFORE: a build before the
#       HeaderView change, whose harness is before/HeaderPath.java; AFTER: one with it)
#   sh examples/bench/paired/run.sh observer BEFORE.jar AFTER.jar [ROUNDS]
#       one streamed answer of the bench's fake replica (34 events) through ResponseObserver; -Dcart.paired.events=N
#       in JAVA_OPTS for N text events in place of 32 (a longer stream: a real server sends one event per token)
#   sh examples/bench/paired/run.sh metrics BEFORE.jar AFTER.jar [ROUNDS]
#       the Micrometer updates of a routed, answered request (decision, lease, first byte, usage, learning, end)
#   sh examples/bench/paired/run.sh learning PROXY.jar PROXY.jar [ROUNDS]
#       a routed 32 KB request and its answer through the proxy's own path without sockets (relay/HeaderPath.java:
#       plan, prepare, send, answer head, body through the observer, lease closed, delivered, end), the build's
#       proxy with cache.learn_answer false ("before") and true ("after"); -Dcart.paired.size=N in JAVA_OPTS for
#       another body size, -Dcart.paired.events=N for N text events in the stream in place of 32. Both arguments may
#       name one jar: the pair is learning off against on.
#   sh examples/bench/paired/run.sh relay BEFORE.jar AFTER.jar [ROUNDS]
#       the same path, learning on, in two builds
#   sh examples/bench/paired/run.sh body BEFORE.jar AFTER.jar [ROUNDS]
#       the Netty front's request body made into what the core reads (BEFORE: a byte[] of its own per request,
#       body/before; AFTER: a scratch array reused per request, which the core reads in place, body/after), then the request
#       prepared and answered as relay's (JSON answer); 32 KB bodies ("bench") and 1 KB ("SDK"), held as direct
#       buffers of 16 KB (-Dcart.paired.piece=N in JAVA_OPTS for another piece size)
#   sh examples/bench/paired/run.sh heads BEFORE.jar AFTER.jar [ROUNDS]
#       the Netty front's two heads built from the maps Netty's decoders leave, and encoded (BEFORE: new maps and a
#       copy through HopByHop, heads/before; AFTER: the decoded maps less the dropped names, heads/after); the
#       bench's headers ("bench") and an OpenAI SDK client's with a streamed answer ("SDK")
#   sh examples/bench/paired/run.sh decisionlog BEFORE.jar AFTER.jar [ROUNDS] > /tmp/lines.log
#       a routed request's decision line, filled and written through the build's logback configuration
#       ("bench": proxy.decision_log on; "SDK": off, the floor); stdout to a file, as the proxy's
#
# Prints (on stderr), for two inputs, the median and minimum nanoseconds per call of each build, bytes per call, and
# the median (and interquartile range) of the per-round ratio after/before.
set -e
what=$1; before=$2; after=$3; rounds=${4:-41}
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
case $what in
  headers)  hb=$here/before; ha=$here/after; shared=$here/HeaderFixtures.java; n=20000; label="headers";;
  observer) hb=$here/observer; ha=$here/observer; shared=; n=2000; label="observer, answer learning on (bench) or off (SDK)";;
  metrics)  hb=$here/metrics; ha=$here/metrics; shared=; n=20000; label="metrics of a routed request, replica 1 (bench) or 2 (SDK)";;
  learning) hb=$here/relay; ha=$here/relay; shared=; n=400; label="a routed request, JSON answer (bench) or streamed (SDK)"; learn_b=false; learn_a=true; names=off,on;;
  relay) hb=$here/relay; ha=$here/relay; shared=; n=400; label="a routed request, learning on, JSON answer (bench) or streamed (SDK)"; learn_b=true; learn_a=true;;
  heads) hb=$here/heads/before; ha=$here/heads/after; shared=$here/heads/HeadFixtures.java; n=20000; label="the two heads built and encoded";;
  body) hb=$here/body/before; ha=$here/body/after; shared=; n=400; label="the body path and a routed request, 32 KB (bench) or 1 KB (SDK)";;
  decisionlog) hb=$here/decisionlog; ha=$here/decisionlog; shared=; n=20000; label="decision line, on (bench) or off (SDK)";;
  *) echo "headers, observer, metrics, learning, relay, heads, body or decisionlog" >&2; exit 2;;
esac
javac -nowarn -d "$out/b" -cp "$before" "$hb/HeaderPath.java" $shared
javac -nowarn -d "$out/a" -cp "$after" "$ha/HeaderPath.java" $shared
if [ -n "$learn_b" ]; then echo "$learn_b" > "$out/b/learn.txt"; echo "$learn_a" > "$out/a/learn.txt"; fi
javac -d "$out/r" "$here/Paired.java"
java $JAVA_OPTS -cp "$out/r" Paired "$before" "$out/b" "$after" "$out/a" "$rounds" "$n" "$label: " ${names:-before,after}
rm -rf "$out"
