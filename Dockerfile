# CART proxy image.
#
#   docker build -t cache-aware-router:dev .
#   docker run --rm -p 6700:6700 \
#     -v "$PWD/config.yaml:/workspace/configs/config.yaml" cache-aware-router:dev
#
# Both base images are build args, so a build that cannot reach Docker Hub can use its own registry;
# MAVEN_MIRROR_URL points Maven at a mirror of Maven Central. The runtime stage installs nothing.

ARG BUILDER_IMAGE=maven:3.9-eclipse-temurin-17
ARG RUNTIME_IMAGE=eclipse-temurin:17-jre

FROM ${BUILDER_IMAGE} AS build
ARG MAVEN_MIRROR_URL=""
WORKDIR /src
COPY . .
RUN set -eu; \
    if [ -n "$MAVEN_MIRROR_URL" ]; then \
      mkdir -p /root/.m2; \
      printf '<settings><mirrors><mirror><id>mirror</id><mirrorOf>*</mirrorOf><url>%s</url></mirror></mirrors></settings>\n' \
        "$MAVEN_MIRROR_URL" > /root/.m2/settings.xml; \
    fi; \
    mvn -B -ntp -DskipTests -pl examples/proxy -am package; \
    mkdir -p /out; \
    cp examples/proxy/target/cart-proxy.jar /out/cart-proxy.jar; \
    cp docker-entrypoint.sh /out/docker-entrypoint.sh; \
    chmod 0755 /out/docker-entrypoint.sh

FROM ${RUNTIME_IMAGE}
COPY --from=build /out/cart-proxy.jar /opt/cart/cart-proxy.jar
COPY --from=build /out/docker-entrypoint.sh /opt/cart/docker-entrypoint.sh
WORKDIR /workspace
EXPOSE 6700
ENTRYPOINT ["/opt/cart/docker-entrypoint.sh"]
CMD ["-c", "/workspace/configs/config.yaml"]
