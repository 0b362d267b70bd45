#!/usr/bin/env bash
# Links per second through POST /api/v1/links/batch: LINKS (100000) new links in batches of
# 1,000, sent one after another by one client, on a fresh database.
#
#   bash bench/api_batch.sh                                     # SQLite
#   bash bench/api_batch.sh --db postgres://postgres@127.0.0.1:5432/postgres
#   bash bench/api_batch.sh --db mysql://root@127.0.0.1:3306/mysql
set -euo pipefail
cd "$(dirname "$0")/.."
SERVER_URL=""
while [ $# -gt 0 ]; do
  case $1 in
    --db) SERVER_URL=$2; shift 2 ;;
    *) echo "usage: $0 [--db postgres://...|mysql://...]" >&2; exit 2 ;;
  esac
done
LINKS=${LINKS:-100000}
PORT=${PORT:-18291}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
cargo build --release --quiet
BIN="$(realpath "$CARGO_TARGET_DIR/release/inklink")"
WORK=$(mktemp -d)
PID="" BENCH_DB="inklink_batch_$$"
cleanup() {
  [ -n "$PID" ] && kill "$PID" 2>/dev/null || true
  wait 2>/dev/null || true
  case $SERVER_URL in
    postgres*) psql -q "$SERVER_URL" -c "DROP DATABASE IF EXISTS $BENCH_DB WITH (FORCE)" >/dev/null 2>&1 || true ;;
    mysql*) mysql -h 127.0.0.1 -u root -e "DROP DATABASE IF EXISTS $BENCH_DB" >/dev/null 2>&1 || true ;;
  esac
  rm -rf "$WORK"
}
trap cleanup EXIT
case $SERVER_URL in
  "") DB_URL="sqlite://$WORK/batch.db?mode=rwc"; BACKEND=SQLite ;;
  postgres*) psql -q "$SERVER_URL" -c "CREATE DATABASE $BENCH_DB" >/dev/null
             DB_URL="${SERVER_URL%/*}/$BENCH_DB"; BACKEND=PostgreSQL ;;
  mysql*) mysql -h 127.0.0.1 -u root -e "CREATE DATABASE $BENCH_DB CHARACTER SET utf8mb4"
          DB_URL="${SERVER_URL%/*}/$BENCH_DB"; BACKEND=MariaDB ;;
  *) echo "--db takes a postgres:// or mysql:// URL" >&2; exit 2 ;;
esac
cd "$WORK"
export INKLINK_DATABASE_URL="$DB_URL" INKLINK_LISTEN="127.0.0.1:$PORT" INKLINK_LOG=warn \
  INKLINK_SPOOL_DIR="$WORK" INKLINK_ADMIN_PASSWORD=bench-admin-password INKLINK_API_RATE_LIMIT=100000
"$BIN" migrate >/dev/null
KEY=$("$BIN" apikey add bench --role admin)
"$BIN" & PID=$!
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.1; done
python3 - "$LINKS" <<'PY'
import json, sys
links = int(sys.argv[1])
for batch in range((links + 999) // 1000):
    items = [{"url": f"https://example.com/campaign/{batch}/{i}?utm_source=sms", "description": f"batch {batch}"}
             for i in range(min(1000, links - batch * 1000))]
    with open(f"batch-{batch:05}.json", "w") as f:
        json.dump({"items": items}, f)
PY
start=$(date +%s.%N)
for file in batch-*.json; do
  curl -sf -X POST "http://127.0.0.1:$PORT/api/v1/links/batch" -H "Authorization: Bearer $KEY" \
    -H 'Content-Type: application/json' --data-binary "@$file" -o "$file.out"
done
end=$(date +%s.%N)
python3 - "$start" "$end" "$LINKS" "$BACKEND" <<'PY'
import glob, json, sys
start, end, links, backend = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
created = sum(1 for f in glob.glob("*.out") for r in json.load(open(f))["results"] if r["status"] == 201)
seconds = end - start
print(f"POST /api/v1/links/batch on {backend}: {created} of {links} links created in {seconds:.1f} s = {created / seconds:.0f} links/s")
assert created == links, "every link was created"
PY
