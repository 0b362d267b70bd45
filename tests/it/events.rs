//! Getting the raw clicks out (issue 41): `GET /api/v1/events` and `inklink events export`
//! give every stored click of the range once, with readable fields, resumable by a cursor,
//! an operator's key only its own links'.

use crate::analytics::wait_written;
use crate::api::Api;
use crate::cli::{inklink_live, ok};
use crate::support::{TestApp, TestDb, spawn_on};
use inklink::rules::Role;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

const DESKTOP: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36";
const BOT: &str = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
/// A user agent JSON and CSV must escape.
const QUOTED: &str = r#"Mozilla/5.0 "Quoted", \back\ slash; =formula"#;

async fn raw(api: &Api<'_>, path: &str) -> (u16, String, String) {
    let mut response = api.request("GET", path).send().await.unwrap();
    let status = response.status().as_u16();
    let kind = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let body = response.body().limit(64 << 20).await.unwrap();
    (status, kind, String::from_utf8(body.to_vec()).unwrap())
}

fn lines(body: &str) -> Vec<Value> {
    body.lines()
        .map(|line| serde_json::from_str(line).expect("a JSON object a line"))
        .collect()
}

async fn visit(app: &TestApp, path: &str, agent: &str) {
    let answer = app
        .client
        .get(app.url(path))
        .insert_header(("user-agent", agent))
        .insert_header(("referer", "https://weibo.com/post/1"))
        .send()
        .await
        .unwrap();
    assert!(answer.status().is_redirection() || answer.status().as_u16() == 404);
}

