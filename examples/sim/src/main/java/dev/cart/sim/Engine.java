package dev.cart.sim;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * A discrete-step model of one vLLM V1 engine: continuous batching with chunked prefill over a
 * {@link BlockCache}.
 *
 * <p>Design: the engine advances in steps, as vLLM's scheduler does. {@link #planStep} builds one batch:
 * first the running requests in admission order, each taking as many tokens as it still needs (one for a
 * request that is decoding, a chunk of its prompt for one that is prefilling) within the step's token
 * budget; then, if nothing had to be preempted, waiting requests in arrival order while budget, the
 * sequence limit and KV blocks allow. A new request starts after its cached prefix: the run of leading
 * prompt blocks present in the cache, capped so that at least one prompt token is computed. Blocks are
 * allocated for exactly the tokens scheduled; when a running request cannot get a block, the most
 * recently admitted request is preempted (its blocks released, its progress dropped, back to the head
 * of the queue to be recomputed). The step's duration is
 * {@code fixed + prefillTokens * perToken + decodingSequences * perSequence}. {@link #completeStep} then
 * applies it: progress advances, newly full blocks are registered in the cache (prompt blocks, and blocks
 * of generated tokens when the request's hashes cover them: vLLM V1 caches both), a request whose
 * whole sequence is computed samples one token (its first token ends its TTFT), and a request that has
 * all its tokens leaves and releases its blocks.
 *
 * <p>The engine knows nothing of clocks: callers pass the time. The discrete-event simulation drives it
 * on a virtual clock; the HTTP replica drives it in real time. Not thread-safe: the owner serialises all
 * calls ({@link #submit} may come between {@code planStep} and {@code completeStep}).
 */
final class Engine {

    private final EngineConfig config;
    private final BlockCache cache;
    private final ArrayDeque<EngineRequest> waiting = new ArrayDeque<>();
    private final List<EngineRequest> running = new ArrayList<>();
    private final List<EngineRequest> batch = new ArrayList<>();
    private boolean planned;
    private int aborts;

    private long steps;
    private long busyNanos;
    private long computedPromptTokens;
    private long preemptions;
    private int peakRunning;
    private int peakWaiting;
    private double slowdown = 1.0;
    /** Hears blocks stored (and, through the cache, evicted) and each step's end; null: nobody listens. */
    private BlockEvents events;

    /** What a replica publishing KV-cache events hears from its engine (on the engine's thread). */
    interface BlockEvents {
        /** Block {@code index} of {@code r.blocks} was computed and is new to the cache. */
        void stored(EngineRequest r, int index);

        /** A cached block was evicted. */
        void removed(long hash);

        /** A step ended at {@code nanos}: what it stored and evicted is one batch. */
        void stepDone(long nanos);
    }

    Engine(EngineConfig config) {
        this.config = config;
        this.cache = new BlockCache(config.capacityBlocks());
    }

    EngineConfig config() {
        return config;
    }

    /**
     * Makes every step from the next one on take {@code factor} times its modelled time (1 is the model; 2
     * a replica half as fast, as another tenant on its GPU or an older GPU would make it).
     */
    void slowdown(double factor) {
        if (!(factor > 0 && factor <= 1000)) {
            throw new IllegalArgumentException("slowdown must be in (0, 1000], was " + factor);
        }
        this.slowdown = factor;
    }

    BlockCache cache() {
        return cache;
    }

    /** Reports the engine's block events to {@code listener} from now on. */
    void events(BlockEvents listener) {
        this.events = listener;
        cache.onEvict(listener::removed);
    }

    /**
     * A process restart with its requests kept (their clients retry at once): every running request loses
     * its progress and goes back to the head of the queue, and the cache starts empty.
     */
    void restart() {
        if (planned) {
            throw new IllegalStateException("restart between steps");
        }
        for (int i = running.size() - 1; i >= 0; i--) {
            EngineRequest r = running.remove(i);
            releaseBlocks(r);
            r.computed = 0;
            waiting.addFirst(r);
        }
        cache.dropEvictable();
    }

    /**
     * Queues a request. A request whose prompt plus completion exceeds the model's context (or the whole
     * cache) is refused at once through its sink, as vLLM answers 400.
     *
     * @return false if refused
     */
    boolean submit(EngineRequest r, long now) {
        r.submitNanos = now;
        long total = (long) r.promptTokens + r.maxTokens;
        int limit = config.effectiveMaxModelLen();
        if (total > limit) {
            r.rejected = true;
            r.sink.onRejected(
                    r,
                    "This model's maximum context length is " + limit + " tokens. However, you "
                            + "requested " + total + " tokens (" + r.promptTokens + " in the messages, " + r.maxTokens
                            + " in the completion).");
            return false;
        }
        waiting.addLast(r);
        peakWaiting = Math.max(peakWaiting, waiting.size());
        return true;
    }

    /**
     * Drops a request whose client went away: it leaves the engine (releasing its blocks) before the next
     * step is planned. Its sink may still see the step in progress.
     */
    void abort(EngineRequest r) {
        if (!r.finished() && !r.rejected) {
            r.aborted = true;
            aborts++;
        }
    }

    private void purgeAborted() {
        if (aborts == 0 || planned) {
            return; // a planned step may include the request; the next plan drops it
        }
        aborts = 0;
        waiting.removeIf(r -> r.aborted);
        for (int i = running.size() - 1; i >= 0; i--) {
            EngineRequest r = running.get(i);
            if (r.aborted) {
                running.remove(i);
                releaseBlocks(r);
            }
        }
    }

    /** True when some request is waiting or running. */
    boolean hasWork() {
        purgeAborted();
        return !waiting.isEmpty() || !running.isEmpty();
    }

    int runningCount() {
        return running.size();
    }

    /**
     * Prompt tokens queued here that still have to be computed before their first token: for a running
     * request the rest of its prompt, for a waiting one its prompt minus what the cache holds now (what it
     * would get if admitted at once). For diagnostics; costs a cache lookup per waiting request.
     */
    long pendingPrefillTokens() {
        long p = 0;
        for (int i = 0; i < running.size(); i++) {
            EngineRequest r = running.get(i);
            if (r.firstTokenNanos < 0) {
                p += r.known() - r.computed;
            }
        }
        int bt = config.blockTokens();
        for (EngineRequest r : waiting) {
            if (!r.aborted) {
                int maxHit = Math.min(r.blocks.length, (r.known() - 1) / bt);
                p += r.known() - (long) cache.matchPrefix(r.blocks, maxHit) * bt;
            }
        }
        return p;
    }

    int waitingCount() {
        return waiting.size();
    }

    /**
     * Builds the next batch at time {@code now}.
     *
     * @return the step's duration in nanoseconds, or -1 if there is nothing to run
     */
    long planStep(long now) {
        if (planned) {
            throw new IllegalStateException("the previous step has not been completed");
        }
        purgeAborted();
        batch.clear();
        int budget = config.maxBatchedTokens();
        int prefillTokens = 0;
        int decodeSeqs = 0;
        boolean preempted = false;
        for (int i = 0; i < running.size() && budget > 0; i++) {
            EngineRequest r = running.get(i);
            int remaining = r.known() - r.computed;
            int n = Math.min(remaining, budget);
            int need = blocksFor(r.computed + n) - r.held();
            boolean lost = false;
            while (!cache.allocate(need)) {
                EngineRequest victim = running.remove(running.size() - 1);
                preempt(victim);
                preempted = true;
                if (victim == r) {
                    lost = true;
                    break;
                }
            }
            if (lost) {
                break;
            }
            r.privateHeld += Math.max(0, need);
            r.scheduled = n;
            batch.add(r);
            budget -= n;
            if (r.generated > 0 && remaining == 1) {
                decodeSeqs++;
            } else {
                prefillTokens += n;
            }
        }
        while (!preempted && budget > 0 && !waiting.isEmpty() && running.size() < config.maxNumSeqs()) {
            EngineRequest r = waiting.peekFirst();
            int known = r.known();
            int maxHit = Math.min(r.blocks.length, (known - 1) / config.blockTokens());
            int hit = cache.matchPrefix(r.blocks, maxHit);
            int start = hit * config.blockTokens();
            int n = Math.min(known - start, budget);
            int need = blocksFor(start + n) - hit;
            if (cache.available() - cache.evictableAmong(r.blocks, hit) < need) {
                break; // first come, first served: nobody overtakes the head of the queue
            }
            cache.pin(r.blocks, hit);
            if (!cache.allocate(need)) {
                throw new IllegalStateException("allocation failed after the capacity check");
            }
            waiting.pollFirst();
            running.add(r);
            r.hashedHeld = hit;
            r.privateHeld = need;
            r.computed = start;
            if (r.cachedTokens < 0) {
                r.cachedTokens = start;
                r.admittedNanos = now;
                r.sink.onAdmitted(r, now);
            }
            r.scheduled = n;
            batch.add(r);
            budget -= n;
            prefillTokens += n;
        }
        if (batch.isEmpty()) {
            return -1;
        }
        peakRunning = Math.max(peakRunning, running.size());
        planned = true;
        long d = config.stepNanos(prefillTokens, decodeSeqs);
        if (slowdown != 1.0) {
            d = Math.round(d * slowdown);
        }
        busyNanos += d;
        computedPromptTokens += prefillTokens;
        steps++;
        return d;
    }

    /** Applies the planned step, which ended at {@code end}. */
    void completeStep(long end) {
        if (!planned) {
            throw new IllegalStateException("no step planned");
        }
        planned = false;
        int bt = config.blockTokens();
        for (int k = 0; k < batch.size(); k++) {
            EngineRequest r = batch.get(k);
            r.computed += r.scheduled;
            r.scheduled = 0;
            int full = Math.min(r.blocks.length, r.computed / bt);
            while (r.hashedHeld < full) {
                if (cache.register(r.blocks[r.hashedHeld]) && events != null) {
                    events.stored(r, r.hashedHeld);
                }
                r.hashedHeld++;
                r.privateHeld--;
            }
            if (r.computed == r.known()) {
                r.generated++;
                if (r.firstTokenNanos < 0) {
                    r.firstTokenNanos = end;
                }
                r.sink.onToken(r, end);
                if (r.generated >= r.maxTokens) {
                    finish(r, end);
                }
            }
        }
        batch.clear();
        if (events != null) {
            events.stepDone(end);
        }
    }

    private void finish(EngineRequest r, long end) {
        running.remove(r);
        releaseBlocks(r);
        r.finishNanos = end;
        r.sink.onFinished(r, end);
    }

    private void preempt(EngineRequest r) {
        releaseBlocks(r);
        r.computed = 0;
        r.preemptions++;
        preemptions++;
        waiting.addFirst(r);
    }

    private void releaseBlocks(EngineRequest r) {
        cache.release(r.blocks, r.hashedHeld);
        cache.freePrivate(r.privateHeld);
        r.hashedHeld = 0;
        r.privateHeld = 0;
    }

    private int blocksFor(int tokens) {
        return (tokens + config.blockTokens() - 1) / config.blockTokens();
    }

    long steps() {
        return steps;
    }

    /** Sum of step durations: the time the engine was computing. */
    long busyNanos() {
        return busyNanos;
    }

    long computedPromptTokens() {
        return computedPromptTokens;
    }

    long preemptions() {
        return preemptions;
    }

    int peakRunning() {
        return peakRunning;
    }

    int peakWaiting() {
        return peakWaiting;
    }
}
