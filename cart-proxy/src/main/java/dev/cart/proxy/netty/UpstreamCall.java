package dev.cart.proxy.netty;

import dev.cart.extract.Endpoint;
import dev.cart.proxy.http.ApiErrors;
import dev.cart.proxy.http.HopByHop;
import dev.cart.proxy.upstream.ConnectFailure;
import dev.cart.proxy.upstream.Forwarder;
import dev.cart.proxy.upstream.Relay;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.EmptyHttpHeaders;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import java.io.IOException;

/**
 * One send to a replica and, if its answer is relayed, the relay's upstream side: the upstream connection's events
 * arrive here ({@link NettyUpstream.Listener}) on the client connection's loop. The request goes out from the
 * client's own header map less what does not go upstream (no copy) and, on its first send, from the body's own
 * buffers; a failure before the answer's head (connect, a stale pooled connection, no answer in time, an invalid
 * answer) goes back to the {@link Forwarder} as a step; the answer's head, if relayed, and its chunks go to the
 * connection's {@link AnswerRelay}, which writes them to the client and says when reading from the replica must
 * pause. Loop-confined, as the connection's state.
 */
// Netty's write, close and schedule calls return futures that a handler rightly ignores: failures arrive as
// channel events (exceptionCaught, channelInactive) or through the listeners added where they matter
@SuppressWarnings("FutureReturnValueIgnored")
final class UpstreamCall implements NettyUpstream.Listener {

    private final ClientExchange conn;
    final Forwarder.Exchange x;
    final Forwarder.Send s;
    final boolean fresh;
    final String host;
    final int port;
    /** {@code host:port}: the upstream pool's key, and the Host header when the target names a port. */
    final String poolKey;

    Channel ch;
    boolean reused;
    boolean unsent;
    boolean headSeen;
    boolean upstreamKeepAlive;
    boolean discarding;
    boolean finished;
    Relay relay;
    Throwable cause;
    /** The exchange's deadline ({@link System#nanoTime}), checked by the connection's call check. */
    long due;

    UpstreamCall(ClientExchange conn, Forwarder.Exchange x, Forwarder.Send s, boolean fresh) {
        this.conn = conn;
        this.x = x;
        this.s = s;
        this.fresh = fresh;
        this.host = s.target.getHost();
        this.port = s.target.getPort() < 0 ? 80 : s.target.getPort();
        this.poolKey = NettyUpstream.key(host, port);
    }

    void start() {
        due = x.deadline();
        conn.deadlines.callDue(due);
        NettyUpstream.Lease lease =
                fresh ? null : conn.upstream.pooled(conn.ctx.channel().eventLoop(), poolKey, this);
        if (lease != null) {
            ch = lease.channel();
            reused = true;
            write();
            return;
        }
        ChannelFuture f = conn.upstream.connect(conn.ctx.channel().eventLoop(), host, port, this);
        ch = f.channel();
        f.addListener((ChannelFutureListener) cf -> {
            if (finished) {
                cf.channel().close();
            } else if (!cf.isSuccess()) {
                finish();
                conn.drive(x.failed(s, Forwarder.Failure.CONNECT, ConnectFailure.describe(cf.cause())), x);
            } else {
                write();
            }
        });
    }

    private void write() {
        Forwarder.Inbound in = x.in;
        boolean isHead = "HEAD".equalsIgnoreCase(in.method());
        NettyUpstream.expectHead(ch, isHead);
        String target = s.target.getRawPath() == null || s.target.getRawPath().isEmpty() ? "/" : s.target.getRawPath();
        if (s.target.getRawQuery() != null) {
            target += "?" + s.target.getRawQuery();
        }
        int length = in.body().length;
        ByteBuf content = length == 0 ? Unpooled.EMPTY_BUFFER : conn.body.take(length);
        // the client's own map (ClientExchange.requestHeaders, whose view the core read), its names and
        // values validated by the decoder as it read them, less what does not go upstream: no copy.
        // Nothing reads the client's headers after a send, and a retry's send finds the same map, its own
        // Host and Content-Length among what is dropped again
        HopByHop.forEachDroppedRequestName(s.headers, conn.drop);
        HttpHeaders h = conn.pruned(conn.requestHeaders);
        // Host and Content-Length were dropped above, so adding them sets them; with a port, the Host
        // header is host:port, which the pool key already is
        h.add(HttpHeaderNames.HOST, s.target.getPort() < 0 ? host : poolKey);
        if (in.hasBody()) {
            h.add(HttpHeaderNames.CONTENT_LENGTH, Integer.toString(length));
        }
        FullHttpRequest req = new DefaultFullHttpRequest(
                HttpVersion.HTTP_1_1,
                HttpMethod.valueOf(in.method()),
                target,
                content != null ? content : Unpooled.wrappedBuffer(in.body()),
                h,
                EmptyHttpHeaders.INSTANCE);
        ch.writeAndFlush(req).addListener((ChannelFutureListener) wf -> {
            if (!wf.isSuccess()) {
                unsent = true; // nothing of the request reached the replica
                cause = wf.cause();
                wf.channel().close();
            }
        });
    }

    private void finish() {
        finished = true; // the call check, when it fires, finds it finished and stops
        if (relay != null) { // an answer that ended otherwise (broken, deadline, client gone): dropped with it
            conn.relayed.dropHeld();
        }
    }

    @Override
    public void read(Object msg) {
        try {
            if (finished && !discarding) {
                return;
            }
            if (msg instanceof HttpResponse r) {
                answerHead(r);
            }
            if (msg instanceof HttpContent c) {
                answerContent(c);
            }
        } finally {
            ReferenceCountUtil.release(msg);
        }
    }

