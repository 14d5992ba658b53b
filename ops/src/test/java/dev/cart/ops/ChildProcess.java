package dev.cart.ops;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * A program the live check runs beside it (redis-server, prometheus, a proxy), its output in a file of the
 * run's directory; closing it stops it (SIGTERM, then SIGKILL after 10 s). Not thread-safe: one test
 * thread owns it.
 */
final class ChildProcess implements AutoCloseable {

    final String name;
    final Process process;
    final Path log;

    private ChildProcess(String name, Process process, Path log) {
        this.name = name;
        this.process = process;
        this.log = log;
    }

    /** Ends {@code p} when this JVM ends, should the test not get to close it (a timeout, a crash). */
    private static void killOnExit(Process p) {
        Runtime.getRuntime().addShutdownHook(new Thread(p::destroyForcibly, "stop-" + p.pid()));
    }

    static ChildProcess start(String name, Path dir, List<String> command) throws IOException {
        Path log = dir.resolve(name + ".log");
        Process p = new ProcessBuilder(command)
                .directory(dir.toFile())
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .start();
        killOnExit(p);
        return new ChildProcess(name, p, log);
    }

    String output() {
        try {
            return Files.readString(log, StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "(no output: " + e.getMessage() + ")";
        }
    }

    /** Polls {@code ready} until it holds; fails the test if the process ends first or after {@code seconds}. */
    void awaitReady(String what, long seconds, BooleanSupplier ready) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (!ready.getAsBoolean()) {
            if (!process.isAlive()) {
                fail(name + " exited (" + process.exitValue() + ") before " + what + ":\n" + output());
            }
            if (System.nanoTime() > deadline) {
                fail(name + ": not " + what + " within " + seconds + " s:\n" + output());
            }
            pollInterval(50);
        }
    }

    /**
     * Waits {@code millis} between two polls of a bounded wait; throws if the test was interrupted (its time
     * limit), so that no wait outlives it.
     */
    static void pollInterval(long millis) throws InterruptedException {
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(millis));
        if (Thread.interrupted()) {
            throw new InterruptedException("interrupted while waiting");
        }
    }

    /** Sends a signal ({@code HUP}, ...) with kill(1). */
    void signal(String signal) throws IOException, InterruptedException {
        Process kill = new ProcessBuilder("kill", "-" + signal, String.valueOf(process.pid()))
                .redirectErrorStream(true)
                .start();
        if (!kill.waitFor(20, TimeUnit.SECONDS) || kill.exitValue() != 0) {
            fail("kill -" + signal + " " + name + " failed: "
                    + new String(kill.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
        }
    }

    /** A TCP port free on loopback right now (another process may take it before it is used). */
    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    @Override
    public void close() throws InterruptedException {
        process.destroy();
        if (!process.waitFor(10, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
        }
    }
}
