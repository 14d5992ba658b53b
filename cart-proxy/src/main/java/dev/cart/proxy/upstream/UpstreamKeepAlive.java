package dev.cart.proxy.upstream;

/**
 * How long the JDK HTTP client keeps an idle connection to a replica for reuse. Inference servers close
 * idle connections themselves (uvicorn, behind vLLM and SGLang, after 5 s by default); a client that keeps
 * them longer sends requests on connections the server has just closed. So, unless
 * {@code jdk.httpclient.keepalive.timeout} is given on the command line, it is set to
 * {@value #SECONDS} s, below uvicorn's default. (A request that still meets a closed connection is sent
 * again once: see {@code Forwarder.send}.) The JDK reads the property once, when its first client is made.
 */
public final class UpstreamKeepAlive {

    public static final int SECONDS = 4;

    private UpstreamKeepAlive() {}

    public static void apply() {
        if (System.getProperty("jdk.httpclient.keepalive.timeout") == null) {
            System.setProperty("jdk.httpclient.keepalive.timeout", Integer.toString(SECONDS));
        }
    }
}