    private void answerHead(HttpResponse r) {
        if (r.decoderResult().isFailure()) {
            finish();
            ch.close();
            conn.drive(
                    x.failed(
                            s,
                            Forwarder.Failure.INVALID,
                            Forwarder.describe(r.decoderResult().cause())),
                    x);
            return;
        }
        int code = r.status().code();
        if (code >= 100 && code < 200 && code != 101) {
            return; // an interim answer: the final one follows
        }
        headSeen = true;
        upstreamKeepAlive = HttpUtil.isKeepAlive(r);
        Forwarder.Step step = x.answered(s, code, NettyHeaders.view(r.headers()));
        if (step instanceof Relay rl) {
            relay = rl;
            conn.relayed.head(rl, r.headers());
            return;
        }
        // not relayed: the rest of this answer is read and dropped, then the connection is reused
        finish();
        discarding = true;
        conn.drive(step, x);
    }

    private void answerContent(HttpContent c) {
        boolean last = c instanceof LastHttpContent;
        if (discarding) {
            if (last) {
                discarding = false;
                releaseUpstream();
            }
            return;
        }
        Relay rl = relay;
        if (rl == null) {
            return;
        }
        if (c.decoderResult().isFailure()) {
            broke(c.decoderResult().cause());
            return;
        }
        ByteBuf buf = c.content();
        int n = buf.readableBytes();
        rl.firstByte();
        AnswerRelay out = conn.relayed;
        if (n > 0) {
            out.observe(rl, buf, n);
        }
        if (last) {
            rl.upstreamDone(); // the replica's slot is free before the client has the last bytes
            ByteBuf tail = out.lastContent(buf, n);
            finish();
            releaseUpstream();
            out.writeLast(tail, rl);
            return;
        }
        if (n > 0) {
            out.chunk(buf, n);
        }
        if (out.mustPause()) {
            ch.config().setAutoRead(false); // the client reads slower than the replica writes
        }
    }

    private void releaseUpstream() {
        if (upstreamKeepAlive && ch.isActive()) {
            conn.upstream.release(ch, poolKey);
        } else {
            ch.close();
        }
    }

    @Override
    public void readComplete() {
        if (relay != null && !finished) {
            conn.relayed.writeHeld();
            conn.ctx.flush();
        }
    }

    @Override
    public void exception(Throwable t) {
        cause = t;
    }

    @Override
    public void inactive() {
        if (discarding) {
            discarding = false; // the dropped answer ended with its connection
            return;
        }
        if (finished) {
            return;
        }
        if (!headSeen) {
            finish();
            if (x.resendStale(s, reused, unsent)) {
                conn.call = new UpstreamCall(conn, x, s, true);
                conn.call.start();
                return;
            }
            String why =
                    cause == null ? "the replica closed the connection without answering" : Forwarder.describe(cause);
            conn.drive(x.failed(s, Forwarder.Failure.IO, why), x);
            return;
        }
        broke(cause == null ? new IOException("the replica closed the connection mid-answer") : cause);
    }

    /**
     * The replica's answer broke after it started: the client connection is dropped, never framed complete; a
     * stream first gets the error event that says it was cut ({@link #cutStream}).
     */
    private void broke(Throwable t) {
        relay.upstreamBroke(t);
        cutStream(
                "upstream_cut",
                "the replica " + s.replica.id() + " closed the connection in the middle of the stream; "
                        + "the answer is incomplete");
        ch.close();
    }

    /**
     * The proxy is stopping and {@code server.drain_timeout_ms} has passed with this call in progress: the
     * upstream side is cancelled, the decision line says {@code drain_cut}, and a stream being relayed ends
     * with an error event saying why ({@code message}) before the client connection is closed.
     */
    void drainCut(String message) {
        if (relay != null) {
            relay.drainCut();
        } else {
            x.clientGone(s);
            x.log.result("drain_cut");
        }
        cutStream("drain_cut", message);
        if (ch != null) {
            ch.close();
        }
    }

    /**
     * Ends a relayed answer that was cut short and closes the client connection without the body's last chunk,
     * so the answer reads as incomplete. A server-sent event stream is first given what this read brought and
     * then an error event in the shape of its API ({@link ApiErrors#streamEvent}), preceded by the line ends
     * that finish an event the replica left half-written, so that an SDK iterating the stream raises an error
     * instead of ending as if the answer were whole.
     */
    private void cutStream(String code, String message) {
        Relay rl = relay;
        if (rl == null || !rl.sse || rl.noBody || !conn.ctx.channel().isActive()) {
            finish();
            conn.ctx.close();
            return;
        }
        conn.relayed.writeHeld();
        finish();
        conn.relayed.cutEvent(ApiErrors.streamEvent(x.in.endpoint() == Endpoint.MESSAGES, code, message));
    }

    void deadline() {
        if (finished) {
            return;
        }
        finish();
        if (relay == null) {
            ch.close();
            conn.drive(x.failed(s, Forwarder.Failure.TIMEOUT, "no answer in time"), x);
        } else {
            relay.deadline();
            relay.upstreamBroke(new IOException("proxy.request_timeout_secs ended the answer"));
            ch.close();
            conn.ctx.close();
        }
    }

    /** The client went away: the upstream side is cancelled. */
    void clientGone() {
        finish();
        if (relay != null) {
            relay.clientGone();
        } else {
            x.clientGone(s);
        }
        if (ch != null) {
            ch.close();
        }
    }
}
