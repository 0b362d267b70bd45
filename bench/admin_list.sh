#!/usr/bin/env bash
# Times the admin links list at a large number of links (default 1,000,000) on SQLite.
#   bash bench/admin_list.sh            # 1,000,000 links
#   LINKS=100000 bash bench/admin_list.sh
# Rows are seeded straight into the database (this measures the list, not link creation);
# the server is the release binary, timed through HTTP with curl (median of 5 requests).
set -euo pipefail
cd "$(dirname "$0")/.."
LINKS=${LINKS:-1000000}
PORT=${PORT:-18181}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
cargo build --release --quiet
BIN="$CARGO_TARGET_DIR/release/inklink"
WORK=$(mktemp -d)
DB="$WORK/bench.db"
export INKLINK_DATABASE_URL="sqlite://$DB?mode=rwc" INKLINK_LISTEN="127.0.0.1:$PORT" INKLINK_LOG=warn
PID=""
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

# Opening the database migrates it and adds localhost:$PORT as the default domain.
"$BIN" migrate >/dev/null
"$BIN" link add https://example.com/warm-up >/dev/null
echo "seeding $LINKS links..."
python3 - "$DB" "$LINKS" <<'PY'
import sqlite3, sys, hashlib
db, n = sys.argv[1], int(sys.argv[2])
con = sqlite3.connect(db)
con.execute("PRAGMA journal_mode=WAL"); con.execute("PRAGMA synchronous=OFF")
domain = con.execute("SELECT id FROM domain_conf WHERE is_default = 1").fetchone()[0]
def rows(start, stop):
    for i in range(start, stop):
        url = f"https://example.com/campaign/{i}?utm_source=sms"
        expires = f"2027-{1 + i % 12:02d}-{1 + i % 28:02d} 00:00:00" if i % 10 == 0 else None
        yield (f"b{i:07d}", url, hashlib.sha256(url.encode()).hexdigest(), domain,
               f"bulk row {i}", "active" if i % 20 else "disabled", expires, "sequence",
               "bench", "bench", "2026-11-01 00:00:00", "2026-11-01 00:00:00", 0, 1)
for start in range(0, n, 100_000):
    con.executemany(
        "INSERT INTO url_map (compression_code, long_url, long_url_digest, domain_id, description,"
        " url_status, expires_at, strategy, creator, editor, created_at, edited_at, deleted, version)"
        " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)", rows(start, min(n, start + 100_000)))
    con.commit()
con.execute("ANALYZE"); con.commit()
PY

INKLINK_ADMIN_PASSWORD=bench-password "$BIN" & PID=$!
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.1; done
JAR="$WORK/cookies"
csrf=$(curl -s -c "$JAR" -b "$JAR" "http://127.0.0.1:$PORT/admin/login" | grep -o 'name="csrf" value="[^"]*"' | cut -d'"' -f4)
curl -s -o /dev/null -c "$JAR" -b "$JAR" --data-urlencode "csrf=$csrf" -d username=admin -d password=bench-password "http://127.0.0.1:$PORT/admin/login"

median_ms() {
  local path=$1 times=()
  for _ in 1 2 3 4 5; do
    times+=("$(curl -s -o /dev/null -w '%{http_code} %{time_total}' -b "$JAR" "http://127.0.0.1:$PORT$path")")
  done
  local status=${times[0]%% *}
  [ "$status" = 200 ] || { echo "FAILED: $path answered $status" >&2; exit 1; }
  printf '%s\n' "${times[@]}" | awk '{print $2 * 1000}' | sort -n | sed -n 3p
}

printf '\n%-52s %10s\n' "admin list page ($LINKS links, SQLite)" "median ms"
for path in \
  "/admin/links" \
  "/admin/links?before=$((LINKS / 2))" \
  "/admin/links?before=50" \
  "/admin/links?status=disabled" \
  "/admin/links?status=expired" \
  "/admin/links?sort=expiry" \
  "/admin/links?creator=bench" \
  "/admin/links?q=campaign/999999" \
  "/admin/links?q=no-such-text-anywhere"; do
  printf '%-52s %10.1f\n' "$path" "$(median_ms "$path")"
done
