#!/usr/bin/env bash
# Redirect latency while 50 sign-ins run at once: argon2 runs on a bounded blocking pool, so a
# flood of sign-ins must not slow the redirects (goal: p99 at most 2x the p99 without them).
#
#   bash bench/signin_load.sh
#
# Knobs: DURATION (10s), SIGNINS (50 connections signing in, each again as soon as answered).
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10s}
SIGNINS=${SIGNINS:-50}
PORT=${PORT:-18291}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
command -v wrk >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; }
cargo build --release --quiet
BIN="$CARGO_TARGET_DIR/release/inklink"
WORK=$(mktemp -d)
SERVER=""
cleanup() { [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
export INKLINK_DATABASE_URL="sqlite://$WORK/bench.db?mode=rwc" INKLINK_LISTEN="127.0.0.1:$PORT" \
  INKLINK_LOG=error INKLINK_SPOOL_DIR="$WORK" INKLINK_ADMIN_PASSWORD=bench-password-1 \
  INKLINK_TRUSTED_PROXIES=127.0.0.1
"$BIN" migrate >/dev/null
CODE=$("$BIN" link add https://example.com/landing | sed 's|.*/||')
# One person per connection, each from an address of their own: every sign-in succeeds and
# passes the throttle (which holds one account from one address to 5 tries at a time), so each
# costs a full argon2 check.
for i in $(seq 1 "$SIGNINS"); do
  echo bench-password-1 | "$BIN" user add "user$i" --role operator >/dev/null
done
"$BIN" & SERVER=$!
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.1; done

# The sign-in form's token and its cookie, reused by every sign-in (each succeeds, so no
# throttle stops them: every one costs a full argon2 check).
curl -s -c "$WORK/jar" "http://127.0.0.1:$PORT/admin/login" -o "$WORK/login.html"
CSRF=$(sed -n 's/.*name="csrf" value="\([0-9a-f]*\)".*/\1/p' "$WORK/login.html")
COOKIE=$(awk '$6 == "inklink_login" { print $6 "=" $7 }' "$WORK/jar")
cat > "$WORK/signin.lua" <<LUA
local n = 0
request = function()
  n = n % $SIGNINS + 1
  return wrk.format("POST", "/admin/login", {
    ["Content-Type"] = "application/x-www-form-urlencoded",
    ["Cookie"] = "$COOKIE",
    ["X-Forwarded-For"] = "10.0.0." .. n,
  }, "csrf=$CSRF&username=user" .. n .. "&password=bench-password-1")
end
LUA
status=$(curl -s -o /dev/null -w '%{http_code}' -b "$COOKIE" -H 'X-Forwarded-For: 10.0.0.1' \
  --data "csrf=$CSRF&username=user1&password=bench-password-1" "http://127.0.0.1:$PORT/admin/login")
[ "$status" = 303 ] || { echo "the benchmark's sign-in failed with $status" >&2; exit 1; }

# "requests/s p50_ms p99_ms" of redirects.
measure() {
  wrk -t1 -c32 -d"$DURATION" --latency "http://127.0.0.1:$PORT/$CODE" | awk '
    function ms(v) { if (v ~ /us$/) return v * 0.001; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
    /Requests\/sec/ { rps = $2 } /^ +50%/ { p50 = ms($2) } /^ +99%/ { p99 = ms($2) }
    END { printf "%.0f %.3f %.3f\n", rps, p50, p99 }'
}
wrk -t1 -c32 -d3s "http://127.0.0.1:$PORT/$CODE" >/dev/null
read -r q_rps q_p50 q_p99 < <(measure)
wrk -t1 -c"$SIGNINS" -d"$((${DURATION%s} + 4))s" -s "$WORK/signin.lua" "http://127.0.0.1:$PORT/admin/login" > "$WORK/signins.txt" &
LOAD=$!
sleep 2
read -r l_rps l_p50 l_p99 < <(measure)
wait "$LOAD"
signins=$(awk '/requests in/ { total = $1 } /Non-2xx or 3xx/ { bad = $5 } END { print total - bad }' "$WORK/signins.txt")

echo "redirects (wrk -t1 -c32) with and without $SIGNINS parallel sign-ins"
printf '%-24s %12s %10s %10s\n' "" "requests/s" "p50 ms" "p99 ms"
printf '%-24s %12s %10s %10s\n' "no sign-ins" "$q_rps" "$q_p50" "$q_p99"
printf '%-24s %12s %10s %10s\n' "$SIGNINS sign-ins at once" "$l_rps" "$l_p50" "$l_p99"
python3 -c "print(f'p99 ratio: {$l_p99 / $q_p99:.2f}x (goal: at most 2x); successful sign-ins meanwhile: $signins')"
