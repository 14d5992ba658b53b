package dev.cart.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The processes the benchmark starts (fake replica, CART proxy, nginx) and what it reads about them. */
final class Children {

    private Children() {}

    private static final List<Process> STARTED = new ArrayList<>();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(Children::stopAll, "stop-children"));
    }

    static synchronized Process start(List<String> command, Path log, boolean pipeStdout) throws IOException {
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
        if (!pipeStdout) {
            pb.redirectOutput(log.toFile());
        }
        Process p = pb.start();
        STARTED.add(p);
        return p;
    }

    static synchronized void stopAll() {
        for (Process p : STARTED) {
            stop(p);
        }
        STARTED.clear();
    }

    static void stop(Process p) {
        if (!p.isAlive()) {
            return;
        }
        p.destroy();
        try {
            if (!p.waitFor(10, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                p.waitFor(5, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** The fake replica, as a child JVM on this class path; returns it and its ports. */
    record Replica(Process process, List<Integer> ports) {}

    static Replica replica(String java, int ports, Path dir) throws IOException {
        String cp = System.getProperty("java.class.path");
        List<String> cmd =
                List.of(java, "-Xms256m", "-Xmx256m", "-cp", cp, FakeReplica.class.getName(), Integer.toString(ports));
        Process p = start(cmd, dir.resolve("replica.log"), true);
        BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        String line = r.readLine();
        if (line == null || !line.startsWith("PORTS ")) {
            throw new IOException("the fake replica did not start: " + line);
        }
        List<Integer> list = new ArrayList<>();
        for (String s : line.substring(6).split(",")) {
            list.add(Integer.parseInt(s.trim()));
        }
        return new Replica(p, list);
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket()) {
            s.bind(new InetSocketAddress("127.0.0.1", 0));
            return s.getLocalPort();
        }
    }

    /** Waits until {@code GET url} answers 200. */
    static void awaitOk(String url, Process p, Duration max) throws IOException, InterruptedException {
        HttpClient c =
                HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(1)).build();
        long end = System.nanoTime() + max.toNanos();
        while (System.nanoTime() < end) {
            if (!p.isAlive()) {
                throw new IOException("process exited with status " + p.exitValue() + " before " + url + " answered");
            }
            try {
                HttpResponse<Void> r = c.send(
                        HttpRequest.newBuilder(URI.create(url))
                                .timeout(Duration.ofSeconds(2))
                                .build(),
                        HttpResponse.BodyHandlers.discarding());
                if (r.statusCode() == 200) {
                    return;
                }
            } catch (IOException notYet) {
                // not listening yet
            }
            Thread.sleep(200);
        }
        throw new IOException(url + " did not answer 200 within " + max);
    }

    static String get(String url) throws IOException, InterruptedException {
        HttpClient c = HttpClient.newHttpClient();
        return c.send(
                        HttpRequest.newBuilder(URI.create(url))
                                .timeout(Duration.ofSeconds(10))
                                .build(),
                        HttpResponse.BodyHandlers.ofString())
                .body();
    }

    /** The 1-minute load average. */
    static double load() {
        try {
            return Double.parseDouble(Files.readString(Path.of("/proc/loadavg")).split(" ")[0]);
        } catch (IOException | RuntimeException e) {
            return Double.NaN;
        }
    }

    /** A field of {@code /proc/<pid>/status} ({@code Threads}, {@code VmRSS}), as its first number. */
    static long status(long pid, String field) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/" + pid + "/status"))) {
                if (line.startsWith(field + ":")) {
                    return Long.parseLong(
                            line.substring(field.length() + 1).trim().split("\\s+")[0]);
                }
            }
        } catch (IOException | RuntimeException e) {
            // gone
        }
        return -1;
    }

    /** Runs {@code jcmd <pid> GC.run}, then returns the heap in use in KiB from {@code GC.heap_info}. */
    static long heapAfterGcKib(String jcmd, long pid, Path log) throws IOException, InterruptedException {
        run(List.of(jcmd, Long.toString(pid), "GC.run"));
        Thread.sleep(1000);
        run(List.of(jcmd, Long.toString(pid), "GC.run"));
        Thread.sleep(1000);
        String info = run(List.of(jcmd, Long.toString(pid), "GC.heap_info"));
        Files.writeString(
                log,
                info + "\n",
                StandardCharsets.UTF_8,
                java.nio.file.StandardOpenOption.CREATE,
                java.nio.file.StandardOpenOption.APPEND);
        Matcher m = Pattern.compile("used (\\d+)K").matcher(info);
        if (!m.find()) {
            throw new IOException("no heap figure in: " + info);
        }
        return Long.parseLong(m.group(1));
    }

    static String run(List<String> command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        p.waitFor();
        return out;
    }
}
