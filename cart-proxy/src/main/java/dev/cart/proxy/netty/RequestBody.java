package dev.cart.proxy.netty;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.CompositeByteBuf;

/**
 * A request body as a client connection reads it: the client's buffers as Netty decoded them, retained, not copied
 * (as {@code HttpObjectAggregator} does), while they are at most {@link #PIECES}; beyond that (a body trickled in
 * many small reads) one buffer of the channel's allocator they are copied into, which then grows by doubling. So a
 * body is copied once, into the array the core reads (extraction takes a {@code byte[]}: {@link #toArray}), and the
 * request's first send to a replica is written from these (direct) buffers as they are ({@link #take}): no heap
 * copy of it to encode, none into a direct buffer for the socket. The connection owns the buffers until that send
 * takes them; they are released when the request ends otherwise ({@link #drop}: refused, the client gone, an answer
 * without a send). A retry sends the core's array.
 *
 * <p>Concurrency: loop-confined, as the connection's state.
 */
final class RequestBody {

    /**
     * How many of the client's buffers a request body keeps as they are (retained) before it is copied into one
     * buffer of its own: a body trickled in many small reads holds no more than this many of the client's buffers.
     */
    static final int PIECES = 16;

    private ByteBuf body;
    private int length;

    /** Starts an empty body. */
    void reset() {
        drop();
        length = 0;
    }

    /** The bytes read so far. */
    int length() {
        return length;
    }

    /**
     * Adds {@code n} bytes of the client's buffer: the buffer itself, retained, while the body has fewer than
     * {@link #PIECES} of them; past that, all in one buffer of at most {@code max} bytes that grows by doubling.
     */
    void add(ByteBufAllocator alloc, ByteBuf buf, int n, int max) {
        ByteBuf b = body;
        if (b == null) {
            body = alloc.compositeDirectBuffer(PIECES).addComponent(true, buf.retain());
        } else if (b instanceof CompositeByteBuf pieces && pieces.numComponents() < PIECES) {
            pieces.addComponent(true, buf.retain());
        } else if (b instanceof CompositeByteBuf pieces) {
            ByteBuf one = alloc.directBuffer((int) Math.min(max, Math.max(2L * length, length + n)), max);
            one.writeBytes(pieces, pieces.readerIndex(), length);
            one.writeBytes(buf, buf.readerIndex(), n);
            pieces.release();
            body = one;
        } else {
            b.writeBytes(buf, buf.readerIndex(), n);
        }
        length += n;
    }

    /** A copy of the body's bytes, the array the core reads. */
    byte[] toArray() {
        byte[] bytes = new byte[length];
        if (length > 0) {
            body.getBytes(body.readerIndex(), bytes);
        }
        return bytes;
    }

    /** Releases the body's buffers, if still held. */
    void drop() {
        ByteBuf b = body;
        if (b != null) {
            body = null;
            b.release();
        }
    }

    /**
     * The body's buffers for its first send, when they hold the {@code length} bytes of the core's array: the
     * caller owns them then. Null when already taken (a retry) or dropped.
     */
    ByteBuf take(int length) {
        ByteBuf b = body;
        if (b == null || b.readableBytes() != length) {
            return null;
        }
        body = null;
        return b;
    }
}
