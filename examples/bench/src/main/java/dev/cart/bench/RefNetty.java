package dev.cart.bench;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.FastThreadLocal;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * {@code ref-netty}: the floor a Netty proxy sets, with no routing, to tell the cost of Netty in Java from
 * the cost of CART's own work on the Netty front. The same transport choice as the proxy (epoll when its
 * native library loads, NIO otherwise; one event loop per core, one acceptor loop), TCP_NODELAY on both
 * sides, Netty's HTTP/1.1 codecs on both sides, and an upstream kept-alive connection taken from a pool of
 * the client connection's own event loop, so a request crosses no thread. Nothing is aggregated: the
 * request's head and body chunks go upstream as they arrive, the answer's head and chunks back the same
 * way, one flush per read from either side. Round-robin over the replicas; no retries, no limits, no
 * pipelining (a client sends its next request once it has the answer, as the benchmark's do).
 *
 * <p>Run with Netty on the class path (the proxy's shaded jar has it):
 * {@code java -cp cart-bench.jar:cart-proxy.jar dev.cart.bench.RefNetty PORT REPLICA_PORT,...}.
 *
 * <p>Concurrency: a client connection and the upstream connection it holds are on the same loop; every
 * handler below runs on it, and the pool is per loop ({@link FastThreadLocal}).
 */
// Netty's write and close calls return futures that this pass-through rightly ignores
@SuppressWarnings("FutureReturnValueIgnored")
public final class RefNetty {

    private RefNetty() {}

    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[0]);
        List<Integer> replicas = new ArrayList<>();
        for (String s : args[1].split(",")) {
            replicas.add(Integer.parseInt(s.trim()));
        }
        boolean epoll = Epoll.isAvailable();
        IoHandlerFactory factory = epoll ? EpollIoHandler.newFactory() : NioIoHandler.newFactory();
        Class<? extends ServerChannel> serverClass =
                epoll ? EpollServerSocketChannel.class : NioServerSocketChannel.class;
        Class<? extends Channel> clientClass = epoll ? EpollSocketChannel.class : NioSocketChannel.class;
        int threads = Math.max(1, Runtime.getRuntime().availableProcessors());
        EventLoopGroup boss = new MultiThreadIoEventLoopGroup(1, factory);
        EventLoopGroup workers = new MultiThreadIoEventLoopGroup(threads, factory);
        Bootstrap upstream = new Bootstrap().channel(clientClass).option(ChannelOption.TCP_NODELAY, true);
        Pools pools = new Pools(replicas.size());
        AtomicInteger next = new AtomicInteger();
        new ServerBootstrap()
                .group(boss, workers)
                .channel(serverClass)
                .option(ChannelOption.SO_BACKLOG, 1024)
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childHandler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        ch.pipeline()
                                .addLast(new HttpServerCodec())
                                .addLast(new Client(upstream, pools, replicas, next));
                    }
                })
                .bind("127.0.0.1", port)
                .sync();
        System.out.println("LISTENING " + port + " (" + (epoll ? "epoll" : "nio") + ", " + threads + " loops)");
    }

    /** Idle kept-alive upstream connections, per event loop and per replica. */
    private static final class Pools extends FastThreadLocal<List<ArrayDeque<Channel>>> {
        private final int replicas;

        Pools(int replicas) {
            this.replicas = replicas;
        }

        @Override
        protected List<ArrayDeque<Channel>> initialValue() {
            List<ArrayDeque<Channel>> l = new ArrayList<>();
            for (int i = 0; i < replicas; i++) {
                l.add(new ArrayDeque<>());
            }
            return l;
        }
    }

    /** One client connection: passes its request upstream as it comes, holding one upstream connection. */
    private static final class Client extends ChannelInboundHandlerAdapter {
        private final Bootstrap bootstrap;
        private final Pools pools;
        private final List<Integer> replicas;
        private final AtomicInteger next;
        private Channel up;
        private Upstream upHandler;
        private int replica;
        /** What arrived while the upstream connection was being made. */
        private final ArrayDeque<Object> waiting = new ArrayDeque<>();

        private boolean connected;

        Client(Bootstrap bootstrap, Pools pools, List<Integer> replicas, AtomicInteger next) {
            this.bootstrap = bootstrap;
            this.pools = pools;
            this.replicas = replicas;
            this.next = next;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (msg instanceof HttpRequest req) {
                HttpHeaders h = req.headers();
                h.remove(HttpHeaderNames.CONNECTION);
                h.remove("keep-alive");
                replica = Math.floorMod(next.getAndIncrement(), replicas.size());
                Channel pooled = pools.get().get(replica).pollLast();
                if (pooled != null && pooled.isActive()) {
                    take(ctx, pooled);
                    connected = true;
                } else {
                    connected = false;
                    Upstream handler = new Upstream();
                    bootstrap
                            .clone(ctx.channel().eventLoop())
                            .handler(new ChannelInitializer<Channel>() {
                                @Override
                                protected void initChannel(Channel ch) {
                                    ch.pipeline().addLast(new HttpClientCodec()).addLast("up", handler);
                                }
                            })
                            .connect("127.0.0.1", replicas.get(replica))
                            .addListener((ChannelFutureListener) f -> {
                                if (!f.isSuccess()) {
                                    ctx.close();
                                    return;
                                }
                                take(ctx, f.channel());
                                connected = true;
                                while (!waiting.isEmpty()) {
                                    up.write(waiting.poll());
                                }
                                up.flush();
                            });
                }
            }
            if (!connected) {
                waiting.add(msg);
                return;
            }
            up.write(msg);
        }

        private void take(ChannelHandlerContext ctx, Channel ch) {
            up = ch;
            upHandler = (Upstream) ch.pipeline().get("up");
            upHandler.client = ctx.channel();
            upHandler.owner = this;
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            if (connected && up != null) {
                up.flush();
            }
        }

        /** The answer is complete on {@code ch}: back to the pool. */
        void done(Channel ch) {
            up = null;
            upHandler = null;
            pools.get().get(replica).addLast(ch);
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            while (!waiting.isEmpty()) {
                ReferenceCountUtil.release(waiting.poll());
            }
            if (up != null) {
                up.close();
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close();
        }
    }

    /** An upstream connection: passes the answer to the client connection that holds it. */
    private static final class Upstream extends ChannelInboundHandlerAdapter {
        Channel client;
        Client owner;

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            Channel c = client;
            if (c == null) {
                ReferenceCountUtil.release(msg);
                ctx.close();
                return;
            }
            if (msg instanceof HttpResponse r) {
                r.headers().remove(HttpHeaderNames.CONNECTION);
                r.headers().remove("keep-alive");
            }
            if (msg instanceof LastHttpContent) {
                c.writeAndFlush(msg);
                Client o = owner;
                client = null;
                owner = null;
                o.done(ctx.channel());
            } else {
                c.write(msg);
            }
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            Channel c = client;
            if (c != null) {
                c.flush();
            }
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            Channel c = client;
            if (c != null) {
                c.close(); // mid-answer: the client's connection cannot be framed complete
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close();
        }
    }
}
