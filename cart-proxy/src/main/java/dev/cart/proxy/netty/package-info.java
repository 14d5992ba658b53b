/**
 * The Netty front: a client connection's pipeline of small handlers, each with one job, and the upstream
 * connections its requests are sent on, all on the connection's one event loop.
 *
 * <p>A client connection's pipeline, drawn as Netty draws {@code io.netty.channel.ChannelPipeline}: inbound
 * events go up the left, from the socket to the exchange; what the exchange and the intake write goes down the
 * right, through the codec's encoder to the socket. Only the exchange and the intake write.
 *
 * <pre>
 *                                             I/O request: an answer, a relayed chunk, 100 Continue, close
 *                                                              |
 *  +-----------------------------------------------------------+-----------------+
 *  |                           ChannelPipeline                 |                 |
 *  |                                                          \|/                |
 *  |    +-------------------------------------------+          |                 |
 *  |    | "exchange"   ClientExchange               |          |                 |
 *  |    |   plans a head (the proxy's own answers), +--------->+                 |
 *  |    |   drives the Forwarder's steps: a send is |          |                 |
 *  |    |   an UpstreamCall, a backoff a timer; the |          |                 |
 *  |    |   answer bytes queued for the client      |          |                 |
 *  |    +---------------------+---------------------+          |                 |
 *  |                         /|\  a head; the prepared request |                 |
 *  |    +---------------------+---------------------+          |                 |
 *  |    | "intake"     BodyIntake                   |          |                 |
 *  |    |   the body into a RequestBody within      +--------->+                 |
 *  |    |   max_body_bytes and the BodyBudget (413),|          |                 |
 *  |    |   a refused request's rest dropped, the   |          |                 |
 *  |    |   request prepared (a large or token-mode |          |                 |
 *  |    |   body on the extraction pool), pipelined |          |                 |
 *  |    |   requests held while an answer is made   |          |                 |
 *  |    +---------------------+---------------------+          |                 |
 *  |                         /|\  HttpRequest, HttpContent    \|/                |
 *  |    +---------------------+--------------------------------+-------------+   |
 *  |    | "codec"      HttpServerCodec: request decoder (414, 431 limits)    |   |
 *  |    |              and response encoder                                  |   |
 *  |    +---------------------+--------------------------------+-------------+   |
 *  |                         /|\  ByteBuf                      |                 |
 *  |    +---------------------+---------------------+          |                 |
 *  |    | "deadlines"  ConnectionDeadlines          |          |                 |
 *  |    |   idle between requests, a request read   |          |                 |
 *  |    |   whole from its first byte, the upstream |          |                 |
 *  |    |   call's deadline                         |          |                 |
 *  |    +---------------------+---------------------+          |                 |
 *  |                         /|\                              \|/                |
 *  +--------------------------+--------------------------------+-----------------+
 *                             |                               \|/
 *                     [ Socket.read() ]                [ Socket.write() ]
 * </pre>
 *
 * <p>The intake hands the exchange a head and, once the body is read whole and prepared, the prepared request, by a
 * direct call on the loop (the two are bound when the connection's pipeline is built): no message object, no copy
 * of the body. The body's buffers are the client's as the decoder made them ({@link dev.cart.proxy.netty.RequestBody});
 * the first send to a replica is written from them.
 *
 * <p>Timeouts: the client connection's are {@code ConnectionDeadlines}' rather than Netty's
 * {@code IdleStateHandler} or {@code ReadTimeoutHandler}, which measure silence on the socket, not a request's whole
 * read from its first byte nor silence only between requests; an upstream connection's idle time in its pool is
 * Netty's own {@code IdleStateHandler}. An upstream connection's pipeline ({@code NettyUpstream}):
 *
 * <pre>
 *  IdleStateHandler (keep-alive idle) → HttpResponseDecoder / HttpRequestEncoder → Handler, last: the events go to the
 *  connection's holder, the UpstreamCall, on the client connection's loop
 * </pre>
 *
 * <p>Concurrency: every handler of a client connection, its {@code UpstreamCall}s and their upstream connections run
 * on one event loop; nothing of a connection's state is touched elsewhere. What leaves the loop (a large or
 * token-mode body's preparation, a precise lookup, the admission queue's wait) comes back to it through the loop's
 * executor.
 */
package dev.cart.proxy.netty;
