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
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.EmptyHttpHeaders;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.FastThreadLocal;
import java.io.IOException;
import java.nio.charset.StandardCharsets;

/**
 * One send to a replica and, if its answer is relayed, the relay: the upstream connection's events arrive here
 * ({@link NettyUpstream.Listener}) on the client connection's loop. The request goes out from the client's own
 * header map less what does not go upstream (no copy) and, on its first send, from the body's own buffers; the
 * answer's head is the replica's header map less what does not go to the client, and its body is written chunk by
 * chunk, the small chunks of one read gathered into one, with backpressure through the {@link ClientConnection}
 * (its own buffer and the answer budget). Loop-confined, as the connection's state.
 */
// Netty's write, close and schedule calls return futures that a handler rightly ignores: failures arrive as
// channel events (exceptionCaught, channelInactive) or through the listeners added where they matter
@SuppressWarnings("FutureReturnValueIgnored")
final class UpstreamCall implements NettyUpstream.Listener {

    /**
     * Where an answer's bytes are copied out of Netty's (direct) buffers for the relay's observer, one per event
     * loop: the observer keeps nothing of the array it is handed, so a loop reuses one array for every chunk of
     * every answer instead of allocating one per chunk, and an idle stream holds none.
     */
    private static final int OBSERVE_SLICE_BYTES = 8 * 1024;

    private static final FastThreadLocal<byte[]> OBSERVE_SLICE = new FastThreadLocal<>() {
        @Override
        protected byte[] initialValue() {
            return new byte[OBSERVE_SLICE_BYTES];
        }
    };

    /**
     * The chunks of an answer that arrive in one read from the replica are written to the client as one chunk
     * while together they are at most this size; larger ones go out as they came, uncopied.
     */
    static final int GATHER_BYTES = 8 * 1024;

    private final ClientConnection conn;
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
    /**
     * What the current read from the replica brought and is not yet written to the client. The chunks of one
     * read go out with no promise of their own but the last, which carries the promise and the one listener
     * that accounts for the whole read ({@link #readBytes}), at the read's end: a promise, a listener and a
     * hand-off to the answer budget per read instead of per chunk (a replica writes each event of a stream as
     * a chunk of its own). Small chunks of one read are also gathered into one ({@link #gathered}): the
     * client gets one chunk of HTTP framing where the replica wrote several, so the encoder makes one chunk
     * header and the socket one write entry for them instead of three entries per event.
     */
    HttpContent held;
    /** True when {@link #held}'s buffer is the connection's own gathering buffer, not the replica's. */
    boolean gathered;
    /** Answer bytes of the current read (the held chunk's included), not yet counted as queued. */
    int readBytes;
    /**
     * The last two bytes of a streamed answer relayed so far (older in the high byte), as if it began after a
     * blank line: where an error event that ends a cut stream must start ({@link #cutStream}).
     */
    private int lastTwo = ('\n' << 8) | '\n';

    UpstreamCall(ClientConnection conn, Forwarder.Exchange x, Forwarder.Send s, boolean fresh) {
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
        // the client's own map (ClientConnection.requestHeaders, whose view the core read), its names and
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
        if (held != null) { // the answer ended otherwise (broken, deadline, client gone): dropped with it
            ReferenceCountUtil.release(held);
            held = null;
            gathered = false;
            readBytes = 0;
        }
    }

