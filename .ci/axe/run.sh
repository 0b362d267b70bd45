#!/usr/bin/env bash
# axe-core over every page of a live server with a little data, light and dark. Called by
# .ci/run; needs the debug binary built, Debian's chromium, Node.js and npm.
set -euo pipefail
cd "$(dirname "$0")"
npm install --no-audit --no-fund --silent >/dev/null
work=$(mktemp -d)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export INKLINK_DATABASE_URL="sqlite://$work/axe.db?mode=rwc" INKLINK_LISTEN="127.0.0.1:$port" \
  INKLINK_SPOOL_DIR="$work" INKLINK_LOG=warn INKLINK_ADMIN_PASSWORD=axe-admin-password \
  INKLINK_GEOIP_DB="$(realpath ../../tests/fixtures/geoip-test.mmdb)" INKLINK_TRUSTED_PROXIES=127.0.0.1 \
  INKLINK_STATS_INTERVAL=1
bin=$(realpath "$CARGO_TARGET_DIR/debug/inklink")
"$bin" migrate >/dev/null
"$bin" serve & server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 1 60); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 1; done
"$bin" link add https://example.com/spring --code axe1 --tag spring --description "Spring SMS" >/dev/null
"$bin" link add https://example.com/off --code axe-off >/dev/null
"$bin" link disable axe-off >/dev/null
echo 8888 | "$bin" link add https://example.com/pw --code axe-pw --password - >/dev/null
"$bin" link add https://example.com/wx --code axe-wx --in-app-page wechat >/dev/null
"$bin" link add https://example.com/soon --code axe-soon --valid-from 2099-01-01T00:00:00Z >/dev/null
# Visits from Beijing, Guangdong and California (the GeoIP fixture): the dashboards draw maps.
for from in 36.110.7.1 113.108.20.2 203.0.113.9; do
  curl -s -o /dev/null -A "Mozilla/5.0 (Windows NT 10.0) Chrome/124.0" -H "X-Forwarded-For: $from" "http://127.0.0.1:$port/axe1"
done
# A webhook, made through the API with a key the CLI issues; its deliveries page lists a test.
key=$("$bin" apikey add axe --role admin | grep -o 'ik_[A-Za-z0-9_-]*' | head -1)
curl -sf -o /dev/null -H "authorization: Bearer $key" -H 'content-type: application/json' \
  -d '{"url": "https://crm.example.com/hooks", "events": ["link.created"], "description": "CRM"}' \
  "http://127.0.0.1:$port/api/v1/webhooks"
curl -sf -o /dev/null -X POST -H "authorization: Bearer $key" "http://127.0.0.1:$port/api/v1/webhooks/1/test"
# A campaign batch of two recipients, for its funnel page.
batch=$(curl -sf -H "authorization: Bearer $key" -H 'content-type: application/json' \
  -d '{"name": "双十一", "url": "https://example.com/sale", "template": "{link}", "recipients": [{"phone": "13800000001"}, {"phone": "13800000002"}]}' \
  "http://127.0.0.1:$port/api/v1/batches" | python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')
sleep 2
node check.mjs "http://127.0.0.1:$port" admin axe-admin-password "/admin/batches/$batch"
