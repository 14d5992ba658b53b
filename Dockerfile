# CART proxy image.
#
#   docker build -t cache-aware-router:dev .
#   docker run --rm -p 6700:6700 --ulimit nofile=65535:65535 \
#     -v "$PWD/config.yaml:/workspace/configs/config.yaml:ro" cache-aware-router:dev
#
# Two stages: the build stage compiles the proxy and the library modules it needs (test sources are
# not compiled: -Dmaven.test.skip=true); the runtime stage is a Java 21 JRE with the shaded jar and the
# entrypoint, run by an unprivileged user.
# Both base images are build args, so a build that cannot reach Docker Hub can use its own registry;
# MAVEN_MIRROR_URL points Maven at a mirror of Maven Central. The runtime stage installs nothing.
# DockerfileTest checks the paths and stages below against the build.

ARG BUILDER_IMAGE=maven:3.9-eclipse-temurin-21
ARG RUNTIME_IMAGE=eclipse-temurin:21-jre

FROM ${BUILDER_IMAGE} AS build
ARG MAVEN_MIRROR_URL=""
WORKDIR /src
# .dockerignore keeps target/, .git and editor files out of this copy
COPY . .
RUN set -eu; \
    if [ -n "$MAVEN_MIRROR_URL" ]; then \
      mkdir -p /root/.m2; \
      printf '<settings><mirrors><mirror><id>mirror</id><mirrorOf>*</mirrorOf><url>%s</url></mirror></mirrors></settings>\n' \
        "$MAVEN_MIRROR_URL" > /root/.m2/settings.xml; \
    fi; \
    mvn -B -ntp -Dmaven.test.skip=true -pl cart-proxy -am package; \
    mkdir -p /out; \
    cp cart-proxy/target/cart-proxy.jar /out/cart-proxy.jar; \
    cp docker-entrypoint.sh /out/docker-entrypoint.sh; \
    chmod 0755 /out/docker-entrypoint.sh

FROM ${RUNTIME_IMAGE}
RUN useradd --system --uid 10001 --user-group --no-create-home --shell /usr/sbin/nologin cart \
    && mkdir -p /workspace/configs && chown -R cart:cart /workspace
COPY --from=build /out/cart-proxy.jar /opt/cart/cart-proxy.jar
COPY --from=build /out/docker-entrypoint.sh /opt/cart/docker-entrypoint.sh
WORKDIR /workspace
USER cart
# the port of server.port (default 6700); set CART_HEALTH_PORT when the configuration changes it
ENV CART_HEALTH_PORT=6700
EXPOSE 6700
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["/opt/cart/docker-entrypoint.sh", "--healthcheck"]
# docker stop sends SIGTERM to java (the entrypoint execs it): the proxy drains for up to
# server.drain_timeout_ms (30 s by default), so give it longer: docker stop -t 40 (the default is 10 s)
STOPSIGNAL SIGTERM
ENTRYPOINT ["/opt/cart/docker-entrypoint.sh"]
CMD ["-c", "/workspace/configs/config.yaml"]
