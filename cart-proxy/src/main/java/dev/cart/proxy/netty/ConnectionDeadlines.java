package dev.cart.proxy.netty;

import dev.cart.proxy.config.ProxyConfig;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * The first handler of a client connection's pipeline: its three deadlines. It watches the raw bytes (the first
 * byte of a request starts that request's read deadline, {@code server.request_read_timeout_secs}), closes the
 * connection when it stays silent between requests ({@code server.idle_timeout_secs}), and ends an upstream
 * call at its exchange's deadline ({@code proxy.request_timeout_secs}). The {@link BodyIntake} says when a
 * request was read whole; the {@link ClientExchange} says when the connection is idle again and which call is
 * current, and hears when a request was not read in time.
 *
 * <p>How: the deadlines are checked by timers armed lazily, as Netty's {@code IdleStateHandler} does: a request
 * moves a deadline (a field) instead of cancelling one scheduled task and scheduling another, which cost three
 * task allocations and six priority-queue operations on the loop per request. A timer that fires finds its
 * deadline moved and re-arms itself for the rest, or finds nothing due (the connection busy, the request read,
 * the call finished) and stops until the deadline is set again. Deadlines only move later on a connection (each
 * is "now" plus a configured time), so a pending timer never fires after its deadline, except for a call whose
 * exchange has an earlier deadline than the pending timer's (a reload shortened the timeout): that one is
 * re-armed at once. (Netty's own {@code IdleStateHandler} and {@code ReadTimeoutHandler} measure silence on the
 * socket, not a request's whole read from its first byte, nor silence only between requests.)
 *
 * <p>Concurrency: loop-confined, as the rest of the connection's state.
 */
// Netty's schedule calls return futures that are kept where they matter and otherwise ignored
@SuppressWarnings("FutureReturnValueIgnored")
final class ConnectionDeadlines extends ChannelInboundHandlerAdapter {

    /** What the deadlines need of the connection they guard. */
    interface Guarded {
        /** The request in progress was not read whole in time. */
        void readTimedOut();

        /** The upstream call in progress, or null. */
        UpstreamCall currentCall();
    }

    private final ProxyConfig.Server limits;
    private Guarded guarded;
    private ChannelHandlerContext ctx;

    private boolean awaitingFirstByte = true;
    /** When the idle connection is closed ({@link System#nanoTime}), while {@link #awaitingFirstByte}. */
    private long idleBy;
    /** When the request in progress must have been read whole, while {@link #readDue}. */
    private long readBy;

    private boolean readDue;
    /** The pending idle check, null when none is armed. */
    private ScheduledFuture<?> idleTimer;
    /** The pending read check, null when none is armed. */
    private ScheduledFuture<?> readTimer;
    /** The pending check of the current call's deadline, null when none is armed; and when it fires. */
    private ScheduledFuture<?> callTimer;

    private long callTimerAt;

    ConnectionDeadlines(ProxyConfig.Server limits) {
        this.limits = limits;
    }

    /** Binds the connection these deadlines guard (set once, before the channel is active). */
    void guard(Guarded g) {
        this.guarded = g;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext c) {
        this.ctx = c;
    }

    @Override
    public void channelRead(ChannelHandlerContext c, Object msg) {
        if (awaitingFirstByte && msg instanceof ByteBuf buf && buf.isReadable()) {
            firstByte();
        }
        c.fireChannelRead(msg);
    }

    /** A request's first byte is here: the connection is no longer idle, and the request must be read in time. */
    void firstByte() {
        awaitingFirstByte = false; // the idle check, when it fires, finds the connection busy and stops
        long timeout = TimeUnit.SECONDS.toNanos(limits.requestReadTimeoutSecs());
        readBy = System.nanoTime() + timeout;
        readDue = true;
        if (readTimer == null) {
            readTimer = ctx.executor().schedule(this::readCheck, timeout, TimeUnit.NANOSECONDS);
        }
    }

    /** The request in progress has been read whole: its read deadline no longer stands. */
    void requestRead() {
        readDue = false;
    }

    /** The connection waits for its next request: silent past {@code idle_timeout_secs}, it is closed. */
    void idle() {
        awaitingFirstByte = true;
        readDue = false; // the read check, when it fires, finds nothing due and stops
        long timeout = TimeUnit.SECONDS.toNanos(limits.idleTimeoutSecs());
        idleBy = System.nanoTime() + timeout;
        if (idleTimer == null) {
            idleTimer = ctx.executor().schedule(this::idleCheck, timeout, TimeUnit.NANOSECONDS);
        }
    }

    /** The read check fired: the request's read deadline, if it still stands, is met, passed or moved. */
    private void readCheck() {
        readTimer = null;
        if (!readDue) {
            return;
        }
        long left = readBy - System.nanoTime();
        if (left > 0) {
            readTimer = ctx.executor().schedule(this::readCheck, left, TimeUnit.NANOSECONDS);
            return;
        }
        readDue = false;
        guarded.readTimedOut();
    }

    /** The idle check fired: the connection, if still idle, is closed once its idle time is up. */
    private void idleCheck() {
        idleTimer = null;
        if (!awaitingFirstByte) {
            return; // a request is in progress; idle() arms the check again after it
        }
        long left = idleBy - System.nanoTime();
        if (left > 0) {
            idleTimer = ctx.executor().schedule(this::idleCheck, left, TimeUnit.NANOSECONDS);
            return;
        }
        ctx.channel().close();
    }

    /** The current call's deadline is {@code due} ({@link System#nanoTime}): the call check is armed for it. */
    void callDue(long due) {
        if (callTimer != null && callTimerAt <= due) {
            return; // fires first, and re-arms for the rest
        }
        cancel(callTimer);
        long delay = Math.max(1, due - System.nanoTime());
        callTimerAt = System.nanoTime() + delay;
        callTimer = ctx.executor().schedule(this::callCheck, delay, TimeUnit.NANOSECONDS);
    }

    /** The call check fired: the current call, if unfinished, ends at its deadline or is checked again then. */
    private void callCheck() {
        callTimer = null;
        UpstreamCall c = guarded.currentCall();
        if (c == null || c.finished) {
            return;
        }
        long left = c.due - System.nanoTime();
        if (left > 0) {
            callTimerAt = System.nanoTime() + left;
            callTimer = ctx.executor().schedule(this::callCheck, left, TimeUnit.NANOSECONDS);
            return;
        }
        c.deadline();
    }

    /** The connection is gone: no timer of it fires again. */
    void cancelAll() {
        cancel(idleTimer);
        cancel(readTimer);
        cancel(callTimer);
    }

    static void cancel(ScheduledFuture<?> f) {
        if (f != null) {
            f.cancel(false);
        }
    }
}
