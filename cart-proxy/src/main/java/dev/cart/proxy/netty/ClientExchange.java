package dev.cart.proxy.netty;

import dev.cart.proxy.config.ProxyConfig;
import dev.cart.proxy.core.ProxyCore;
import dev.cart.proxy.http.Answer;
import dev.cart.proxy.http.AnswerBudget;
import dev.cart.proxy.http.HeaderList;
import dev.cart.proxy.http.RequestHead;
import dev.cart.proxy.upstream.Forwarder;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.TooLongHttpHeaderException;
import io.netty.handler.codec.http.TooLongHttpLineException;
import io.netty.util.concurrent.ScheduledFuture;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.ArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The last handler of a client connection's pipeline: the HTTP exchange with the client. The {@link BodyIntake}
 * before it hands it each request head, which it has the {@link ProxyCore} plan (answering the proxy's own
 * endpoints and what the head's limits refuse, or telling the intake to read a proxied request's body), and then
 * the request the core prepared; it drives the {@link Forwarder}'s steps (a backoff is a timer on the loop; a send
 * is an {@link UpstreamCall}; a wait in the admission queue comes back on the loop); writes the proxy's own
 * answers; its {@link AnswerRelay} writes a relayed answer and accounts for the answer bytes queued for the client
 * (its own buffer, the {@link AnswerBudget}) so that the call pauses reading from the replica while they wait. An answer given before the request was read
 * whole ends with a lingering close ({@link BodyIntake#linger}).
 *
 * <p>Concurrency: every method runs on the connection's event loop, as do its {@link BodyIntake}, its
 * {@link ConnectionDeadlines} and its {@link UpstreamCall}s; the only shared state is the core's (thread-safe),
 * the budgets (atomic) and {@link #inRequest}, which a drain reads from another thread.
 */
// Netty's write, close and schedule calls return futures that a handler rightly ignores: failures arrive as
// channel events (exceptionCaught, channelInactive) or through the listeners added where they matter
@SuppressWarnings("FutureReturnValueIgnored")
final class ClientExchange extends ChannelDuplexHandler implements ConnectionDeadlines.Guarded {

    private static final Logger LOG = LoggerFactory.getLogger(ClientExchange.class);

    private static void copy(HeaderList from, HttpHeaders to) {
        from.forEach(to::add);
    }

    private final ProxyConfig config;
    private final ProxyCore core;
    final NettyUpstream upstream;
    /** The connection's deadlines: the first handler of its pipeline. */
    final ConnectionDeadlines deadlines;
    /** The request's read: the handler before this one. */
    private final BodyIntake intake;
    /** The request body, read by the {@link #intake}; its first send takes its buffers. */
    final RequestBody body;

    ChannelHandlerContext ctx;
    /**
     * True from a request's head until its answer is complete (or the connection is gone): what a drain waits
     * for. Written on the loop, read by the thread that drains.
     */
    private volatile boolean inRequest;

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

    private boolean responseComplete;
    boolean closeAfter;

    int status = -1;

    private Forwarder.Exchange exchange;
    private ScheduledFuture<?> backoff;
    UpstreamCall call;
    /** The write side of the answers this connection relays, and the answer bytes queued for the client. */
    final AnswerRelay relayed;
    /** The names {@link #pruned} removes, gathered first (a Netty map is not edited while it is walked). */
    private final ArrayList<CharSequence> dropped = new ArrayList<>();

    final Consumer<CharSequence> drop = dropped::add;

    /** The exchange of a connection whose requests {@code intake} reads, within {@code deadlines}. */
    ClientExchange(
            ProxyConfig config,
            ProxyCore core,
            AnswerBudget answers,
            NettyUpstream upstream,
            ConnectionDeadlines deadlines,
            BodyIntake intake) {
        this.config = config;
        this.core = core;
        this.upstream = upstream;
        this.relayed = new AnswerRelay(this, answers);
        this.deadlines = deadlines;
        this.intake = intake;
        this.body = intake.body;
        deadlines.guard(this);
        intake.feed(this);
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
        intake.readTimedOut();
    }

    /** A request's head, from the {@link BodyIntake}: planned, answered or its body asked for. */
    void head(HttpRequest req) {
        inRequest = true;
        start = System.nanoTime();
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
            intake.discard();
            answer(a, true, false);
            return;
        }
        String target = req.uri();
        String rawPath;
        String rawQuery;
        String path;
        if (plainPath(target)) { // the usual target: what URI would parse it into, without parsing it
            rawPath = target;
            rawQuery = null;
            path = target;
        } else {
            URI uri;
            try {
                uri = new URI(target);
            } catch (URISyntaxException e) {
                Answer a = Answer.error(400, "invalid_request_target", "the request target is not a valid URI");
                core.refusedHead(null, 400, start);
                intake.discard();
                answer(a, true, false);
                return;
            }
            rawPath = uri.getRawPath();
            rawQuery = uri.getRawQuery();
            path = uri.getPath();
        }
        String method = req.method().name();
        requestHeaders = req.headers();
        RequestHead rh = new RequestHead(
                method,
                rawPath,
                rawQuery,
                path,
                NettyHeaders.view(requestHeaders),
                method.length()
                        + req.uri().length()
                        + req.protocolVersion().text().length()
                        + 2);
        plan = core.plan(rh);
        if (plan instanceof ProxyCore.Proxied p) {
            intake.expect(p, req);
        } else if (plan instanceof ProxyCore.Own own) { // the plan is one or the other (a sealed type)
            intake.discard();
            // an answer before a body the client waits to send (Expect: 100-continue) ends the connection
            answer(own.answer(), HttpUtil.is100ContinueExpected(req), true);
        }
    }

    /**
     * True for a request target that is a plain absolute path: a {@code /} not followed by another (which would
     * start an authority), then only letters, digits and {@code /-._~} (no query, fragment, percent-escape or
     * character {@link URI} refuses). {@link URI} parses such a target into itself as the raw and the decoded
     * path and no query, which the caller takes without parsing it.
     */
    static boolean plainPath(String target) {
        int n = target.length();
        if (n == 0 || target.charAt(0) != '/' || (n > 1 && target.charAt(1) == '/')) {
            return false;
        }
        for (int i = 1; i < n; i++) {
            char c = target.charAt(i);
            if (!((c >= 'a' && c <= 'z')
                    || (c >= 'A' && c <= 'Z')
                    || (c >= '0' && c <= '9')
                    || c == '/'
                    || c == '-'
                    || c == '.'
                    || c == '_'
                    || c == '~')) {
                return false;
            }
        }
        return true;
    }

    /**
     * What the core prepared for the request just read (never one still being prepared): its answer, an answer
     * still being made (written on this loop once made), or the exchange to drive.
     */
    void prepared(ProxyCore.Prepared prepared) {
        if (prepared.answer() != null) {
            answer(prepared.answer(), false, true);
        } else if (prepared.pending() != null) {
            // written on this connection's loop once every replica has answered
            prepared.pending().thenAccept(a -> ctx.executor().execute(() -> answer(a, false, true)));
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

    /** The answer in progress is the connection's last. */
    void closeAfter() {
        closeAfter = true;
    }

    /** True once the request in progress has an answer (its status is set). */
    boolean answered() {
        return status != -1;
    }

    /** True once the answer in progress has been written whole (or failed to be). */
    boolean responseComplete() {
        return responseComplete;
    }

    // ---- answers

    /**
     * Writes one of the proxy's own answers, whole. {@code close} ends the connection after it; a
     * {@code finish} answer ends the request (releases its slot and counts it).
     */
    void answer(Answer a, boolean close, boolean finish) {
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
            // an answer given before the whole request was read closes lingering (see BodyIntake#linger)
            if (!intake.linger()) {
                ctx.close();
            }
            return;
        }
        maybeNext();
    }

    /** Releases what the request held and counts it (once). */
    void end(int finalStatus) {
        intake.release();
        if (plan != null) {
            core.finished(plan, finalStatus, start);
            plan = null;
        }
    }

    /** Once the request is read and its answer complete, the connection goes on to its next request. */
    void maybeNext() {
        if (!intake.requestComplete() || !responseComplete || !ctx.channel().isActive()) {
            return;
        }
        inRequest = false;
        exchange = null;
        call = null;
        deadlines.idle();
        intake.next();
    }

    // ---- the exchange

    void drive(Forwarder.Step step, Forwarder.Exchange x) {
        exchange = x;
        if (!ctx.channel().isActive()) {
            return;
        }
        // the next request waits for this answer; the client is still read (a bounded queue of what it sends
        // next) so that its half-close, meaning it has gone, is seen while the answer is produced
        ctx.channel().config().setAutoRead(intake.readsDuringAnswer());
        if (step instanceof Forwarder.Reply r) {
            answer(r.answer(), false, true);
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
    public void channelWritabilityChanged(ChannelHandlerContext c) {
        resumeUpstream();
        c.fireChannelWritabilityChanged();
    }

    /** Reads from the replica again, if an answer is being relayed and nothing says to wait. */
    void resumeUpstream() {
        UpstreamCall current = call;
        if (current != null && current.ch != null && !current.finished && !relayed.mustPause()) {
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
        if (!intake.preparing()) { // else ended when the extraction is back (it holds the request's state)
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
