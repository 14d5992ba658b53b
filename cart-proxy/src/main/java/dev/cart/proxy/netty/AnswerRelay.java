package dev.cart.proxy.netty;

import dev.cart.proxy.http.AnswerBudget;
import dev.cart.proxy.upstream.Relay;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.FastThreadLocal;
import java.nio.charset.StandardCharsets;

/**
 * The client side of a relayed answer: a replica's answer written to the client connection, and the answer bytes
 * queued for the client accounted for. The {@link UpstreamCall} that relays an answer hands it the head and each
 * chunk as the upstream decoder read them; this writes them through the client's pipeline.
 *
 * <p>How: the head is the replica's own header map less what does not go to the client (no new map, no copy). The
 * chunks of one read from the replica go out with no promise of their own but the last, which carries the one
 * listener that accounts for the whole read, at the read's end: a promise, a listener and a hand-off to the
 * {@link AnswerBudget} per read instead of per chunk (a replica writes each event of a stream as a chunk of its
 * own). Small chunks of one read are gathered into one ({@link #GATHER_BYTES}), so the encoder makes one chunk header
 * and the socket one write entry for them; larger ones go out as they came, uncopied. The bytes queued for the client
 * and not yet written ({@link #mustPause}) are what pauses reading from the replica: the client connection's own
 * buffer full, or all connections' over the budget while this client has not taken what waits for it.
 *
 * <p>Why its own class: one per client connection (made with it, reused by each answer it relays, so a request
 * allocates none), it is the relay's write side, apart from the call's connect, send and failure handling.
 *
 * <p>Concurrency: loop-confined, as the connection's state.
 */
// Netty's write calls return futures that are rightly ignored: failures arrive as channel events
@SuppressWarnings("FutureReturnValueIgnored")
final class AnswerRelay {

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

    /** Two line ends: as if a stream began after a blank line. */
    private static final int BLANK = ('\n' << 8) | '\n';

    private final ClientExchange conn;
    private final AnswerBudget answers;

    /** What the current read from the replica brought and is not yet written to the client. */
    private HttpContent held;
    /** True when {@link #held}'s buffer is the connection's own gathering buffer, not the replica's. */
    private boolean gathered;
    /** Answer bytes of the current read (the held chunk's included), not yet counted as queued. */
    private int readBytes;
    /**
     * The last two bytes of a streamed answer relayed so far (older in the high byte), as if it began after a
     * blank line: where an error event that ends a cut stream must start ({@link #cutEvent}).
     */
    private int lastTwo = BLANK;
    /** Answer bytes queued for the client and not yet written to its socket. */
    private long pending;

    AnswerRelay(ClientExchange conn, AnswerBudget answers) {
        this.conn = conn;
        this.answers = answers;
    }

    /**
     * Writes the client's head, made of the replica's own header map ({@code upstream}, its names and values
     * validated by the upstream decoder as it read them) less what does not go to the client, plus what the proxy
     * adds and the framing. Content-Length, Transfer-Encoding and Connection are among the dropped names, so adding
     * them sets them.
     */
    void head(Relay rl, HttpHeaders upstream) {
        lastTwo = BLANK;
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

    /** Hands a chunk's {@code n} bytes ({@code n > 0}) to the relay's observer, and keeps a stream's last two. */
    void observe(Relay rl, ByteBuf buf, int n) {
        if (rl.sse) {
            int end = buf.writerIndex();
            lastTwo = n >= 2
                    ? (buf.getByte(end - 2) & 0xff) << 8 | (buf.getByte(end - 1) & 0xff)
                    : (lastTwo & 0xff) << 8 | (buf.getByte(end - 1) & 0xff);
        }
        if (!rl.observing()) {
            rl.body(null, 0, n);
            return;
        }
        if (buf.hasArray()) {
            rl.body(buf.array(), buf.arrayOffset() + buf.readerIndex(), n);
            return;
        }
        byte[] slice = OBSERVE_SLICE.get(); // in slices of the loop's array (any cut will do)
        for (int from = 0; from < n; ) {
            int k = Math.min(slice.length, n - from);
            buf.getBytes(buf.readerIndex() + from, slice, 0, k);
            rl.body(slice, 0, k);
            from += k;
        }
    }

    /** A chunk of {@code n > 0} bytes that is not the answer's last: held until the read ends or gathered. */
    void chunk(ByteBuf buf, int n) {
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

    /**
     * The answer's last chunk ({@code n} bytes of {@code buf}): what the read held and these bytes become the last
     * chunk's content, returned (the caller owns it); its bytes are counted by {@link #writeLast}.
     */
    ByteBuf lastContent(ByteBuf buf, int n) {
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
        readBytes += n;
        return tail;
    }

    /**
     * Writes the answer's last chunk ({@link #lastContent}) and flushes; once written, the relay hears it was
     * delivered (when it was) and the request ends.
     */
    void writeLast(ByteBuf tail, Relay rl) {
        int total = readBytes;
        readBytes = 0;
        queued(total);
        conn.ctx.writeAndFlush(new DefaultLastHttpContent(tail)).addListener((ChannelFutureListener) f -> {
            written(total);
            if (f.isSuccess()) {
                rl.delivered();
            }
            conn.responseDone(true);
        });
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

    /** Writes the held chunk, with the listener that accounts for the whole read. */
    void writeHeld() {
        HttpContent h = held;
        if (h == null) {
            return;
        }
        held = null;
        gathered = false;
        int n = readBytes;
        readBytes = 0;
        queued(n);
        conn.ctx.write(h).addListener((ChannelFutureListener) f -> written(n));
    }

    /** The answer ended otherwise (broken, deadline, client gone): what the read held is dropped with it. */
    void dropHeld() {
        if (held != null) {
            ReferenceCountUtil.release(held);
            held = null;
            gathered = false;
            readBytes = 0;
        }
    }

    /**
     * Ends a cut stream: {@code event} (an error event in the shape of its API), preceded by the line ends that
     * finish an event the replica left half-written, is written and the client connection closed after it.
     */
    void cutEvent(byte[] event) {
        String before = lastTwo == BLANK ? "" : (lastTwo & 0xff) == '\n' ? "\n" : "\n\n";
        ByteBuf out = Unpooled.buffer(before.length() + event.length);
        out.writeBytes(before.getBytes(StandardCharsets.US_ASCII)).writeBytes(event);
        conn.ctx.writeAndFlush(new DefaultHttpContent(out)).addListener(ChannelFutureListener.CLOSE);
    }

    /** {@code n} answer bytes queued for the client: counted here and in the {@link AnswerBudget}. */
    private void queued(int n) {
        pending += n;
        answers.add(n);
    }

    /** {@code n} queued answer bytes have gone to the client's socket (or were dropped with it). */
    private void written(int n) {
        pending -= n;
        answers.add(-n);
        if (pending == 0) {
            conn.resumeUpstream();
        }
    }

    /**
     * True when reading from the replica must pause: the client connection's own buffer is full, or the
     * total of all connections' is and this client has not taken what waits for it.
     */
    boolean mustPause() {
        return !conn.ctx.channel().isWritable() || (pending > 0 && answers.over());
    }
}
