package dev.cart.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.proxy.config.ProxyConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The image cannot be built in the test environment, so this checks the Dockerfile against the build it
 * wraps: the jar path the proxy module produces, the files it copies, the runtime stage (a Java 21+ JRE, a
 * user that is not root, a health check), the exposed port against the default configuration, and a
 * {@code .dockerignore} that keeps build output and history out of the context. The health check's script
 * is run for real against a proxy.
 */
class DockerfileTest {

    private static final Path ROOT =
            Path.of(System.getProperty("user.dir")).resolve("..").normalize();

    /** The Dockerfile's instructions, continuation lines joined, comments dropped. */
    private static List<String> instructions() throws Exception {
        List<String> out = new ArrayList<>();
        StringBuilder cur = new StringBuilder();
        for (String line : Files.readAllLines(ROOT.resolve("Dockerfile"))) {
            String t = line.strip();
            if (t.startsWith("#") || (t.isEmpty() && cur.length() == 0)) {
                continue;
            }
            if (t.endsWith("\\")) {
                cur.append(t, 0, t.length() - 1).append(' ');
                continue;
            }
            cur.append(t);
            if (cur.length() > 0) {
                out.add(cur.toString());
            }
            cur.setLength(0);
        }
        return out;
    }

    private static String arg(List<String> ins, String name) {
        for (String i : ins) {
            Matcher m = Pattern.compile("^ARG " + name + "=(\\S+)$").matcher(i);
            if (m.matches()) {
                return m.group(1);
            }
        }
        throw new AssertionError("no ARG " + name);
    }

