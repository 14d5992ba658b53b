#!/bin/bash
# Entrypoint of the CART image.
#
#   docker-entrypoint.sh [proxy options]   run the proxy (java -jar cart-proxy.jar [proxy options])
#   docker-entrypoint.sh --healthcheck     the image's HEALTHCHECK: exit 0 when GET /health answers 200
#                                          on 127.0.0.1:$CART_HEALTH_PORT (default 6700)
#
# Running requires an open-file limit of at least 65535 (a router holding thousands of concurrent
# streams runs out of file descriptors long before it runs out of CPU): the soft limit is raised up to
# the hard limit when it can be; below the minimum the container refuses to start.
set -euo pipefail

if [ "${1:-}" = "--healthcheck" ]; then
  # bash's /dev/tcp: the runtime image needs no HTTP client for the probe
  exec 3<>"/dev/tcp/127.0.0.1/${CART_HEALTH_PORT:-6700}"
  printf 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' >&3
  IFS= read -r -t 4 status <&3
  case "$status" in
    "HTTP/1.1 200 "*) exit 0 ;;
    *) echo "cache-aware-router: /health answered: ${status:-nothing}" >&2; exit 1 ;;
  esac
fi

required=65535
current="$(ulimit -n)"
if [ "$current" != "unlimited" ] && [ "$current" -lt "$required" ]; then
  hard="$(ulimit -Hn)"
  if [ "$hard" = "unlimited" ] || [ "$hard" -ge "$required" ]; then
    ulimit -n "$required" 2>/dev/null || true
    current="$(ulimit -n)"
  fi
fi
if [ "$current" != "unlimited" ] && [ "$current" -lt "$required" ]; then
  echo "cache-aware-router: open-file limit is $current; at least $required is required." >&2
  echo "  run the container with: --ulimit nofile=$required:$required" >&2
  exit 1
fi

# shellcheck disable=SC2086 # JAVA_OPTS is a list of options
exec java ${JAVA_OPTS:-} -jar /opt/cart/cart-proxy.jar "$@"