    /** Writes the held chunk, with the listener that accounts for the whole read. */
    private void writeHeld() {
        HttpContent h = held;
        if (h == null) {
            return;
        }
        held = null;
        gathered = false;
        int n = readBytes;
        readBytes = 0;
        conn.queued(n);
        conn.ctx.write(h).addListener((ChannelFutureListener) f -> conn.written(n));
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
            relayHead(rl, r.headers());
            return;
        }
        // not relayed: the rest of this answer is read and dropped, then the connection is reused
        finish();
        discarding = true;
        conn.drive(step, x);
    }

    /**
     * The client's head, made of the replica's own header map ({@code upstream}, its names and values
     * validated by the upstream decoder as it read them) less what does not go to the client, plus what
     * the proxy adds and the framing: no new map, no copy. Content-Length, Transfer-Encoding and
     * Connection are among the dropped names, so adding them sets them.
     */
    private void relayHead(Relay rl, HttpHeaders upstream) {
        rl.droppedHeaders(conn.drop);
        HttpHeaders h = conn.pruned(upstream);
        rl.addedHeaders(h::add);
        if (!rl.noBody) {
            if (rl.length >= 0) {
                h.add(HttpHeaderNames.CONTENT_LENGTH, Long.toString(rl.length));
            } else {
                h.add(HttpHeaderNames.TRANSFER_ENCODING, HttpHeaderValues.CHUNKED);
            }
        } else if (rl.status != 204 && rl.status != 304 && rl.length >= 0) {
            // a HEAD's answer says what a GET would send
            h.add(HttpHeaderNames.CONTENT_LENGTH, Long.toString(rl.length));
        }
        if (!conn.keepAlive) {
            conn.closeAfter = true;
            h.add(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        }
        HttpResponse resp = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.valueOf(rl.status), h);
        conn.status = rl.status;
        conn.ctx.write(resp, conn.ctx.voidPromise()); // its failure is the connection's: exceptionCaught closes it
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
        if (n > 0) {
            if (rl.sse) {
                int end = buf.writerIndex();
                lastTwo = n >= 2
                        ? (buf.getByte(end - 2) & 0xff) << 8 | (buf.getByte(end - 1) & 0xff)
                        : (lastTwo & 0xff) << 8 | (buf.getByte(end - 1) & 0xff);
            }
            if (rl.observing()) {
                observe(rl, buf, n);
            } else {
                rl.body(null, 0, n);
            }
        }
        if (last) {
            rl.upstreamDone(); // the replica's slot is free before the client has the last bytes
            ByteBuf tail;
            if (held != null && (n == 0 || gather(buf, n))) {
                tail = held.content(); // the read's chunks and the last bytes go out as the last chunk
            } else {
                if (held != null) {
                    conn.ctx.write(held, conn.ctx.voidPromise()); // accounted below, with the last chunk
                }
                tail = buf.retain();
            }
            held = null;
            gathered = false;
            int total = readBytes + n;
            readBytes = 0;
            finish();
            releaseUpstream();
            conn.queued(total);
            conn.ctx.writeAndFlush(new DefaultLastHttpContent(tail)).addListener((ChannelFutureListener) f -> {
                conn.written(total);
                if (f.isSuccess()) {
                    rl.delivered();
                }
                conn.responseDone(true);
            });
            return;
        }
        if (n > 0) {
            if (held == null || !gather(buf, n)) {
                if (held != null) {
                    // an earlier chunk of this read: its bytes are accounted with the read's last chunk
                    conn.ctx.write(held, conn.ctx.voidPromise());
                }
                held = new DefaultHttpContent(buf.retain());
                gathered = false;
            }
            readBytes += n;
        }
        if (conn.mustPause()) {
            ch.config().setAutoRead(false); // the client reads slower than the replica writes
        }
    }

    /**
     * Adds a chunk's {@code n} bytes to {@link #held} when both are small (at most {@link #GATHER_BYTES}
     * together): the replica's buffer is copied into the connection's gathering buffer (made on the first
     * such chunk, from the channel's allocator). False, with nothing changed, when they are not: a large
     * chunk goes out as it came, never copied.
     */
    private boolean gather(ByteBuf buf, int n) {
        ByteBuf h = held.content();
        int size = h.readableBytes();
        if (size + n > GATHER_BYTES) {
            return false;
        }
        if (!gathered) {
            ByteBuf g = conn.ctx.alloc().buffer(Math.min(GATHER_BYTES, 4 * (size + n)), GATHER_BYTES);
            g.writeBytes(h, h.readerIndex(), size);
            held.release();
            held = new DefaultHttpContent(g);
            gathered = true;
            h = g;
        }
        h.writeBytes(buf, buf.readerIndex(), n);
        return true;
    }

    /** Hands the chunk's bytes to the relay's observer, in slices of the loop's array (any cut will do). */
    private void observe(Relay rl, ByteBuf buf, int n) {
        if (buf.hasArray()) {
            rl.body(buf.array(), buf.arrayOffset() + buf.readerIndex(), n);
            return;
        }
        byte[] slice = OBSERVE_SLICE.get();
        for (int from = 0; from < n; ) {
            int k = Math.min(slice.length, n - from);
            buf.getBytes(buf.readerIndex() + from, slice, 0, k);
            rl.body(slice, 0, k);
            from += k;
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
            writeHeld();
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
        writeHeld();
        finish();
        String before = lastTwo == (('\n' << 8) | '\n') ? "" : (lastTwo & 0xff) == '\n' ? "\n" : "\n\n";
        byte[] event = ApiErrors.streamEvent(x.in.endpoint() == Endpoint.MESSAGES, code, message);
        ByteBuf out = Unpooled.buffer(before.length() + event.length);
        out.writeBytes(before.getBytes(StandardCharsets.US_ASCII)).writeBytes(event);
        conn.ctx.writeAndFlush(new DefaultHttpContent(out)).addListener(ChannelFutureListener.CLOSE);
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
