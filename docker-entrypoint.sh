#!/bin/sh
# Entrypoint of the CART image: requires an open-file limit of at least 65535 (a router holding
# thousands of concurrent streams runs out of file descriptors long before it runs out of CPU).
# Raises the soft limit up to the hard limit when it can; refuses to start below the minimum.
set -eu

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

exec java ${JAVA_OPTS:-} -jar /opt/cart/cart-proxy.jar "$@"
