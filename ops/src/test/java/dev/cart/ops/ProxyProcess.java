package dev.cart.ops;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.File;
import java.io.IOException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.jar.JarFile;
import java.util.jar.Manifest;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The CART proxy ({@code dev.cart:cart-proxy}) in a child JVM on this test's class path, started with a
 * configuration file and {@code --port 0}; its port is read from the line it prints once listening.
 *
 * <p>The main class is looked up rather than named, so that the proxy's packages may move: the
 * {@code Main-Class} of a jar on the class path that holds {@code dev/cart/proxy} classes, else the one
 * class under {@code dev/cart/proxy} (sub-packages included) named {@code Main} with a
 * {@code public static void main(String[])}. None, or several, fails the test naming what was found.
 */
final class ProxyProcess implements AutoCloseable {

    private static final Pattern LISTENING = Pattern.compile("CART listening on [^:\\s]+:(\\d+)");
    private static final String PACKAGE_DIR = "dev/cart/proxy/";

    final ChildProcess process;
    final int port;

    private ProxyProcess(ChildProcess process, int port) {
        this.process = process;
        this.port = port;
    }

    /** Starts a proxy named {@code name} in {@code dir} with {@code yaml} as its configuration. */
    static ProxyProcess start(String name, Path dir, String yaml) throws IOException, InterruptedException {
        Path config = dir.resolve(name + ".yaml");
        Files.writeString(config, yaml);
        String java = ProcessHandle.current().info().command().orElse("java");
        // env --default-signal=HUP: a build started under nohup ignores SIGHUP, every child inherits that, and
        // the proxy could never be asked to reload
        List<String> command = List.of(
                "env",
                "--default-signal=HUP",
                java,
                "-Xmx256m",
                // the client compiler only: a short run on a shared machine spends less CPU compiling
                "-XX:TieredStopAtLevel=1",
                "-cp",
                System.getProperty("java.class.path"),
                mainClass(),
                "-c",
                config.toString(),
                "--host",
                "127.0.0.1",
                "--port",
                "0");
        ChildProcess p = ChildProcess.start(name, dir, command);
        AtomicInteger port = new AtomicInteger();
        try {
            p.awaitReady("listening", 90, () -> {
                Matcher m = LISTENING.matcher(p.output());
                if (m.find()) {
                    port.set(Integer.parseInt(m.group(1)));
                    return true;
                }
                return false;
            });
        } catch (AssertionError e) {
            try {
                p.close();
            } catch (InterruptedException ie) {
                Thread.currentThread().interrupt();
            }
            throw e;
        }
        return new ProxyProcess(p, port.get());
    }

    String target() {
        return "127.0.0.1:" + port;
    }

    /** The proxy's main class, found on this JVM's class path (see the class comment). */
    static String mainClass() throws IOException {
        TreeSet<String> manifests = new TreeSet<>();
        TreeSet<String> named = new TreeSet<>();
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            Path p = Path.of(entry);
            if (Files.isDirectory(p)) {
                Path pkg = p.resolve(PACKAGE_DIR);
                if (Files.isDirectory(pkg)) {
                    try (Stream<Path> files = Files.walk(pkg)) {
                        files.filter(f -> f.getFileName().toString().equals("Main.class"))
                                .forEach(
                                        f -> named.add(className(p.relativize(f).toString())));
                    }
                }
            } else if (entry.endsWith(".jar") && Files.isRegularFile(p)) {
                try (JarFile jar = new JarFile(p.toFile())) {
                    if (jar.stream().noneMatch(e -> e.getName().startsWith(PACKAGE_DIR))) {
                        continue;
                    }
                    Manifest mf = jar.getManifest();
                    String main = mf == null ? null : mf.getMainAttributes().getValue("Main-Class");
                    if (main != null) {
                        manifests.add(main);
                    }
                    jar.stream()
                            .map(e -> e.getName())
                            .filter(n -> n.startsWith(PACKAGE_DIR) && n.endsWith("/Main.class"))
                            .forEach(n -> named.add(className(n)));
                }
            }
        }
        List<String> candidates = new ArrayList<>(manifests.isEmpty() ? named : manifests);
        candidates.removeIf(c -> !hasMain(c));
        if (candidates.size() != 1) {
            fail("cannot tell the proxy's main class: Main-Class attributes " + manifests + ", classes named Main "
                    + named + " (with a public static void main: " + candidates + ")");
        }
        return candidates.get(0);
    }

    private static String className(String path) {
        return path.substring(0, path.length() - ".class".length())
                .replace('/', '.')
                .replace(File.separatorChar, '.');
    }

    private static boolean hasMain(String name) {
        try {
            Method m = Class.forName(name, false, ProxyProcess.class.getClassLoader())
                    .getMethod("main", String[].class);
            return Modifier.isStatic(m.getModifiers()) && m.getReturnType() == void.class;
        } catch (ClassNotFoundException | NoSuchMethodException e) {
            return false;
        }
    }

    /** Asks the proxy to re-read its configuration (SIGHUP). */
    void reload() throws IOException, InterruptedException {
        process.signal("HUP");
    }

    @Override
    public void close() throws InterruptedException {
        process.close();
    }
}
