package dev.cart.proxy.netty;

import dev.cart.proxy.config.ProxyConfig;
import dev.cart.proxy.core.ProxyCore;
import dev.cart.proxy.http.Answer;
import dev.cart.proxy.http.AnswerBudget;
import dev.cart.proxy.http.BodyBudget;
import dev.cart.proxy.http.HeaderList;
import dev.cart.proxy.http.RequestHead;
import dev.cart.proxy.upstream.Forwarder;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.socket.DuplexChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.codec.http.TooLongHttpHeaderException;
import io.netty.handler.codec.http.TooLongHttpLineException;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.ScheduledFuture;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The last handler of a client connection's pipeline: the HTTP exchange with the client. It reads a request's head
 * (parsed by the codec before it) and asks the {@link ProxyCore} for a plan; reads the body, within
 * {@code proxy.max_body_bytes} and the {@link BodyBudget}, into a {@link RequestBody}; has the core prepare the
 * request (off the loop, on the extraction pool, for a large or token-mode body; in precise mode the core may hand
 * back a request still being looked up on its tokenize pool, resumed on the loop the same way); drives the {@link Forwarder}'s
 * steps (a backoff is a timer on the loop; a send is an {@link UpstreamCall}); writes the proxy's own answers; and
 * accounts for the answer bytes queued for the client (its own buffer, the {@link AnswerBudget}) so that the call
 * pauses reading from the replica while they wait. A client's next requests (pipelined) are queued while an answer
 * is produced, within {@link #PIPELINED_MESSAGES} and {@link #PIPELINED_BYTES}, so that a half-close is seen at
 * once; an answer given before the request was read whole ends with a lingering close.
 *
 * <p>Concurrency: every method runs on the connection's event loop, as do its {@link ConnectionDeadlines} and its
 * {@link UpstreamCall}s; the only shared state is the core's (thread-safe), the budgets (atomic) and the
 * extraction pool's hand-back, which comes to the loop through its executor.
 */
// Netty's write, close and schedule calls return futures that a handler rightly ignores: failures arrive as
// channel events (exceptionCaught, channelInactive) or through the listeners added where they matter
@SuppressWarnings("FutureReturnValueIgnored")
final class ClientConnection extends ChannelDuplexHandler implements ConnectionDeadlines.Guarded {

    private static final Logger LOG = LoggerFactory.getLogger(ClientConnection.class);

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

    private static void copy(HeaderList from, HttpHeaders to) {
        from.forEach(to::add);
    }

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

    private final ProxyConfig config;
    private final ProxyCore core;
    private final BodyBudget budget;
    final NettyUpstream upstream;
    /** The connection's deadlines: the first handler of its pipeline. */
    final ConnectionDeadlines deadlines;

    ChannelHandlerContext ctx;
    private Phase phase = Phase.HEAD;
    /**
     * True from a request's head until its answer is complete (or the connection is gone): what a drain waits
     * for. Written on the loop, read by the thread that drains.
     */
    private volatile boolean inRequest;
    /** The client's next requests, read while an answer is produced: handled once it is complete. */
    private final ArrayDeque<Object> queued = new ArrayDeque<>();
    /** The body bytes in {@link #queued}. */
    private int queuedBytes;

    // the request in progress
    private long start;
    private ProxyCore.Plan plan;
    boolean keepAlive;
    private boolean head;
    /**
     * The request's header map as the decoder made it: what the core reads through a {@link NettyHeaders} view, and
     * what a send to a replica is made of (less what does not go upstream), so the front never asks the core for
     * its own type back.
     */
    HttpHeaders requestHeaders;

    private boolean requestComplete;
    private boolean responseComplete;
    boolean closeAfter;
    /** The answer is out and the output shut; the rest of the request is read and dropped until it ends. */
    private boolean lingering;

    int status = -1;
    private BodyBudget.Grant grant;
    /** The request body read so far. */
    final RequestBody body = new RequestBody();

    private Forwarder.Exchange exchange;
    private ScheduledFuture<?> backoff;
    UpstreamCall call;
    /** True while the request's body is being prepared off the loop. */
    private boolean extracting;
    /** Answer bytes queued for the client and not yet written to its socket. */
    private long pending;

    private final boolean tokenMode;
    private final Executor extraction;
    private final AnswerBudget answers;
    /** The names {@link #pruned} removes, gathered first (a Netty map is not edited while it is walked). */
    private final ArrayList<CharSequence> dropped = new ArrayList<>();

    final Consumer<CharSequence> drop = dropped::add;

    ClientConnection(
            ProxyConfig config,
            ProxyCore core,
            BodyBudget budget,
            AnswerBudget answers,
            NettyUpstream upstream,
            Executor extraction) {
        this.config = config;
        this.core = core;
        this.budget = budget;
        this.upstream = upstream;
        this.extraction = extraction;
        this.answers = answers;
        this.tokenMode = config.cache().tokens().on();
        this.deadlines = new ConnectionDeadlines(config.server());
        deadlines.guard(this);
    }

    @Override
    public void handlerAdded(ChannelHandlerContext c) {
        this.ctx = c;
    }

    @Override
    public void channelActive(ChannelHandlerContext c) {
        deadlines.idle();
        c.fireChannelActive();
    }

    /** The request was not read whole in time: the connection is closed (a trickle is cut off). */
    @Override
    public void readTimedOut() {
        if (!requestComplete || phase == Phase.HEAD) {
            ctx.close();
        }
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
            head(req);
        }
        if (msg instanceof HttpContent content) {
            content(content);
        }
    }

    private void head(HttpRequest req) {
        inRequest = true;
        start = System.nanoTime();
        requestComplete = false;
        responseComplete = false;
        closeAfter = false;
        status = -1;
        keepAlive = HttpUtil.isKeepAlive(req);
        head = HttpMethod.HEAD.equals(req.method());
        if (req.decoderResult().isFailure()) {
            Throwable cause = req.decoderResult().cause();
            Answer a;
            String rejected = null;
            if (cause instanceof TooLongHttpLineException) {
                rejected = "request_line";
                a = ProxyCore.uriTooLong(config.server());
            } else if (cause instanceof TooLongHttpHeaderException) {
                rejected = "headers";
                a = ProxyCore.headersTooLarge(config.server());
            } else {
                a = Answer.error(400, "invalid_request", "the request is not valid HTTP/1.1");
            }
            core.refusedHead(rejected, a.status(), start);
            phase = Phase.DISCARD;
            writeAnswer(a, true, false);
            return;
        }
        URI uri;
        try {
            uri = new URI(req.uri());
        } catch (URISyntaxException e) {
            Answer a = Answer.error(400, "invalid_request_target", "the request target is not a valid URI");
            core.refusedHead(null, 400, start);
            phase = Phase.DISCARD;
            writeAnswer(a, true, false);
            return;
        }
        String method = req.method().name();
        requestHeaders = req.headers();
        RequestHead rh = new RequestHead(
                method,
                uri.getRawPath(),
                uri.getRawQuery(),
                uri.getPath(),
                NettyHeaders.view(requestHeaders),
                method.length()
                        + req.uri().length()
                        + req.protocolVersion().text().length()
                        + 2);
        plan = core.plan(rh);
        if (plan instanceof ProxyCore.Own own) {
            phase = Phase.DISCARD;
            // an answer before a body the client waits to send (Expect: 100-continue) ends the connection
            writeAnswer(own.answer(), HttpUtil.is100ContinueExpected(req), true);
            return;
        }
        ProxyCore.Proxied p = (ProxyCore.Proxied) plan;
        grant = budget.grant();
        if (!p.needsBody()) {
            phase = Phase.DISCARD;
            return; // the exchange starts once the request has been read
        }
        long declared = HttpUtil.getContentLength(req, -1L);
        if (declared > core.maxBodyBytes()) {
            phase = Phase.DISCARD;
            writeAnswer(core.tooLarge(p), true, true);
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
                closeAfter = true;
            }
            if (last) {
                requestRead();
                if (lingering) {
                    ctx.close();
                    return;
                }
                if (plan instanceof ProxyCore.Proxied p && status == -1 && !p.needsBody()) {
                    phase = Phase.ANSWER;
                    ProxyCore.Prepared prepared = core.prepare(p, new byte[0]);
                    if (prepared.answer() != null) {
                        writeAnswer(prepared.answer(), false, true);
                    } else if (prepared.pending() != null) {
                        // written on this connection's loop once every replica has answered
                        prepared.pending().thenAccept(a -> ctx.executor().execute(() -> writeAnswer(a, false, true)));
                    } else {
                        drive(prepared.exchange().next(), prepared.exchange());
                    }
                } else {
                    maybeNext();
                }
            }
            return;
        }
        if (phase != Phase.BODY) {
            return;
        }
        ProxyCore.Proxied p = (ProxyCore.Proxied) plan;
        if (content.decoderResult().isFailure()) {
            phase = Phase.DISCARD;
            body.drop();
            writeAnswer(core.badBody(p), true, true);
            return;
        }
        ByteBuf buf = content.content();
        int n = buf.readableBytes();
        if (body.length() + (long) n > core.maxBodyBytes()) {
            phase = Phase.DISCARD;
            body.drop();
            writeAnswer(core.tooLarge(p), true, true);
            return;
        }
        if (!grant.take(n)) {
            phase = Phase.DISCARD;
            body.drop();
            writeAnswer(budget.exhausted(p), true, true);
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
            // extraction (tokenizing, scanning a large body) off the loop, so that the loop's other
            // connections are not kept waiting; the answer is still written on this connection's loop
            ctx.channel().config().setAutoRead(false);
            extracting = true;
            try {
                extraction.execute(() -> {
                    ProxyCore.Prepared prepared;
                    try {
                        prepared = core.prepare(p, bytes);
                    } catch (RuntimeException | Error e) {
                        LOG.error("preparing a request failed", e);
                        prepared = new ProxyCore.Prepared(
                                null, Answer.error(500, "internal_error", "the proxy failed to handle the request"));
                    }
                    ProxyCore.Prepared done = prepared;
                    ctx.executor().execute(() -> extracted(done));
                });
            } catch (java.util.concurrent.RejectedExecutionException e) {
                extracting = false;
                p.log.status(503);
                p.log.result("overloaded");
                writeAnswer(
                        Answer.error(503, "overloaded", "the proxy's extraction queue is full; retry shortly")
                                .with("Retry-After", "1"),
                        false,
                        true);
            }
        }
    }

    /** Back on the loop after an extraction off it: goes on, unless the client left meanwhile. */
    private void extracted(ProxyCore.Prepared prepared) {
        extracting = false;
        if (!ctx.channel().isActive()) {
            end(-1); // deferred by channelInactive: the exchange never started, so no lease was taken
            return;
        }
        prepared(prepared);
    }

    /**
     * What the core prepared for the request just read: its answer, the exchange to drive, or an exchange still
     * being prepared off the loop (precise mode's tokenize call and lookup), which comes back to this loop as an
     * extraction does.
     */
    private void prepared(ProxyCore.Prepared prepared) {
        if (prepared.later() != null) {
            ctx.channel().config().setAutoRead(false);
            extracting = true;
            prepared.later().whenComplete((done, e) -> {
                ProxyCore.Prepared next = done;
                if (next == null) {
                    LOG.error("preparing a request failed", e);
                    next = new ProxyCore.Prepared(
                            null, Answer.error(500, "internal_error", "the proxy failed to handle the request"));
                }
                ProxyCore.Prepared back = next;
                ctx.executor().execute(() -> extracted(back));
            });
            return;
        }
        if (prepared.answer() != null) {
            writeAnswer(prepared.answer(), false, true);
        } else {
            drive(prepared.exchange().next(), prepared.exchange());
        }
    }

    /**
     * {@code map} less every line of each name in {@link #dropped}, which is emptied: a decoded message's
     * header map made into the head of the message the front sends next.
     */
    HttpHeaders pruned(HttpHeaders map) {
        for (int i = 0; i < dropped.size(); i++) {
            map.remove(dropped.get(i));
        }
        dropped.clear();
        return map;
    }

    private void requestRead() {
        requestComplete = true;
        deadlines.requestRead();
    }

    // ---- answers

    /**
     * Writes one of the proxy's own answers, whole. {@code close} ends the connection after it; a
     * {@code finish} answer ends the request (releases its slot and counts it).
     */
    private void writeAnswer(Answer a, boolean close, boolean finish) {
        ByteBuf content = head ? Unpooled.EMPTY_BUFFER : Unpooled.wrappedBuffer(a.body());
        FullHttpResponse r =
                new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.valueOf(a.status()), content);
        copy(a.headers(), r.headers());
        HttpUtil.setContentLength(r, a.body().length);
        closeAfter |= close || a.closeConnection() || !keepAlive;
        if (closeAfter) {
            r.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        }
        status = a.status();
        ctx.writeAndFlush(r).addListener((ChannelFutureListener) f -> responseDone(finish));
    }

    /** The answer is written (or failed to be): the request ends; the next one may start. */
    void responseDone(boolean finish) {
        responseComplete = true;
        if (finish) {
            end(status);
        }
        if (closeAfter || !ctx.channel().isActive()) {
            closeLingering();
            return;
        }
        maybeNext();
    }

    /**
     * Closes the connection after an answer. When the client is still sending the request (the proxy answered
     * before reading its whole body: too large, malformed, no budget), closing at once would reset the
     * connection with the client's bytes unread, and a client still writing would see the reset instead of the
     * answer. So, as nginx's lingering close does, the proxy shuts its output (the client reads the answer and
     * then the end of the stream), reads and drops the rest of the request, and closes when it ends or after
     * {@link #LINGER_MILLIS} at most.
     */
    private void closeLingering() {
        if (requestComplete
                || phase != Phase.DISCARD
                || !ctx.channel().isActive()
                || !(ctx.channel() instanceof DuplexChannel duplex)) {
            ctx.close();
            return;
        }
        lingering = true;
        duplex.shutdownOutput();
        ctx.executor().schedule(() -> ctx.close(), LINGER_MILLIS, TimeUnit.MILLISECONDS);
        ctx.channel().config().setAutoRead(true);
        ctx.read();
    }

    /** Releases what the request held and counts it (once). */
    private void end(int finalStatus) {
        if (grant != null) {
            grant.close();
            grant = null;
        }
        body.drop();
        if (plan != null) {
            core.finished(plan, finalStatus, start);
            plan = null;
        }
    }

    private void maybeNext() {
        if (!requestComplete || !responseComplete || !ctx.channel().isActive()) {
            return;
        }
        phase = Phase.HEAD;
        inRequest = false;
        exchange = null;
        call = null;
        deadlines.idle();
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

    // ---- the exchange

    void drive(Forwarder.Step step, Forwarder.Exchange x) {
        exchange = x;
        if (!ctx.channel().isActive()) {
            return;
        }
        // the next request waits for this answer; the client is still read (a bounded queue of what it sends
        // next) so that its half-close, meaning it has gone, is seen while the answer is produced
        ctx.channel().config().setAutoRead(readsDuringAnswer());
        if (step instanceof Forwarder.Reply r) {
            writeAnswer(r.answer(), false, true);
        } else if (step instanceof Forwarder.Wait w) {
            backoff = ctx.executor()
                    .schedule(
                            () -> {
                                backoff = null;
                                drive(x.next(), x);
                            },
                            w.pause().toNanos(),
                            TimeUnit.NANOSECONDS);
        } else if (step instanceof Forwarder.Send s) {
            call = new UpstreamCall(this, x, s, false);
            call.start();
        } else if (step instanceof Forwarder.Queued q) {
            // waits in the admission queue, holding no thread: its outcome comes back on this loop
            q.ticket().whenCompleteAsync((r, e) -> dequeued(x, r, e), ctx.executor());
        } else {
            throw new IllegalStateException("a relay comes from an answer: " + step);
        }
    }

    /** Back on the loop when a request's wait in the admission queue ended: goes on, unless the client left. */
    private void dequeued(Forwarder.Exchange x, dev.cart.flow.FlowResult r, Throwable e) {
        Forwarder.Step next = x.dequeued(r, e, ctx.channel().isActive());
        if (next != null) {
            drive(next, x);
        }
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext c, Object evt) {
        if (evt instanceof io.netty.channel.socket.ChannelInputShutdownEvent) {
            closeAfter = true; // the client sends nothing more: the answer in progress is the last
            if (phase == Phase.HEAD) {
                c.close();
            } else if (phase == Phase.BODY) {
                phase = Phase.DISCARD; // the body ended before its length or its last chunk
                body.drop();
                requestComplete = true;
                writeAnswer(core.badBody((ProxyCore.Proxied) plan), true, true);
            } else if (!requestComplete) {
                requestComplete = true; // nothing more of this request will come
                if (responseComplete) {
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
    public void channelWritabilityChanged(ChannelHandlerContext c) {
        resumeUpstream();
        c.fireChannelWritabilityChanged();
    }

    /** True while the client's next requests queued during an answer are within their bound. */
    private boolean readsDuringAnswer() {
        return queued.size() < PIPELINED_MESSAGES && queuedBytes < PIPELINED_BYTES;
    }

    /** {@code n} answer bytes queued for the client: counted here and in the {@link AnswerBudget}. */
    void queued(int n) {
        pending += n;
        answers.add(n);
    }

    /** {@code n} queued answer bytes have gone to the client's socket (or were dropped with it). */
    void written(int n) {
        pending -= n;
        answers.add(-n);
        if (pending == 0) {
            resumeUpstream();
        }
    }

    /**
     * True when reading from the replica must pause: the client connection's own buffer is full, or the
     * total of all connections' is and this client has not taken what waits for it.
     */
    boolean mustPause() {
        return !ctx.channel().isWritable() || (pending > 0 && answers.over());
    }

    /** Reads from the replica again, if an answer is being relayed and nothing says to wait. */
    private void resumeUpstream() {
        UpstreamCall current = call;
        if (current != null && current.ch != null && !current.finished && !mustPause()) {
            current.ch.config().setAutoRead(true);
            current.ch.read();
        }
    }

    @Override
    public void channelInactive(ChannelHandlerContext c) {
        deadlines.cancelAll();
        ConnectionDeadlines.cancel(backoff);
        UpstreamCall current = call;
        if (current != null && !current.finished) {
            current.clientGone();
        } else if (backoff != null && exchange != null) {
            exchange.clientGone(null);
        } else if (exchange != null && exchange.queued()) {
            exchange.clientGone(null); // out of the admission queue at once
        }
        while (!queued.isEmpty()) {
            ReferenceCountUtil.release(queued.poll());
        }
        queuedBytes = 0;
        if (!extracting) { // else ended when the extraction is back (it holds the request's state)
            end(responseComplete ? status : -1);
        }
        inRequest = false;
        c.fireChannelInactive();
    }

    /** True while a request is read or answered on this connection (see {@link #inRequest}); any thread. */
    boolean inRequest() {
        return inRequest;
    }

    /**
     * The drain's deadline has come (on the loop): the connection is closed. A request still in progress ends
     * with the decision-line result {@code drain_cut}; a stream being relayed gets the error event that says so
     * first ({@link UpstreamCall#drainCut}). An idle connection is simply closed.
     */
    void cutForDrain(String message) {
        if (!ctx.channel().isActive()) {
            return;
        }
        UpstreamCall current = call;
        if (inRequest && current != null && !current.finished) {
            current.drainCut(message);
            return;
        }
        if (inRequest && backoff != null && exchange != null) {
            ConnectionDeadlines.cancel(backoff);
            backoff = null;
            exchange.clientGone(null);
        }
        if (inRequest && !responseComplete && plan instanceof ProxyCore.Proxied p) {
            p.log.result("drain_cut");
        }
        ctx.close();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext c, Throwable cause) {
        LOG.debug("client connection failed: {}", cause.toString());
        c.close();
    }

    @Override
    public UpstreamCall currentCall() {
        return call;
    }
}