#[actix_web::test]
async fn every_stored_click_comes_out_once_with_readable_fields_and_resumes_by_cursor() {
    let db = Arc::new(TestDb::create().await);
    let app = spawn_on(db.clone(), &[]).await;
    let admin = Api::with_role(&app, "exporter", Role::Admin).await;
    let operator = Api::with_role(&app, "crm", Role::Operator).await;
    let mine = operator
        .call(
            "POST",
            "/api/v1/links",
            Some(json!({"url": "https://example.com/mine", "code": "mine", "tags": ["wave"]})),
        )
        .await;
    assert_eq!(mine.status, 201);
    let theirs = admin
        .call(
            "POST",
            "/api/v1/links",
            Some(json!({"url": "https://example.com/theirs", "code": "theirs"})),
        )
        .await;
    assert_eq!(theirs.status, 201);
    let mut expected: BTreeMap<&str, usize> = BTreeMap::new();
    for n in 0..7 {
        visit(&app, "/mine?utm_source=sms", DESKTOP).await;
        *expected.entry("mine").or_default() += 1;
        if n % 2 == 0 {
            visit(&app, "/theirs", BOT).await;
            *expected.entry("theirs").or_default() += 1;
        }
    }
    visit(&app, "/nosuchcode", DESKTOP).await;
    *expected.entry("nosuchcode").or_default() += 1;
    visit(&app, "/theirs", QUOTED).await;
    *expected.entry("theirs").or_default() += 1;
    let total: usize = expected.values().sum();
    wait_written(&app, total as u64).await;
    let today = inklink::stats::days::today(app.core.settings.timezone);

    // Everything, as NDJSON: each click once, with its fields.
    let (status, kind, body) = raw(&admin, &format!("/api/v1/events?from={today}")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(kind, "application/x-ndjson");
    let all = lines(&body);
    assert_eq!(all.len(), total);
    let mut counted: BTreeMap<String, usize> = BTreeMap::new();
    for line in &all {
        *counted
            .entry(line["code"].as_str().unwrap().to_owned())
            .or_default() += 1;
        assert!(
            chrono::DateTime::parse_from_rfc3339(line["time"].as_str().unwrap()).is_ok(),
            "{line}"
        );
        assert_eq!(line["address"], "127.0.0.1");
        assert!(line["cursor"].is_string());
    }
    let expected_owned: BTreeMap<String, usize> =
        expected.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    assert_eq!(counted, expected_owned);
    let first_mine = all.iter().find(|l| l["code"] == "mine").unwrap();
    assert!(first_mine["link_id"].is_i64(), "{first_mine}");
    assert_eq!(first_mine["bot"], false);
    assert_eq!(first_mine["outcome"], "redirected");
    assert_eq!(first_mine["query"], "utm_source=sms");
    assert_eq!(first_mine["referrer"], "https://weibo.com/post/1");
    assert_eq!(first_mine["browser"], "Chrome");
    let bot = all.iter().find(|l| l["code"] == "theirs").unwrap();
    assert_eq!(bot["bot"], true);
    assert!(all.iter().any(|l| l["user_agent"] == QUOTED), "{body}");
    let unknown = all.iter().find(|l| l["code"] == "nosuchcode").unwrap();
    assert_eq!(unknown["outcome"], "unknown");
    assert!(unknown["link_id"].is_null());

    // Read a few clicks a statement, each page read while the one before is written out:
    // the same lines, in the same order, and the CSV's rows the same clicks.
    let filter = |link| {
        let actor = inklink::services::Actor::Cli;
        inklink::services::events::ExportFilter::new(today, today, link, None, &actor).unwrap()
    };
    let tz = app.core.settings.timezone;
    let paged = |format, size| {
        let pages = inklink::services::events::stream_by(
            app.core.db.clone(),
            tz,
            filter(None),
            None,
            format,
            size,
        );
        async move {
            let pages = futures_util::StreamExt::collect::<Vec<_>>(pages).await;
            pages.into_iter().map(Result::unwrap).collect::<String>()
        }
    };
    use inklink::services::events::Format;
    for size in [1, 2, 3] {
        let text = paged(Format::Ndjson, size).await;
        assert_eq!(lines(&text), all, "{size} a page");
    }
    let csv = paged(Format::Csv, 2).await;
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    assert_eq!(rows.len(), all.len());
    for (row, line) in rows.iter().zip(&all) {
        assert!(row.ends_with(line["cursor"].as_str().unwrap()), "{row}");
    }
    let quoted = rows.iter().find(|r| r.contains("Quoted")).unwrap();
    assert!(
        quoted.contains(r#","Mozilla/5.0 ""Quoted"", \back\ slash; =formula","#),
        "{quoted}"
    );

    // Resumed after the third line: the rest, in the same order.
    let cursor = all[2]["cursor"].as_str().unwrap();
    let (_, _, rest) = raw(
        &admin,
        &format!("/api/v1/events?from={today}&after={cursor}"),
    )
    .await;
    assert_eq!(lines(&rest), all[3..].to_vec());

    // One link, one tag; CSV for spreadsheets.
    let (_, _, one) = raw(&admin, &format!("/api/v1/events?from={today}&link=theirs")).await;
    assert_eq!(lines(&one).len(), expected["theirs"]);
    let (_, kind, csv) = raw(
        &admin,
        &format!("/api/v1/events?from={today}&to={today}&tag=wave&format=csv"),
    )
    .await;
    assert!(kind.starts_with("text/csv"));
    assert!(csv.starts_with("\u{feff}time,code,link_id,"), "{csv}");
    assert_eq!(csv.lines().count(), 1 + expected["mine"]);

    // An operator's key: the clicks of its own links only.
    let (_, _, own) = raw(&operator, &format!("/api/v1/events?from={today}")).await;
    let own = lines(&own);
    assert_eq!(own.len(), expected["mine"]);
    assert!(own.iter().all(|l| l["code"] == "mine"));

    // Bad input: a clear 400 (or 404), never a 500.
    for (query, field) in [
        ("from=yesterday", "from"),
        ("format=xml", "format"),
        ("after=garbage", "after"),
        ("from=2026-02-01&to=2026-01-01", "from"),
        ("from=2020-01-01&to=2026-01-01", "from"),
        ("tag=a%7Cb", "tag"),
    ] {
        let reply = admin
            .call("GET", &format!("/api/v1/events?{query}"), None)
            .await;
        assert_eq!(reply.status, 400, "{query}: {}", reply.body);
        assert_eq!(reply.body["error"]["field"], field, "{query}");
    }
    let missing = admin.call("GET", "/api/v1/events?link=nope", None).await;
    assert_eq!(missing.status, 404);

    // The command line gives the same clicks.
    let cli = ok(inklink_live(&db, &["events", "export", "--from", &today.to_string()]).await);
    assert_eq!(lines(&cli), all);
    let cli_csv = ok(inklink_live(
        &db,
        &[
            "events",
            "export",
            "--from",
            &today.to_string(),
            "--format",
            "csv",
            "--link",
            "mine",
        ],
    )
    .await);
    assert_eq!(cli_csv.lines().count(), 1 + expected["mine"]);
    let resumed = ok(inklink_live(
        &db,
        &[
            "events",
            "export",
            "--from",
            &today.to_string(),
            "--after",
            cursor,
        ],
    )
    .await);
    assert_eq!(lines(&resumed), all[3..].to_vec());
}

/// Issue 41: the statistics API has what the dashboards have (a link's, a tag's links' and
/// every link's days, distinct totals, and each dimension's breakdown) and says the same.
#[actix_web::test]
async fn the_stats_api_gives_what_the_dashboards_show_for_a_link_a_tag_and_every_link() {
    let db = Arc::new(TestDb::create().await);
    let app = spawn_on(db.clone(), &[]).await;
    let api = Api::with_role(&app, "bi", Role::Operator).await;
    for (code, tags) in [
        ("s1", json!(["wave"])),
        ("s2", json!(["wave"])),
        ("s3", json!([])),
    ] {
        let created = api
            .call(
                "POST",
                "/api/v1/links",
                Some(json!({"url": format!("https://example.com/{code}"), "code": code, "tags": tags})),
            )
            .await;
        assert_eq!(created.status, 201);
    }
    let phone = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.2 Mobile/15E148 Safari/604.1";
    let mut clicks = 0;
    for n in 0..12 {
        let code = ["s1", "s2", "s3"][n % 3];
        let agent = if n % 2 == 0 { DESKTOP } else { phone };
        visit(&app, &format!("/{code}?utm_source=src{}", n % 4), agent).await;
        clicks += 1;
    }
    wait_written(&app, clicks).await;
    inklink::stats::tally::drain(&app.core.db, app.core.settings.timezone)
        .await
        .unwrap();
    let mut browser = crate::admin::signed_in(&app).await;
    for (api_path, page) in [
        ("/api/v1/links/s1/stats", "/admin/links/s1/stats"),
        ("/api/v1/tags/wave/stats", "/admin/tags/wave/stats"),
        ("/api/v1/stats", "/admin/dashboard"),
    ] {
        let shown = browser.get(page).await.body;
        for dimension in ["browser", "os", "device", "utm_source", "referrer"] {
            let reply = api
                .call("GET", &format!("{api_path}?dimension={dimension}"), None)
                .await;
            assert_eq!(reply.status, 200, "{api_path}: {}", reply.body);
            for total in ["pv", "uv", "ip", "effective", "ineffective"] {
                let needle = format!(
                    "id=\"total-{total}\" data-value=\"{}\"",
                    reply.body["total"][total]
                );
                assert!(shown.contains(&needle), "{api_path} {total}: {needle}");
            }
            let values = reply.body["breakdown"]["values"].as_array().unwrap();
            assert!(!values.is_empty(), "{api_path} {dimension}");
            for value in values {
                let label = match value["value"].as_str().unwrap() {
                    "" if dimension == "referrer" => "(direct)",
                    "" => "(unknown)",
                    other => other,
                };
                let row = format!(
                    "<td>{label}</td><td>{}</td><td>{}</td>",
                    value["pv"], value["uv"]
                );
                assert!(shown.contains(&row), "{api_path} {dimension}: {row}");
            }
        }
    }
    let hours = api.call("GET", "/api/v1/stats?dimension=hour", None).await;
    let per_hour: i64 = hours.body["breakdown"]["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["pv"].as_i64().unwrap())
        .sum();
    assert_eq!(per_hour, hours.body["total"]["pv"].as_i64().unwrap());
    let plain = api.call("GET", "/api/v1/stats", None).await;
    assert!(plain.body.get("breakdown").is_none());
    // A tag's breakdown is its links' added up (UV summed over links' days, as over days).
    let values = |body: &serde_json::Value| -> Vec<(String, i64, i64)> {
        let mut out: Vec<(String, i64, i64)> = (body["breakdown"]["values"].as_array().unwrap())
            .iter()
            .map(|v| {
                let text = v["value"].as_str().unwrap().to_owned();
                (text, v["pv"].as_i64().unwrap(), v["uv"].as_i64().unwrap())
            })
            .collect();
        out.sort();
        out
    };
    let mut added: std::collections::BTreeMap<String, (i64, i64)> = Default::default();
    for code in ["s1", "s2"] {
        let path = format!("/api/v1/links/{code}/stats?dimension=utm_source");
        for (text, pv, uv) in values(&api.call("GET", &path, None).await.body) {
            let sum = added.entry(text).or_default();
            (sum.0, sum.1) = (sum.0 + pv, sum.1 + uv);
        }
    }
    let tag = api.call("GET", "/api/v1/tags/wave/stats?dimension=utm_source", None);
    let added: Vec<(String, i64, i64)> = (added.into_iter())
        .map(|(text, (pv, uv))| (text, pv, uv))
        .collect();
    assert_eq!(values(&tag.await.body), added);
    assert_eq!(added.len(), 4, "{added:?}");
    for (path, field) in [
        ("/api/v1/stats?dimension=colour", "dimension"),
        ("/api/v1/tags/a%7Cb/stats", "tag"),
        ("/api/v1/stats?from=2026-13-01", "from"),
    ] {
        let reply = api.call("GET", path, None).await;
        assert_eq!(reply.status, 400, "{path}: {}", reply.body);
        assert_eq!(reply.body["error"]["field"], field, "{path}");
    }
}

/// Pages longer than one of SQLite's packed bunches (100 clicks): the next page is asked for
/// from the end of this one's answer before it is parsed, so every page size — a bunch and
/// one click more, a page ending mid-bunch, all at once — gives the same lines, each click
/// once, oldest first.
#[actix_web::test]
async fn pages_of_many_bunches_give_every_click_once_in_order() {
    use futures_util::StreamExt;
    use inklink::services::events::{ExportFilter, Format, stream_by};
    let db = TestDb::create().await;
    let (core, link) = crate::event_insert::core_with_link(&db, "https://example.com/many").await;
    let tz = core.settings.timezone;
    let today = inklink::stats::days::today(tz);
    let start = inklink::stats::days::day_start(today, tz).unwrap();
    const CLICKS: usize = 650;
    let rows = crate::event_insert::rows(CLICKS, start, link);
    crate::event_insert::store_until_written(&core.db, &rows).await;
    let export = |size: u64| {
        let filter = ExportFilter::new(today, today, None, None, &inklink::services::Actor::Cli);
        let pages = stream_by(
            core.db.clone(),
            tz,
            filter.unwrap(),
            None,
            Format::Ndjson,
            size,
        );
        async move {
            let pages: Vec<_> = pages.collect().await;
            pages.into_iter().map(Result::unwrap).collect::<String>()
        }
    };
    let whole = lines(&export(10_000).await);
    assert_eq!(whole.len(), CLICKS);
    let cursors: Vec<&str> = whole
        .iter()
        .map(|l| l["cursor"].as_str().unwrap())
        .collect();
    let times: Vec<&str> = whole.iter().map(|l| l["time"].as_str().unwrap()).collect();
    assert!(times.windows(2).all(|t| t[0] <= t[1]), "oldest first");
    let distinct: std::collections::BTreeSet<&str> = cursors.iter().copied().collect();
    assert_eq!(distinct.len(), CLICKS, "each click once");
    for size in [100, 101, 250, 649, 650] {
        assert_eq!(lines(&export(size).await), whole, "{size} a page");
    }
}
