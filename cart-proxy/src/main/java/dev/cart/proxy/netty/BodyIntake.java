package dev.cart.proxy.netty;

import dev.cart.proxy.core.ProxyCore;
import dev.cart.proxy.http.Answer;
import dev.cart.proxy.http.BodyBudget;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.channel.socket.DuplexChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import java.util.ArrayDeque;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The handler between the codec and the {@link ClientExchange}: a request's read. It hands each request head to the
 * exchange (which plans it), reads a proxied request's body into a {@link RequestBody} within
 * {@code proxy.max_body_bytes} and the {@link BodyBudget} (413 over the size, 400 for broken framing, the budget's
 * 503 when it is spent, each answered through the exchange), drops the rest of a request whose answer is already
 * decided, and has the core prepare the request read whole: on the loop for a small body, on the extraction pool
 * for a large or token-mode one (in precise mode the core may hand back a request still being looked up on its
 * tokenize pool, resumed on the loop the same way); the exchange gets the prepared request. While an answer is
 * produced it holds the client's next requests (pipelined), within {@link #PIPELINED_MESSAGES} and
 * {@link #PIPELINED_BYTES}, so that a half-close is seen at once.
 *
 * <p>How: the codec's messages stop here (nothing is passed on down the pipeline); the client's buffers are kept
 * as they are by the {@link RequestBody}, so the body is copied once, into the array the core reads, and the
 * request's first send is written from those buffers ({@link UpstreamCall}). The exchange is called directly
 * (it is bound once, before the channel is active), so a request costs no message object and no extra hop.
 *
 * <p>Concurrency: every method runs on the connection's event loop; the extraction pool's result comes back to
 * the loop through its executor before it touches any state.
 */
// Netty's write, close and schedule calls return futures that a handler rightly ignores: failures arrive as
// channel events (exceptionCaught, channelInactive) or through the listeners added where they matter
@SuppressWarnings("FutureReturnValueIgnored")
final class BodyIntake extends ChannelInboundHandlerAdapter {

    private static final Logger LOG = LoggerFactory.getLogger(BodyIntake.class);

    /**
     * How much of a client's next requests (pipelined) a connection holds while an answer is produced: it keeps
     * reading the client during the answer, so that a half-close (the client has gone) is noticed at once, and
     * stops reading beyond this many queued messages or body bytes until the answer is complete.
     */
    static final int PIPELINED_MESSAGES = 16;

    static final int PIPELINED_BYTES = 64 * 1024;

    /** How long a connection answered before its request was read goes on dropping the request's rest. */
    static final long LINGER_MILLIS = 2_000;

    /**
     * Bodies from this size on, and every routed body in token mode, are prepared (extracted, tokenized,
     * scanned) on the front's extraction pool rather than on the event loop.
     */
    static final int OFFLOAD_BYTES = 64 * 1024;

    /** Where a client connection is. */
    private enum Phase {
        /** Waiting for a request head. */
        HEAD,
        /** Reading a proxied request's body. */
        BODY,
        /** Reading and dropping the rest of a request whose answer is already decided. */
        DISCARD,
        /** The request is read; its answer is being produced. */
        ANSWER
    }

    private final ProxyCore core;
    private final BodyBudget budget;
    private final Executor extraction;
    private final boolean tokenMode;
    private final ConnectionDeadlines deadlines;
    /** The request body read so far. */
    final RequestBody body = new RequestBody();

    private ClientExchange exchange;
    private ChannelHandlerContext ctx;
    private Phase phase = Phase.HEAD;
    /** The client's next requests, read while an answer is produced: handled once it is complete. */
    private final ArrayDeque<Object> queued = new ArrayDeque<>();
    /** The body bytes in {@link #queued}. */
    private int queuedBytes;

    /** The proxied request whose body is read; null for a request the proxy answers itself. */
    private ProxyCore.Proxied proxied;

    private BodyBudget.Grant grant;
    private boolean requestComplete;
    /** The answer is out and the output shut; the rest of the request is read and dropped until it ends. */
    private boolean lingering;
    /** True while the request's body is being prepared off the loop. */
    private boolean extracting;

    BodyIntake(
            ProxyCore core, BodyBudget budget, Executor extraction, boolean tokenMode, ConnectionDeadlines deadlines) {
        this.core = core;
        this.budget = budget;
        this.extraction = extraction;
        this.tokenMode = tokenMode;
        this.deadlines = deadlines;
    }

    /** Binds the exchange the requests read here go to (set once, before the channel is active). */
    void feed(ClientExchange e) {
        this.exchange = e;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext c) {
        this.ctx = c;
    }

    @Override
    public void channelRead(ChannelHandlerContext c, Object msg) {
        if (phase == Phase.ANSWER || !queued.isEmpty()) {
            queued.add(msg); // pipelined: handled once the answer in progress is complete
            if (msg instanceof HttpContent content) {
                queuedBytes += content.content().readableBytes();
            }
            c.channel().config().setAutoRead(readsDuringAnswer());
            return;
        }
        try {
            handle(msg);
        } finally {
            ReferenceCountUtil.release(msg);
        }
    }

    private void handle(Object msg) {
        if (msg instanceof HttpRequest req) {
            if (phase != Phase.HEAD) {
                ctx.close(); // cannot happen with a well-behaved codec; never answer out of order
                return;
            }
            requestComplete = false;
            proxied = null;
            exchange.head(req);
        }
        if (msg instanceof HttpContent content) {
            content(content);
        }
    }

    /** The request's answer is decided before its body: the rest of it is read and dropped. */
    void discard() {
        phase = Phase.DISCARD;
    }

    /**
     * The request is proxied: its body, if it needs one, is read within the limits (a declared length over
     * {@code proxy.max_body_bytes} is refused at once with a 413); {@code req} is its head.
     */
    void expect(ProxyCore.Proxied p, HttpRequest req) {
        proxied = p;
        grant = budget.grant();
        if (!p.needsBody()) {
            phase = Phase.DISCARD;
            return; // the exchange starts once the request has been read
        }
        long declared = HttpUtil.getContentLength(req, -1L);
        if (declared > core.maxBodyBytes()) {
            phase = Phase.DISCARD;
            exchange.answer(core.tooLarge(p), true, true);
            return;
        }
        if (HttpUtil.is100ContinueExpected(req)) {
            ctx.writeAndFlush(new DefaultFullHttpResponse(
                    HttpVersion.HTTP_1_1, HttpResponseStatus.CONTINUE, Unpooled.EMPTY_BUFFER));
        }
        body.reset();
        phase = Phase.BODY;
    }

    private void content(HttpContent content) {
        boolean last = content instanceof LastHttpContent;
        if (phase == Phase.DISCARD) {
            if (content.decoderResult().isFailure()) {
                exchange.closeAfter();
            }
            if (last) {
                requestRead();
                if (lingering) {
                    ctx.close();
                    return;
                }
                ProxyCore.Proxied p = proxied;
                if (p != null && !exchange.answered() && !p.needsBody()) {
                    phase = Phase.ANSWER;
                    prepared(core.prepare(p, new byte[0]));
                } else {
                    exchange.maybeNext();
                }
            }
            return;
        }
        if (phase != Phase.BODY) {
            return;
        }
        ProxyCore.Proxied p = proxied;
        if (content.decoderResult().isFailure()) {
            refuse(core.badBody(p));
            return;
        }
        ByteBuf buf = content.content();
        int n = buf.readableBytes();
        if (body.length() + (long) n > core.maxBodyBytes()) {
            refuse(core.tooLarge(p));
            return;
        }
        if (!grant.take(n)) {
            refuse(budget.exhausted(p));
            return;
        }
        if (n > 0) {
            body.add(ctx.alloc(), buf, n, core.maxBodyBytes());
        }
        if (last) {
            requestRead();
            phase = Phase.ANSWER;
            byte[] bytes = body.toArray();
            if (bytes.length < OFFLOAD_BYTES && !(tokenMode && p.kind == ProxyCore.Kind.ROUTED)) {
                prepared(core.prepare(p, bytes));
                return;
            }
            offload(p, bytes);
        }
    }

    /** The body is refused before it was read whole: the answer is written, the rest of the request dropped. */
    private void refuse(Answer a) {
        phase = Phase.DISCARD;
        body.drop();
        exchange.answer(a, true, true);
    }

    /**
     * Extraction (tokenizing, scanning a large body) off the loop, so that the loop's other connections are not
     * kept waiting; the answer is still written on this connection's loop.
     */
    private void offload(ProxyCore.Proxied p, byte[] bytes) {
        ctx.channel().config().setAutoRead(false);
        extracting = true;
        try {
            extraction.execute(() -> {
                ProxyCore.Prepared prepared;
                try {
                    prepared = core.prepare(p, bytes);
                } catch (RuntimeException | Error e) {
                    LOG.error("preparing a request failed", e);
                    prepared = failed();
                }
                ProxyCore.Prepared done = prepared;
                ctx.executor().execute(() -> extracted(done));
            });
        } catch (RejectedExecutionException e) {
            extracting = false;
            p.log.status(503);
            p.log.result("overloaded");
            exchange.answer(
                    Answer.error(503, "overloaded", "the proxy's extraction queue is full; retry shortly")
                            .with("Retry-After", "1"),
                    false,
                    true);
        }
    }

    private static ProxyCore.Prepared failed() {
        return new ProxyCore.Prepared(
                null, Answer.error(500, "internal_error", "the proxy failed to handle the request"));
    }

    /** Back on the loop after an extraction off it: goes on, unless the client left meanwhile. */
    private void extracted(ProxyCore.Prepared prepared) {
        extracting = false;
        if (!ctx.channel().isActive()) {
            exchange.end(-1); // deferred by channelInactive: the exchange never started, so no lease was taken
            return;
        }
        prepared(prepared);
    }

    /**
     * What the core prepared for the request just read goes to the exchange, unless it is still being prepared
     * off the loop (precise mode's tokenize call and lookup): that comes back to this loop as an extraction does.
     */
    private void prepared(ProxyCore.Prepared prepared) {
        if (prepared.later() == null) {
            exchange.prepared(prepared);
            return;
        }
        ctx.channel().config().setAutoRead(false);
        extracting = true;
        prepared.later().whenComplete((done, e) -> {
            ProxyCore.Prepared next = done;
            if (next == null) {
                LOG.error("preparing a request failed", e);
                next = failed();
            }
            ProxyCore.Prepared back = next;
            ctx.executor().execute(() -> extracted(back));
        });
    }

    private void requestRead() {
        requestComplete = true;
        deadlines.requestRead();
    }

    /** True once the request in progress has been read whole (or nothing more of it will come). */
    boolean requestComplete() {
        return requestComplete;
    }

    /** True while the request's body is being prepared off the loop (that hand-back ends the request). */
    boolean preparing() {
        return extracting;
    }

    /** The request was not read whole in time: the connection is closed (a trickle is cut off). */
    void readTimedOut() {
        if (!requestComplete || phase == Phase.HEAD) {
            ctx.close();
        }
    }

    /** True while the client's next requests queued during an answer are within their bound. */
    boolean readsDuringAnswer() {
        return queued.size() < PIPELINED_MESSAGES && queuedBytes < PIPELINED_BYTES;
    }

    /** Releases what the request's body held: its budget grant and its buffers. */
    void release() {
        if (grant != null) {
            grant.close();
            grant = null;
        }
        body.drop();
    }

    /**
     * Starts a lingering close after an answer given before the request was read whole, and returns true; false
     * (the caller closes at once) when the request was read, or the connection cannot shut its output alone.
     * The output is shut (the client reads the answer and then the end of the stream), the rest of the request is
     * read and dropped, and the connection closes when it ends or after {@link #LINGER_MILLIS} at most.
     */
    boolean linger() {
        if (requestComplete
                || phase != Phase.DISCARD
                || !ctx.channel().isActive()
                || !(ctx.channel() instanceof DuplexChannel duplex)) {
            return false;
        }
        lingering = true;
        duplex.shutdownOutput();
        ctx.executor().schedule(() -> ctx.close(), LINGER_MILLIS, TimeUnit.MILLISECONDS);
        ctx.channel().config().setAutoRead(true);
        ctx.read();
        return true;
    }

    /** The answer is complete and the request read: the next request is read, the queued ones first. */
    void next() {
        phase = Phase.HEAD;
        if (!queued.isEmpty()) {
            deadlines.firstByte(); // the next request was read during the answer: its read deadline starts now
        }
        while (!queued.isEmpty() && phase != Phase.ANSWER) {
            Object msg = queued.poll();
            if (msg instanceof HttpContent content) {
                queuedBytes -= content.content().readableBytes();
            }
            try {
                handle(msg);
            } finally {
                ReferenceCountUtil.release(msg);
            }
        }
        if (phase != Phase.ANSWER) {
            ctx.channel().config().setAutoRead(true);
            ctx.read();
        }
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext c, Object evt) {
        if (evt instanceof ChannelInputShutdownEvent) {
            exchange.closeAfter(); // the client sends nothing more: the answer in progress is the last
            if (phase == Phase.HEAD) {
                c.close();
            } else if (phase == Phase.BODY) {
                requestComplete = true; // the body ended before its length or its last chunk
                refuse(core.badBody(proxied));
            } else if (!requestComplete) {
                requestComplete = true; // nothing more of this request will come
                if (exchange.responseComplete()) {
                    c.close();
                }
            } else if (phase == Phase.ANSWER) {
                // the client closed its side while its answer was being produced: it has gone (as nginx
                // reads it); the upstream request is cancelled and the replica's slot freed at once
                c.close();
            }
        }
        c.fireUserEventTriggered(evt);
    }

    @Override
    public void channelInactive(ChannelHandlerContext c) {
        while (!queued.isEmpty()) {
            ReferenceCountUtil.release(queued.poll());
        }
        queuedBytes = 0;
        c.fireChannelInactive();
    }
}
