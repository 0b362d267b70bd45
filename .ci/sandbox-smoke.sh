#!/usr/bin/env bash
# inklink under deploy/inklink.service's system call filter (.ci/sandboxed.py): `check`, then
# `serve`, which must answer, redirect a browser's click, count it and stop on SIGTERM with 0.
set -euo pipefail
bin=$1
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export INKLINK_DATABASE_URL="sqlite://$work/inklink.db?mode=rwc" INKLINK_LISTEN="127.0.0.1:$port" \
  INKLINK_SPOOL_DIR="$work" INKLINK_LOG=warn INKLINK_ADMIN_PASSWORD=sandbox-admin-1
cd "$work"
filter=(python3 "$here/sandboxed.py" "$here/../deploy/inklink.service" --)
"${filter[@]}" "$bin" check
# sandboxed.py execs the server, so $! is the server's own process.
"${filter[@]}" "$bin" serve & server=$!
trap 'kill $server 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 1 60); do
  curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break
  kill -0 $server 2>/dev/null || { wait $server; echo "FATAL: serve died under the filter (status $?)" >&2; exit 1; }
  sleep 0.5
done
key=$("$bin" apikey add sandbox --role admin)
short=$("$bin" link add https://example.com/sandboxed)
code=${short##*/}
browser='Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36'
status=$(curl -s -o /dev/null -w '%{http_code}' -A "$browser" "http://127.0.0.1:$port/$code")
[ "$status" = 302 ] || { echo "FATAL: the redirect answered $status" >&2; exit 1; }
counted=
for _ in $(seq 1 60); do
  stats=$(curl -sf -H "Authorization: Bearer $key" "http://127.0.0.1:$port/api/v1/links/$code/stats")
  if python3 -c 'import json, sys; sys.exit(json.loads(sys.argv[1])["total"]["pv"] != 1)' "$stats"; then
    counted=yes; break
  fi
  sleep 0.5
done
[ -n "$counted" ] || { echo "FATAL: the click was not counted under the filter: $stats" >&2; exit 1; }
kill -TERM $server
wait $server || { echo "FATAL: serve exited with $? on SIGTERM under the filter" >&2; exit 1; }
trap 'rm -rf "$work"' EXIT
echo "serve ran under the unit's filter: started, redirected, counted a click, stopped with 0"
