package dev.cart.proxy;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Installs a SIGHUP handler that reloads the configuration. Uses {@code sun.misc.Signal} through
 * reflection, so the proxy still runs (without signal reload, with a warning) on a JVM or platform
 * that does not offer it. The handler hands the reload to a fresh thread: the JVM's signal thread is
 * never blocked by reading files.
 */
final class SignalReload {

    private static final Logger LOG = LoggerFactory.getLogger(SignalReload.class);

    private SignalReload() {}

    /** @return true if the handler was installed */
    static boolean install(Runnable reload) {
        try {
            Class<?> signalClass = Class.forName("sun.misc.Signal");
            Class<?> handlerClass = Class.forName("sun.misc.SignalHandler");
            Object signal = signalClass.getConstructor(String.class).newInstance("HUP");
            InvocationHandler ih = (proxy, method, args) -> {
                if (method.getName().equals("handle")) {
                    Thread t = new Thread(reload, "cart-reload");
                    t.setDaemon(true);
                    t.start();
                    return null;
                }
                return defaultObjectMethod(proxy, method, args);
            };
            Object handler =
                    Proxy.newProxyInstance(SignalReload.class.getClassLoader(), new Class<?>[] {handlerClass}, ih);
            Method handle = signalClass.getMethod("handle", signalClass, handlerClass);
            handle.invoke(null, signal, handler);
            return true;
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            LOG.warn(
                    "SIGHUP reload is not available on this JVM/platform ({}); restart to change workers",
                    e.toString());
            return false;
        }
    }

    private static Object defaultObjectMethod(Object proxy, Method method, Object[] args) {
        switch (method.getName()) {
            case "hashCode":
                return System.identityHashCode(proxy);
            case "equals":
                return proxy == args[0];
            case "toString":
                return "cart-sighup-handler";
            default:
                return null;
        }
    }
}