    @Test
    void theDockerfileMatchesTheBuild() throws Exception {
        List<String> ins = instructions();
        List<Integer> froms = new ArrayList<>();
        for (int i = 0; i < ins.size(); i++) {
            if (ins.get(i).startsWith("FROM ")) {
                froms.add(i);
            }
        }
        assertEquals(2, froms.size(), "a build stage and a runtime stage: " + ins);
        assertEquals("FROM ${BUILDER_IMAGE} AS build", ins.get(froms.get(0)));
        assertEquals("FROM ${RUNTIME_IMAGE}", ins.get(froms.get(1)));

        Matcher runtime = Pattern.compile("eclipse-temurin:(\\d+)-jre").matcher(arg(ins, "RUNTIME_IMAGE"));
        assertTrue(runtime.matches(), "an official eclipse-temurin JRE: " + arg(ins, "RUNTIME_IMAGE"));
        assertTrue(Integer.parseInt(runtime.group(1)) >= 21, "a Java 21+ runtime");
        Matcher builder =
                Pattern.compile("maven:3\\.\\d+-eclipse-temurin-(\\d+)").matcher(arg(ins, "BUILDER_IMAGE"));
        assertTrue(builder.matches() && Integer.parseInt(builder.group(1)) >= 17, arg(ins, "BUILDER_IMAGE"));

        List<String> build = ins.subList(froms.get(0), froms.get(1));
        List<String> run = ins.subList(froms.get(1), ins.size());
        String buildRun = build.stream().filter(i -> i.startsWith("RUN ")).reduce("", String::concat);
        assertTrue(buildRun.contains("mvn -B -ntp -Dmaven.test.skip=true -pl cart-proxy -am package"), buildRun);
        // the jar the proxy module builds (its finalName) is the one copied out
        String pom = Files.readString(ROOT.resolve("cart-proxy/pom.xml"));
        Matcher shaded = Pattern.compile("<outputFile>\\$\\{project.build.directory}/([^<]+)</outputFile>")
                .matcher(pom);
        assertTrue(shaded.find(), "the shade plugin's output file");
        assertTrue(buildRun.contains("cp cart-proxy/target/" + shaded.group(1) + " /out/cart-proxy.jar"), buildRun);
        assertTrue(
                Files.readString(ROOT.resolve("bin/cache-aware-router"))
                        .contains("cart-proxy/target/" + shaded.group(1)),
                "the launcher runs the same jar");
        assertTrue(buildRun.contains("cp docker-entrypoint.sh /out/docker-entrypoint.sh"), buildRun);
        assertTrue(Files.isExecutable(ROOT.resolve("docker-entrypoint.sh")));
        // -Dmaven.test.skip=true builds no test jars: a module may depend on one only from a profile that
        // this property switches off
        try (var poms = Files.walk(ROOT, 3)) {
            for (Path p : poms.filter(f -> f.getFileName().toString().equals("pom.xml"))
                    .toList()) {
                String text = Files.readString(p);
                int testJar = text.indexOf("<type>test-jar</type>");
                if (testJar >= 0) {
                    int profile = text.lastIndexOf("<profile>", testJar);
                    assertTrue(
                            profile >= 0
                                    && text.indexOf("</profile>", profile) > testJar
                                    && text.substring(profile, testJar).contains("<name>!maven.test.skip</name>"),
                            p + " depends on a test jar outside a profile that -Dmaven.test.skip=true turns off");
                }
            }
        }

        assertTrue(run.contains("COPY --from=build /out/cart-proxy.jar /opt/cart/cart-proxy.jar"), run.toString());
        assertTrue(
                run.contains("COPY --from=build /out/docker-entrypoint.sh /opt/cart/docker-entrypoint.sh"),
                run.toString());
        assertTrue(run.contains("ENTRYPOINT [\"/opt/cart/docker-entrypoint.sh\"]"), run.toString());
        assertTrue(Files.readString(ROOT.resolve("docker-entrypoint.sh")).contains("-jar /opt/cart/cart-proxy.jar"));

        String user = run.stream()
                .filter(i -> i.startsWith("USER "))
                .reduce((a, b) -> b)
                .orElse("USER root");
        String name = user.substring(5).split(":")[0].strip();
        assertNotEquals("root", name, "runs as a user other than root");
        assertNotEquals("0", name, "runs as a user other than root");
        assertTrue(
                run.stream().anyMatch(i -> i.startsWith("RUN useradd") && i.contains(" " + name)),
                "the user is created in the runtime stage: " + run);

        assertTrue(run.contains("EXPOSE " + ProxyConfig.Server.DEFAULT_PORT), run.toString());
        assertTrue(run.contains("ENV CART_HEALTH_PORT=" + ProxyConfig.Server.DEFAULT_PORT), run.toString());
        assertTrue(
                run.stream()
                        .anyMatch(i -> i.startsWith("HEALTHCHECK ")
                                && i.endsWith("CMD [\"/opt/cart/docker-entrypoint.sh\", \"--healthcheck\"]")),
                run.toString());
        assertTrue(run.contains("CMD [\"-c\", \"/workspace/configs/config.yaml\"]"), run.toString());
        assertTrue(run.contains("STOPSIGNAL SIGTERM"), "docker stop drains the proxy: " + run);
        String entrypoint = Files.readString(ROOT.resolve("docker-entrypoint.sh"));
        assertTrue(
                entrypoint.contains("\nexec java "),
                "java replaces the entrypoint's shell, so it gets docker stop's SIGTERM itself");

        List<String> ignored = Files.readAllLines(ROOT.resolve(".dockerignore"));
        assertTrue(ignored.contains(".git"), ignored.toString());
        assertTrue(ignored.contains("**/target/"), ignored.toString());
    }

    @Test
    void theHealthCheckAsksTheProxysHealthEndpoint() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(1, "")) {
            assertEquals(1, healthcheck(h.proxy.port()), "no replica probed yet: /health is 503 (starting)");
            h.probe();
            assertEquals(0, healthcheck(h.proxy.port()), "a healthy proxy");
            h.replica(0).close();
            h.probe();
            h.probe();
            h.probe();
            assertEquals(503, h.get("/health").statusCode());
            assertEquals(1, healthcheck(h.proxy.port()), "no healthy replica: /health is 503");
        }
        int port;
        try (java.net.ServerSocket free = new java.net.ServerSocket(0)) {
            port = free.getLocalPort();
        }
        assertNotEquals(0, healthcheck(port), "nothing listening");
    }

    private static int healthcheck(int port) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(
                        "bash", ROOT.resolve("docker-entrypoint.sh").toString(), "--healthcheck")
                .redirectErrorStream(true);
        pb.environment().put("CART_HEALTH_PORT", Integer.toString(port));
        Process p = pb.start();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "the health check ends");
        p.getInputStream().readAllBytes();
        return p.exitValue();
    }
}
