package dev.cart.ops;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The external programs these tests run ({@code promtool}, {@code prometheus}, {@code redis-server}) and the
 * files of this directory. A missing program fails the test that needs it with a message saying how to
 * install it: CI installs them ({@code .ci/run}), and a check that passed by not running would prove nothing.
 */
final class Tools {

    private Tools() {}

    /** {@code ops/}: the module's directory, where Maven runs its tests. */
    static Path opsDir() {
        Path here = Path.of("").toAbsolutePath();
        if (Files.isDirectory(here.resolve("prometheus"))) {
            return here;
        }
        Path nested = here.resolve("ops");
        if (Files.isDirectory(nested.resolve("prometheus"))) {
            return nested;
        }
        return fail("run from the repository root or ops/: no prometheus/ directory under " + here);
    }

    static Path prometheusDir() {
        return opsDir().resolve("prometheus");
    }

    static Path repositoryRoot() {
        return opsDir().getParent();
    }

    /** The program {@code name} on PATH (or /usr/bin, /usr/local/bin), or a failed test saying how to get it. */
    static Path binary(String name, String debianPackage) {
        String path = System.getenv().getOrDefault("PATH", "");
        for (String d : (path + ":/usr/bin:/usr/local/bin").split(":")) {
            if (!d.isEmpty() && Files.isExecutable(Path.of(d, name))) {
                return Path.of(d, name);
            }
        }
        return fail(name + " not found on PATH: the cart-ops tests run the real tool. Install Debian's "
                + debianPackage + " package (apt-get install -y --no-install-recommends " + debianPackage
                + "; .ci/run does it when it is missing), or leave this module out: mvn -pl '!ops' ...");
    }

    static Path promtool() {
        return binary("promtool", "prometheus");
    }

    /** A finished program: its exit status and what it printed (stdout and stderr together). */
    record Result(int exitCode, String output) {}

    /** Runs {@code command} in {@code dir}; fails the test if it has not ended within {@code seconds}. */
    static Result run(Path dir, long seconds, List<String> command) throws IOException, InterruptedException {
        Path out = Files.createTempFile("cart-ops-", ".out");
        try {
            Process p = new ProcessBuilder(command)
                    .directory(dir.toFile())
                    .redirectErrorStream(true)
                    .redirectOutput(out.toFile())
                    .start();
            if (!p.waitFor(seconds, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                p.waitFor(10, TimeUnit.SECONDS);
                fail(String.join(" ", command) + " did not end within " + seconds + " s: "
                        + Files.readString(out, StandardCharsets.UTF_8));
            }
            return new Result(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8));
        } finally {
            Files.deleteIfExists(out);
        }
    }
}
