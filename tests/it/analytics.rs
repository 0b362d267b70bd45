//! Click analytics: events are enriched and stored, days are aggregated exactly (also across
//! midnight in the stats time zone), and dashboards show the stored aggregates.

use crate::admin::signed_in;
use crate::support::{TestApp, create_link, page_view, spawn_app_with};
use chrono::{Duration, NaiveDate, NaiveDateTime};
use inklink::clicks::ClickEvent;
use inklink::db::entities::url_map;
use inklink::rules::Outcome;
use inklink::stats::days;
use inklink::stats::dimension::{ALL_LINKS, Dimension, UNKNOWN_LINK};
use inklink::stats::report::{self, Scope};
use inklink::stats::{recount, retention, tally};
use sea_orm::{ActiveModelTrait, ConnectionTrait, EntityTrait, Set, Statement};
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::sync::atomic::Ordering::Relaxed;

pub const GEOIP: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/geoip-test.mmdb"
);

/// A user agent and what the test knows it to be (not asked of the code under test).
struct Agent {
    ua: &'static str,
    browser: &'static str,
    os: &'static str,
    device: &'static str,
    bot: bool,
}

const fn person(
    ua: &'static str,
    browser: &'static str,
    os: &'static str,
    device: &'static str,
) -> Agent {
    Agent {
        ua,
        browser,
        os,
        device,
        bot: false,
    }
}

const fn bot(ua: &'static str) -> Agent {
    Agent {
        ua,
        browser: "",
        os: "",
        device: "bot",
        bot: true,
    }
}

const AGENTS: &[Agent] = &[
    person(
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
        "Chrome",
        "Windows",
        "desktop",
    ),
    person(
        "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Safari/605.1.15",
        "Safari",
        "macOS",
        "desktop",
    ),
    person(
        "Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0",
        "Firefox",
        "Linux",
        "desktop",
    ),
    person(
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 MicroMessenger/8.0.47(0x18002f2f) NetType/WIFI Language/zh_CN",
        "WeChat",
        "iOS",
        "mobile",
    ),
    person(
        "Mozilla/5.0 (Linux; Android 13; V2055A Build/TP1A.220624.014; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/116.0.0.0 Mobile Safari/537.36 XWEB/1160065 MMWEBSDK/20231202 MMWEBID/2247 MicroMessenger/8.0.47.2560(0x28002F30) WeChat/arm64 Weixin NetType/WIFI Language/zh_CN ABI/arm64",
        "WeChat",
        "Android",
        "mobile",
    ),
    person(
        "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.6099.144 Mobile Safari/537.36",
        "Chrome",
        "Android",
        "mobile",
    ),
    person(
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.2 Mobile/15E148 Safari/604.1",
        "Safari",
        "iOS",
        "mobile",
    ),
    person(
        "Mozilla/5.0 (iPad; CPU OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.2 Mobile/15E148 Safari/604.1",
        "Safari",
        "iOS",
        "tablet",
    ),
    bot("Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"),
    bot("Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)"),
    bot("Mozilla/5.0 (compatible; Baiduspider/2.0; +http://www.baidu.com/search/spider.html)"),
    bot("facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)"),
    bot("TelegramBot (like TwitterBot)"),
    bot("Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)"),
    bot("WhatsApp/2.23.20.0 A"),
    bot("Twitterbot/1.0"),
];

/// Address prefixes and the place the fixture database gives them, in zh-CN (Tokyo's city
/// has no Chinese name there: English is the fallback).
const PLACES: &[(&str, &str, &str, &str)] = &[
    ("203.0.113.", "美国", "加利福尼亚州", "旧金山"),
    ("198.51.100.", "德国", "柏林", "柏林"),
    ("192.0.2.", "日本", "东京都", "Tokyo"),
    ("36.110.7.", "中国", "北京市", "北京"),
    ("116.228.1.", "中国", "上海市", "上海"),
    ("113.108.20.", "中国", "广东省", "深圳"),
    ("58.100.3.", "中国", "浙江省", "杭州"),
    ("100.64.0.", "新加坡", "", ""),
    ("10.9.8.", "", "", ""),
];

const REFERERS: &[(Option<&str>, &str)] = &[
    (None, ""),
    (Some("https://weixin.qq.com/s/abc"), "weixin.qq.com"),
    (Some("https://www.google.com/search?q=x"), "www.google.com"),
    (Some("android-app://com.tencent.mm/"), "com.tencent.mm"),
];

/// Query strings visitors bring on the short URL, and the campaign values they stand for.
/// A query string, and the campaign values it stands for.
type Query = (
    Option<&'static str>,
    &'static [(&'static str, &'static str)],
);

const QUERIES: &[Query] = &[
    (None, &[]),
    (None, &[]),
    (
        Some("utm_source=wechat&utm_medium=social"),
        &[("utm_source", "wechat"), ("utm_medium", "social")],
    ),
    (
        Some("utm_source=sms&utm_campaign=%E5%8F%8C%E5%8D%81%E4%B8%80&utm_source=ignored"),
        &[("utm_source", "sms"), ("utm_campaign", "双十一")],
    ),
    (Some("channel=+ad-1+&x=2"), &[("channel", "ad-1")]),
    (
        Some("utm_source=%E5%BE%AE%E5%8D%9A&utm_medium="),
        &[("utm_source", "微博")],
    ),
];

/// A deterministic pseudo-random sequence (the test must be reproducible).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % below
    }
}

/// One synthetic click and everything the test expects of it.
pub struct Click {
    pub event: ClickEvent,
    /// Day in Asia/Shanghai, computed with the fixed +08:00 offset (no DST there).
    day: NaiveDate,
    link: i64,
    counted: bool,
    visitor: (IpAddr, &'static str),
    place: (&'static str, &'static str, &'static str),
    agent: &'static Agent,
    referrer: &'static str,
    /// The campaign values of its query string.
    params: &'static [(&'static str, &'static str)],
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Expected {
    pv: i64,
    uv: BTreeSet<(IpAddr, &'static str)>,
    ip: BTreeSet<IpAddr>,
    effective: i64,
    ineffective: i64,
}

type Row = (i64, i64, i64, i64, i64);
type BreakdownKey = (NaiveDate, i64, String, String);
type Visitor = (IpAddr, &'static str);
/// code, link id, status, reason, query string
type StoredEvent = (String, Option<i64>, String, Option<String>, Option<String>);

impl Expected {
    fn add(&mut self, click: &Click) {
        if click.event.outcome == Outcome::Redirected {
            self.effective += 1;
        } else {
            self.ineffective += 1;
        }
        if click.counted {
            self.pv += 1;
            self.uv.insert(click.visitor);
            self.ip.insert(click.visitor.0);
        }
    }

    fn row(&self) -> Row {
        (
            self.pv,
            self.uv.len() as i64,
            self.ip.len() as i64,
            self.effective,
            self.ineffective,
        )
    }
}

pub fn synthesize(links: &[(i64, String)], count: usize) -> Vec<Click> {
    let mut rng = Lcg(20261121);
    // Local midnights of 2026-11-02 and 2026-11-03 in Shanghai are 16:00 UTC the day before.
    let first_day = NaiveDate::from_ymd_opt(2026, 11, 1).unwrap();
    let start_utc = first_day.and_hms_opt(0, 0, 0).unwrap() - Duration::hours(8);
    let midnights = [
        NaiveDate::from_ymd_opt(2026, 11, 1)
            .unwrap()
            .and_hms_opt(16, 0, 0)
            .unwrap(),
        NaiveDate::from_ymd_opt(2026, 11, 2)
            .unwrap()
            .and_hms_opt(16, 0, 0)
            .unwrap(),
    ];
    let disabled = |i: usize| i >= links.len() - 3;
    (0..count)
        .map(|n| {
            let at: NaiveDateTime = if n % 10 == 0 {
                // Within a minute either side of a local midnight.
                let midnight = midnights[rng.next(2) as usize];
                midnight + Duration::milliseconds(rng.next(120_000) as i64 - 60_000)
            } else {
                start_utc + Duration::seconds(rng.next(3 * 86_400) as i64)
            };
            let day = (at + Duration::hours(8)).date();
            let agent = &AGENTS[rng.next(AGENTS.len() as u64) as usize];
            let (prefix, country, province, city) = PLACES[rng.next(PLACES.len() as u64) as usize];
            // 30 addresses per place: visitors come back, so UV < PV.
            let host = rng.next(30);
            let ip: IpAddr = format!("{prefix}{host}").parse().unwrap();
            let (referer, referrer) = REFERERS[rng.next(REFERERS.len() as u64) as usize];
            let (query, params) = QUERIES[rng.next(QUERIES.len() as u64) as usize];
            let which = rng.next(links.len() as u64 + 2) as usize;
            let (code, link, outcome) = if which >= links.len() {
                (
                    format!("nope{}", rng.next(5)),
                    UNKNOWN_LINK,
                    Outcome::Unknown,
                )
            } else if disabled(which) {
                (links[which].1.clone(), links[which].0, Outcome::Disabled)
            } else {
                (links[which].1.clone(), links[which].0, Outcome::Redirected)
            };
            Click {
                event: ClickEvent {
                    at,
                    code: code.into(),
                    link_id: (link != UNKNOWN_LINK).then_some(link),
                    host: Some("localhost".into()),
                    client_ip: ip,
                    user_agent: Some(agent.ua.into()),
                    referer: referer.map(Into::into),
                    query: query.map(Into::into),
                    outcome,
                    head: false,
                    key: None,
                    generation: 0,
                },
                day,
                link,
                counted: outcome == Outcome::Redirected && !agent.bot,
                visitor: (ip, agent.ua),
                place: (country, province, city),
                agent,
                referrer,
                params,
            }
        })
        .collect()
}

/// The daily rows the clicks must give: per link, and for all links together.
fn expected_days(clicks: &[Click]) -> BTreeMap<(NaiveDate, i64), Row> {
    let mut sums: BTreeMap<(NaiveDate, i64), Expected> = BTreeMap::new();
    for click in clicks {
        for link in [click.link, ALL_LINKS] {
            sums.entry((click.day, link)).or_default().add(click);
        }
    }
    sums.into_iter().map(|(key, e)| (key, e.row())).collect()
}

/// The figures of the whole range for `link` (or all links): UV and IP distinct over it.
fn expected_range(clicks: &[Click], link: i64) -> Row {
    let mut e = Expected::default();
    for click in clicks
        .iter()
        .filter(|c| link == ALL_LINKS || c.link == link)
    {
        e.add(click);
    }
    e.row()
}

async fn stored_range(app: &TestApp, scope: Scope<'_>, from: NaiveDate, to: NaiveDate) -> Row {
    let v = report::range_totals(&app.core.db, &app.core.kept, scope, from, to)
        .await
        .unwrap();
    (v.pv, v.uv, v.ip, v.effective, v.ineffective)
}

/// (day, link, dimension, value) → (PV, UV) the clicks must give.
fn expected_breakdown(clicks: &[Click]) -> BTreeMap<(NaiveDate, i64, String, String), (i64, i64)> {
    let mut sums: BTreeMap<BreakdownKey, (i64, BTreeSet<Visitor>)> = BTreeMap::new();
    for click in clicks.iter().filter(|c| c.counted) {
        // The local hour in Asia/Shanghai (a fixed +08:00).
        let hour = format!(
            "{:02}",
            chrono::Timelike::hour(&(click.event.at + Duration::hours(8)))
        );
        let mut values = vec![
            ("country", click.place.0),
            ("province", click.place.1),
            ("city", click.place.2),
            // No carrier database in these replays: every carrier is unknown.
            ("carrier", ""),
            ("browser", click.agent.browser),
            ("os", click.agent.os),
            ("device", click.agent.device),
            ("referrer", click.referrer),
            ("hour", hour.as_str()),
        ];
        values.extend(click.params.iter().copied());
        for link in [click.link, ALL_LINKS] {
            for &(dimension, value) in &values {
                let e = sums
                    .entry((click.day, link, dimension.to_owned(), value.to_owned()))
                    .or_default();
                e.0 += 1;
                e.1.insert(click.visitor);
            }
        }
    }
    sums.into_iter()
        .map(|(key, (pv, uv))| (key, (pv, uv.len() as i64)))
        .collect()
}

async fn stored_days(app: &TestApp) -> BTreeMap<(NaiveDate, i64), Row> {
    let db = &app.core.db;
    let sql = "SELECT stat_date, url_map_id, pv, uv, ip_count, effective, ineffective FROM visit_statistics";
    let rows = db
        .query_all_raw(Statement::from_string(db.get_database_backend(), sql))
        .await
        .unwrap();
    rows.into_iter()
        .map(|r| {
            (
                (
                    r.try_get_by_index(0).unwrap(),
                    r.try_get_by_index(1).unwrap(),
                ),
                (
                    r.try_get_by_index(2).unwrap(),
                    r.try_get_by_index(3).unwrap(),
                    r.try_get_by_index(4).unwrap(),
                    r.try_get_by_index(5).unwrap(),
                    r.try_get_by_index(6).unwrap(),
                ),
            )
        })
        .collect()
}

async fn stored_breakdown(app: &TestApp) -> BTreeMap<(NaiveDate, i64, String, String), (i64, i64)> {
    (crate::support::breakdown_rows(&app.core.db)
        .await
        .into_iter())
    .map(|(day, link, dimension, value, pv, uv)| ((day, link, dimension, value), (pv, uv)))
    .collect()
}

/// Waits until the server's writer has stored `count` events in all.
pub async fn wait_written(app: &TestApp, count: u64) {
    let metrics = app.state.clicks.metrics();
    for _ in 0..600 {
        if metrics.events_written.load(Relaxed) >= count {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!(
        "only {} of {count} click events were written",
        metrics.events_written.load(Relaxed)
    );
}

/// The `total` row of a daily CSV.
fn csv_total(body: &str) -> Row {
    let line = body.lines().last().unwrap();
    let f: Vec<&str> = line.split(',').collect();
    assert_eq!(f[0], "total", "{line}");
    let n = |i: usize| f[i].parse::<i64>().unwrap();
    (n(1), n(2), n(3), n(4), n(5))
}

fn csv_rows(body: &str) -> Vec<(NaiveDate, Row)> {
    body.lines()
        .skip(1)
        .filter(|line| !line.starts_with("total,"))
        .map(|line| {
            let f: Vec<&str> = line.split(',').collect();
            let n = |i: usize| f[i].parse::<i64>().unwrap();
            (f[0].parse().unwrap(), (n(1), n(2), n(3), n(4), n(5)))
        })
        .collect()
}

/// A server counting in Asia/Shanghai with Chinese place names, as the replays expect, every
/// `interval` seconds, with `count` links (id and code).
async fn replay_app(interval: &str, count: usize) -> (TestApp, Vec<(i64, String)>) {
    let app = spawn_app_with(&[
        "--geoip-db",
        GEOIP,
        "--geoip-lang",
        "zh-CN",
        "--timezone",
        "Asia/Shanghai",
        "--stats-interval",
        interval,
    ])
    .await;
    let mut links = Vec::new();
    for i in 0..count {
        let saved = create_link(&app, &format!("https://example.com/page/{i}")).await;
        links.push((saved.link.id, saved.link.compression_code.to_string()));
    }
    (app, links)
}

#[actix_web::test]
async fn a_replay_of_10000_clicks_gives_exactly_the_expected_days_breakdowns_and_dashboards() {
    let (app, links) = replay_app("3600", 40).await;
    let clicks = synthesize(&links, 10_000);
    for click in &clicks {
        // Through the server's own queue and writer, as a redirect would.
        app.state.clicks.sink().record(click.event.clone());
    }
    wait_written(&app, clicks.len() as u64).await;
    let tz: chrono_tz::Tz = "Asia/Shanghai".parse().unwrap();
    let (first, last) = (
        NaiveDate::from_ymd_opt(2026, 10, 31).unwrap(),
        NaiveDate::from_ymd_opt(2026, 11, 4).unwrap(),
    );
    let expected = expected_days(&clicks);
    assert_eq!(
        expected.keys().map(|k| k.0).collect::<BTreeSet<_>>().len(),
        3
    );
    let breakdown = expected_breakdown(&clicks);
    assert!(
        breakdown
            .keys()
            .any(|k| k.2 == "utm_campaign" && k.3 == "双十一")
    );
    assert!(!breakdown.keys().any(|k| k.3 == "ignored"));

    // Counted as stored, batch by batch: exactly what the clicks give.
    tally::drain(&app.core.db, tz).await.unwrap();
    assert_eq!(
        stored_days(&app).await,
        expected,
        "visit_statistics rows, counted as stored"
    );
    assert_eq!(
        stored_breakdown(&app).await,
        breakdown,
        "breakdown rows, counted as stored"
    );

    // `stats rebuild` counts the days again from their events and gives the same rows.
    recount::rebuild(&app.core.db, tz, first, last)
        .await
        .unwrap();
    let stored = stored_days(&app).await;
    assert_eq!(stored, expected, "visit_statistics rows");
    assert_eq!(stored_breakdown(&app).await, breakdown, "breakdown rows");

    // Recomputing changes nothing.
    recount::rebuild(&app.core.db, tz, first, last)
        .await
        .unwrap();
    assert_eq!(stored_days(&app).await, expected, "after a second rebuild");
    assert_eq!(stored_breakdown(&app).await, breakdown);

    // What the dashboards show is the same, zeros for days without visits included.
    let mut browser = signed_in(&app).await;
    let range = "from=2026-10-31&to=2026-11-04";
    let page = browser.get(&format!("/admin/dashboard.csv?{range}")).await;
    assert_eq!(page.status, 200);
    let shown = csv_rows(&page.body);
    assert_eq!(shown.len(), 5);
    for (day, row) in &shown {
        let want = expected
            .get(&(*day, ALL_LINKS))
            .copied()
            .unwrap_or_default();
        assert_eq!(*row, want, "dashboard row for {day}");
    }
    for (id, code) in links.iter().take(5).chain(links.iter().rev().take(1)) {
        let page = browser
            .get(&format!("/admin/links/{code}/stats.csv?{range}"))
            .await;
        for (day, row) in csv_rows(&page.body) {
            let want = expected.get(&(day, *id)).copied().unwrap_or_default();
            assert_eq!(row, want, "link {code} on {day}");
        }
    }
    let total_pv: i64 = expected
        .iter()
        .filter(|(k, _)| k.1 == ALL_LINKS)
        .map(|(_, r)| r.0)
        .sum();
    let page = browser.get(&format!("/admin/dashboard?{range}")).await;
    assert_eq!(page.status, 200);
    assert!(
        page.body
            .contains(&format!("<dd id=\"total-pv\" data-value=\"{total_pv}\""))
    );
    assert!(page.body.contains("<svg"), "charts are inline SVG");
    // Stored in Chinese, shown in the reader's language.
    assert!(page.body.contains(">Beijing<") && page.body.contains("WeChat"));

    // The report the dashboard draws its bars from sums the days exactly.
    let countries = report::breakdown(
        &app.core.db,
        Scope::All,
        Dimension::Country,
        first,
        last,
        100,
    )
    .await
    .unwrap();
    let mut want: BTreeMap<String, i64> = BTreeMap::new();
    for ((_, link, dimension, value), (pv, _)) in &breakdown {
        if *link == ALL_LINKS && dimension == "country" {
            *want.entry(value.clone()).or_default() += pv;
        }
    }
    let got: BTreeMap<String, i64> = countries.into_iter().map(|s| (s.value, s.pv)).collect();
    assert_eq!(got, want);
    let page = browser
        .get(&format!("/admin/links/{}/stats?{range}", links[0].1))
        .await;
    assert_eq!(page.status, 200);

    // Over the whole range UV and IP are distinct counts, not sums of days: in the
    // dashboard's totals, its CSV and the API.
    let all = expected_range(&clicks, ALL_LINKS);
    let summed_uv: i64 = expected
        .iter()
        .filter(|(k, _)| k.1 == ALL_LINKS)
        .map(|(_, r)| r.1)
        .sum();
    assert!(all.1 < summed_uv, "visitors come back on other days");
    assert_eq!(stored_range(&app, Scope::All, first, last).await, all);
    let dashboard = browser.get(&format!("/admin/dashboard.csv?{range}")).await;
    assert!(dashboard.body.starts_with("\u{feff}date,pv,uv,ip"));
    assert_eq!(csv_total(&dashboard.body), all);
    let page = browser.get(&format!("/admin/dashboard?{range}")).await;
    assert!(
        page.body
            .contains(&format!("<dd id=\"total-uv\" data-value=\"{}\"", all.1))
    );
    assert!(
        page.body
            .contains(&format!("<dd id=\"total-ip\" data-value=\"{}\"", all.2))
    );
    for (id, code) in links.iter().take(5) {
        let want = expected_range(&clicks, *id);
        assert_eq!(
            stored_range(&app, Scope::Link(*id), first, last).await,
            want
        );
        let page = browser
            .get(&format!("/admin/links/{code}/stats.csv?{range}"))
            .await;
        assert_eq!(csv_total(&page.body), want, "link {code}");
    }
    // The top links: page views per link summed over the range, most first.
    let mut per_link: BTreeMap<i64, (i64, i64)> = BTreeMap::new();
    for ((_, id), row) in expected.iter().filter(|(k, _)| k.1 > 0) {
        let sum = per_link.entry(*id).or_default();
        (sum.0, sum.1) = (sum.0 + row.0, sum.1 + row.3);
    }
    let mut want: Vec<(i64, i64, i64)> = per_link
        .into_iter()
        .map(|(id, (pv, eff))| (id, pv, eff))
        .collect();
    want.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    want.truncate(10);
    assert_eq!(top_links(&app, first, last).await, want);
    assert_eq!(top_links(&app, first, last).await, want, "kept");

    // A range of one day is that day.
    let one = *expected.keys().map(|(day, _)| day).next().unwrap();
    assert_eq!(
        stored_range(&app, Scope::All, one, one).await,
        expected[&(one, ALL_LINKS)]
    );

    // Purging the events of the first days (in batches) leaves every figure as it was, also
    // after a rebuild: those days are not counted again.
    let days: BTreeSet<NaiveDate> = clicks.iter().map(|c| c.day).collect();
    let kept_from = *days.iter().last().unwrap();
    let gone = clicks.iter().filter(|c| c.day < kept_from).count() as u64;
    assert!(
        gone > inklink::clickstore::purge::PURGE_BATCH as u64,
        "more than one batch"
    );
    let stored_before = count_events(&app).await;
    let purged = retention::purge(&app.core.db, tz, kept_from).await.unwrap();
    assert_eq!(purged.events, gone);
    assert_eq!(count_events(&app).await, stored_before - gone);
    assert_eq!(stored_days(&app).await, expected, "after a purge");
    assert_eq!(stored_breakdown(&app).await, breakdown, "after a purge");
    recount::rebuild(&app.core.db, tz, first, last)
        .await
        .unwrap();
    assert_eq!(stored_days(&app).await, expected, "rebuilt after a purge");
    assert_eq!(stored_breakdown(&app).await, breakdown);
    let again = browser.get(&format!("/admin/dashboard.csv?{range}")).await;
    assert_eq!(again.body, dashboard.body);
    assert_eq!(stored_range(&app, Scope::All, first, last).await, all);
    let twice = retention::purge(&app.core.db, tz, kept_from).await.unwrap();
    assert_eq!(twice.events, 0);
    let tomorrow = days::today(tz).succ_opt().unwrap();
    let err = retention::purge(&app.core.db, tz, tomorrow)
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("only the events of past days"),
        "{err}"
    );
}

/// A backlog larger than one counting turn (a burst) is counted by the server's own schedule,
/// in larger turns on its thread of lower priority, to exactly the rows the clicks give.
#[actix_web::test]
async fn a_backlog_of_several_turns_is_counted_by_the_schedule_exactly() {
    let (app, links) = replay_app("1", 20).await;
    // More than a turn of tally::BATCH: the schedule counts the rest in a larger turn.
    let clicks = synthesize(&links, tally::BATCH as usize * 5 / 2);
    for click in &clicks {
        app.state.clicks.sink().record(click.event.clone());
    }
    wait_written(&app, clicks.len() as u64).await;
    let expected = expected_days(&clicks);
    let mut stored = BTreeMap::new();
    for _ in 0..1800 {
        stored = stored_days(&app).await;
        if stored == expected {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(
        stored, expected,
        "visit_statistics rows, counted by the schedule"
    );
    assert_eq!(stored_breakdown(&app).await, expected_breakdown(&clicks));
    // /metrics tells how many the schedule counted (the turn's commit comes just before).
    let counted = format!("inklink_click_events_counted_total {}\n", clicks.len());
    let mut metrics = String::new();
    for _ in 0..50 {
        let body = app.get("/metrics").await.body().await.unwrap();
        metrics = String::from_utf8_lossy(&body).into_owned();
        if metrics.contains(&counted) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(metrics.contains(&counted), "{counted} in {metrics}");

    // On PostgreSQL counting refreshed the planner's statistics as it went (where autovacuum
    // is off, plans made for empty tables stayed: bench/README.md), and vacuumed the list,
    // and, where autovacuum is off, the day sets each turn rewrites (or they would keep
    // every version of their rows).
    if app.core.db.get_database_backend() == sea_orm::DbBackend::Postgres {
        let sql = "SELECT relname FROM pg_stat_user_tables WHERE \
                   (relname = 'click_waiting' AND last_vacuum IS NOT NULL) OR \
                   (relname = 'visit_day_bits' AND (last_vacuum IS NOT NULL OR \
                   (current_setting('autovacuum') = 'on' AND last_analyze IS NOT NULL))) OR \
                   (relname IN ('click', 'visit_key', 'visit_statistics_breakdown') \
                   AND last_analyze IS NOT NULL) ORDER BY relname";
        let mut refreshed = Vec::new();
        for _ in 0..50 {
            refreshed = app
                .core
                .db
                .query_all_raw(Statement::from_string(sea_orm::DbBackend::Postgres, sql))
                .await
                .unwrap()
                .iter()
                .map(|row| row.try_get::<String>("", "relname").unwrap())
                .collect::<Vec<_>>();
            if refreshed.len() == 5 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        assert_eq!(
            refreshed,
            [
                "click",
                "click_waiting",
                "visit_day_bits",
                "visit_key",
                "visit_statistics_breakdown"
            ]
        );
    }

    // Counting runs on its own thread at a lower priority (nice 10), and so do the SQLite
    // connection threads it started.
    #[cfg(target_os = "linux")]
    {
        let threads = niced_threads();
        assert!(
            threads
                .iter()
                .any(|(name, nice)| name == "inklink-count" && *nice == 10),
            "a counting thread of nice 10 among {threads:?}"
        );
        assert!(
            threads
                .iter()
                .filter(|(name, _)| name == "inklink-count")
                .all(|(_, nice)| *nice == 10)
        );
        if app.core.db.get_database_backend() == sea_orm::DbBackend::Sqlite {
            assert!(
                threads
                    .iter()
                    .any(|(name, nice)| name.starts_with("sqlx-sqlite") && *nice == 10),
                "an SQLite connection thread of nice 10 among {threads:?}"
            );
        }
    }
}

/// Name and nice value of every thread of this process.
#[cfg(target_os = "linux")]
fn niced_threads() -> Vec<(String, i64)> {
    let mut out = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
            continue;
        };
        // "tid (name) state …": the fields after the name, of which the 17th is the nice value.
        let Some((name, rest)) = stat
            .split_once(" (")
            .and_then(|(_, rest)| rest.rsplit_once(") "))
        else {
            continue;
        };
        let nice = rest.split(' ').nth(16).and_then(|n| n.parse().ok());
        out.extend(nice.map(|nice| (name.to_owned(), nice)));
    }
    out
}
async fn count_events(app: &TestApp) -> u64 {
    inklink::clickstore::stored::count(&app.core.db)
        .await
        .unwrap()
}

#[actix_web::test]
async fn the_server_keeps_the_configured_days_of_events_and_every_statistic() {
    let db = std::sync::Arc::new(crate::support::TestDb::create().await);
    let utc = ["--timezone", "UTC", "--stats-interval", "3600"];
    let app = crate::support::spawn_on(db.clone(), &utc).await;
    let link = create_link(&app, "https://example.com/kept").await;
    let now = inklink::db::now();
    let ages = [0u64, 1, 5, 9];
    for age in ages {
        for i in 0..3u8 {
            app.state.clicks.sink().record(page_view(
                link.link.compression_code.as_str(),
                link.link.id,
                now - chrono::Days::new(age),
                IpAddr::from([198, 51, 100, i]),
            ));
        }
    }
    wait_written(&app, 12).await;
    let tz = chrono_tz::UTC;
    let today = days::today(tz);
    recount::rebuild(&app.core.db, tz, today - Duration::days(9), today)
        .await
        .unwrap();
    let figures = stored_days(&app).await;
    assert_eq!(
        figures.len(),
        8,
        "four days, each for the link and for all links"
    );

    let mut args = utc.to_vec();
    args.extend(["--event-retention-days", "2"]);
    let kept = crate::support::spawn_on(db, &args).await;
    for _ in 0..300 {
        if count_events(&kept).await == 6 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(
        count_events(&kept).await,
        6,
        "today's and yesterday's events stay"
    );
    assert_eq!(stored_days(&kept).await, figures);
}

#[actix_web::test]
async fn forwarded_addresses_are_believed_only_from_trusted_proxies() {
    for (trusted, expect_ip, expect_country) in [
        (None, "127.0.0.1", None),
        (Some("127.0.0.1"), "203.0.113.9", Some("United States")),
    ] {
        let mut extra = vec!["--geoip-db", GEOIP];
        if let Some(proxies) = trusted {
            extra.extend(["--trusted-proxies", proxies]);
        }
        let app = spawn_app_with(&extra).await;
        let link = create_link(&app, "https://example.com/proxied").await;
        let response = app
            .client
            .get(app.url(&format!("/{}", link.link.compression_code)))
            .insert_header(("x-forwarded-for", "203.0.113.9"))
            .insert_header(("user-agent", AGENTS[0].ua))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 302);
        wait_written(&app, 1).await;
        let db = &app.core.db;
        let row = inklink::clickstore::stored::all(db)
            .await
            .unwrap()
            .remove(0);
        let ip = row.client_ip.to_string();
        let country = row.country.as_deref().map(str::to_owned);
        let browser = row.agent.browser.as_deref().map(str::to_owned);
        let status = row.outcome.status().to_owned();
        assert_eq!(ip, expect_ip, "trusted: {trusted:?}");
        assert_eq!(country.as_deref(), expect_country);
        assert_eq!(browser.as_deref(), Some("Chrome"));
        assert_eq!(status, "success");
    }
}

#[actix_web::test]
async fn unknown_disabled_and_expired_visits_are_recorded_with_their_reason() {
    let app = spawn_app_with(&[]).await;
    let live = create_link(&app, "https://example.com/live").await;
    let off = create_link(&app, "https://example.com/off").await;
    let code = off.link.compression_code.clone();
    inklink::services::links::set_status(
        &app.core,
        &inklink::rules::ShortCode::parse(&code).unwrap(),
        inklink::db::entities::url_map::LinkStatus::Disabled,
        &inklink::services::Actor::Cli,
    )
    .await
    .unwrap();
    let old = create_link(&app, "https://example.com/old").await;
    let mut expired: url_map::ActiveModel = old.link.clone().into();
    expired.expires_at = Set(Some(
        NaiveDate::from_ymd_opt(2020, 1, 1)
            .unwrap()
            .and_hms_opt(0, 0, 0)
            .unwrap(),
    ));
    expired.update(&app.core.db).await.unwrap();
    for (path, status) in [
        (format!("/{}?utm=1", live.link.compression_code), 302),
        (format!("/{code}"), 410),
        ("/NoSuchCode".to_owned(), 404),
        (format!("/{}", old.link.compression_code), 410),
    ] {
        assert_eq!(app.fetch(&path).await.0, status, "{path}");
    }
    wait_written(&app, 4).await;
    let db = &app.core.db;
    let text = |t: &Option<std::sync::Arc<str>>| t.as_deref().map(str::to_owned);
    let got: Vec<StoredEvent> = inklink::clickstore::stored::all(db)
        .await
        .unwrap()
        .iter()
        .map(|r| {
            (
                r.compression_code.to_string(),
                r.url_map_id,
                r.outcome.status().to_owned(),
                r.outcome.reason().map(str::to_owned),
                text(&r.query_string),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (
                live.link.compression_code.to_string(),
                Some(live.link.id),
                "success".into(),
                None,
                Some("utm=1".into())
            ),
            (
                code.to_string(),
                Some(off.link.id),
                "failure".into(),
                Some("disabled".into()),
                None
            ),
            (
                "NoSuchCode".into(),
                None,
                "failure".into(),
                Some("unknown".into()),
                None
            ),
            (
                old.link.compression_code.to_string(),
                Some(old.link.id),
                "failure".into(),
                Some("expired".into()),
                None
            ),
        ]
    );
    let metrics = app.get("/metrics").await.body().await.unwrap();
    let metrics = String::from_utf8_lossy(&metrics);
    assert!(
        metrics.contains("inklink_click_events_written_total 4"),
        "{metrics}"
    );
    assert!(metrics.contains("inklink_click_events_dropped_total 0"));
    assert!(metrics.contains("inklink_redirect_requests_total{outcome=\"disabled\"} 1"));
}

#[actix_web::test]
async fn dashboards_of_a_service_without_visits_show_zeros_and_empty_states() {
    let app = spawn_app_with(&[]).await;
    let link = create_link(&app, "https://example.com/quiet").await;
    let mut browser = signed_in(&app).await;
    let page = browser.get("/admin/dashboard?range=30").await;
    assert_eq!(page.status, 200);
    assert!(
        page.body
            .contains("<dd id=\"total-pv\" data-value=\"0\" title=\"0\">0</dd>")
    );
    assert!(page.body.contains("No link was visited in this range."));
    assert!(page.body.contains("No page views in this range."));
    assert!(
        page.body.contains("<svg"),
        "empty charts still draw their axes"
    );
    let csv = browser.get("/admin/dashboard.csv?range=30").await;
    let rows = csv_rows(&csv.body);
    assert_eq!(rows.len(), 30);
    assert!(rows.iter().all(|(_, row)| *row == (0, 0, 0, 0, 0)));
    let code = &link.link.compression_code;
    let page = browser
        .get(&format!("/admin/links/{code}/stats?range=7"))
        .await;
    assert_eq!(page.status, 200);
    assert_eq!(
        browser.get("/admin/links/NoSuchCode/stats").await.status,
        404
    );
    assert_eq!(browser.get("/admin/dashboard?range=12").await.status, 400);
}

/// The redirect path's counters are split per thread; what `/metrics` reads is every thread's
/// count, however many threads there are (more than the stripes, too).
#[test]
fn counters_sum_what_every_thread_added() {
    let counter = inklink::metrics::Counter::default();
    std::thread::scope(|scope| {
        for thread in 0..40u64 {
            let counter = &counter;
            scope.spawn(move || {
                for _ in 0..1_000 {
                    counter.add(thread + 1);
                }
            });
        }
    });
    assert_eq!(counter.get(), 1_000 * (1..=40).sum::<u64>());
}

#[actix_web::test]
async fn with_keep_addresses_network_only_the_network_of_an_address_is_stored() {
    let app = spawn_app_with(&[
        "--geoip-db",
        GEOIP,
        "--trusted-proxies",
        "127.0.0.1",
        "--keep-addresses",
        "network",
    ])
    .await;
    let link = create_link(&app, "https://example.com/private").await;
    for visitor in ["203.0.113.9", "203.0.113.77", "2001:db8:1234:5678::1"] {
        let response = app
            .client
            .get(app.url(&format!("/{}", link.link.compression_code)))
            .insert_header(("x-forwarded-for", visitor))
            .insert_header(("user-agent", AGENTS[0].ua))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 302);
    }
    wait_written(&app, 3).await;
    let db = &app.core.db;
    let mut stored: Vec<(String, String, Option<String>)> = inklink::clickstore::stored::all(db)
        .await
        .unwrap()
        .iter()
        .map(|row| {
            (
                row.client_ip.to_string(),
                row.unique_identity.to_string(),
                row.country.as_deref().map(str::to_owned),
            )
        })
        .collect();
    stored.sort();
    let ips: Vec<&str> = stored.iter().map(|(ip, _, _)| ip.as_str()).collect();
    assert_eq!(ips, ["2001:db8:1234::", "203.0.113.0", "203.0.113.0"]);
    // One network and one browser: one visitor, as UV will count it.
    assert_eq!(stored[1].1, stored[2].1);
    // GeoIP still read the whole address.
    assert_eq!(stored[1].2.as_deref(), Some("United States"));
}

#[actix_web::test]
async fn two_instances_count_every_click_once_seconds_after_it_is_stored() {
    let db = std::sync::Arc::new(crate::support::TestDb::create().await);
    let extra = ["--trusted-proxies", "127.0.0.1", "--stats-interval", "1"];
    let one = crate::support::spawn_on(db.clone(), &extra).await;
    let two = crate::support::spawn_on(db.clone(), &extra).await;
    let link = create_link(&one, "https://example.com/live").await.link;
    let code = link.compression_code.to_string();
    let agents = [
        "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.6099.144 Mobile Safari/537.36",
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.2 Mobile/15E148 Safari/604.1",
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36 Edg/124.0.0.0",
    ];
    // 240 clicks in parallel, half through each instance, from 30 visitors (10 addresses with
    // 3 browsers each), with a campaign source in the short URL.
    let visit = |n: usize| {
        let app = if n.is_multiple_of(2) { &one } else { &two };
        app.client
            .get(app.url(&format!("/{code}?utm_source=s{}", n % 4)))
            .insert_header(("x-forwarded-for", format!("203.0.113.{}", n % 10)))
            .insert_header(("user-agent", agents[n % 3]))
            .send()
    };
    let answers = futures_util::future::join_all((0..240).map(visit)).await;
    for answer in answers {
        assert_eq!(answer.unwrap().status(), 302);
    }
    let mut sources: BTreeMap<String, (i64, BTreeSet<(usize, usize)>)> = BTreeMap::new();
    for n in 0..240 {
        let source = sources.entry(format!("s{}", n % 4)).or_default();
        source.0 += 1;
        source.1.insert((n % 10, n % 3));
    }
    let today = days::today(chrono_tz::UTC);
    // Neither instance is asked to count: their schedules do, each click once.
    let mut shown = None;
    for _ in 0..300 {
        let days = stored_days(&one).await;
        shown = days.get(&(today, link.id)).copied();
        if shown.is_some_and(|row| row.3 == 240) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(
        shown,
        Some((240, 30, 10, 240, 0)),
        "PV, UV, IP, effective, ineffective"
    );
    let breakdown = stored_breakdown(&two).await;
    for (value, (pv, visitors)) in &sources {
        assert_eq!(
            breakdown.get(&(today, link.id, "utm_source".into(), value.clone())),
            Some(&(*pv, visitors.len() as i64)),
            "utm_source {value}"
        );
    }
    assert_eq!(
        breakdown.get(&(today, link.id, "browser".into(), "Edge".into())),
        Some(&(80, 10))
    );
    // Counting again from the events gives the same rows.
    let before = (stored_days(&one).await, breakdown);
    recount::rebuild(&one.core.db, chrono_tz::UTC, today, today)
        .await
        .unwrap();
    assert_eq!(
        (stored_days(&one).await, stored_breakdown(&one).await),
        before
    );
}

/// A database of the version before visitor bitmaps kept one row per visitor and day; the
/// first count after the upgrade turns those into bitmaps, so a range still counts each
/// visitor once, also one who came before and after the upgrade.
#[actix_web::test]
async fn visitor_sets_of_earlier_versions_keep_counting_each_visitor_once() {
    let app = spawn_app_with(&["--timezone", "UTC", "--stats-interval", "3600"]).await;
    let link = create_link(&app, "https://example.com/upgraded").await.link;
    app.state.clicks.sink().record(page_view(
        link.compression_code.as_str(),
        link.id,
        inklink::db::now(),
        IpAddr::from([198, 51, 100, 1]),
    ));
    wait_written(&app, 1).await;
    let db = &app.core.db;
    let backend = db.get_database_backend();
    let row = inklink::clickstore::stored::all(db)
        .await
        .unwrap()
        .remove(0);
    let (visitor, address) = (row.unique_identity.to_string(), row.client_ip.to_string());
    let today = days::today(chrono_tz::UTC);
    let (three, four) = (today - Duration::days(3), today - Duration::days(4));
    // Three days ago: today's visitor and another; four days ago: a third one, twice the
    // same address as today's, and a set per referrer (which cannot be turned and is dropped).
    let old = [
        (three, "v", visitor.as_str()),
        (three, "v", "b5a1c0ffee"),
        (three, "i", address.as_str()),
        (four, "v", "c0ffeeb5a1"),
        (four, "v", "b5a1c0ffee"),
        (four, "i", address.as_str()),
        (four, "i", "198.51.100.9"),
        (four, "r", "0123456789abcdef0123456789abcdef"),
    ];
    for (day, kind, who) in old {
        for scope in [link.id, ALL_LINKS] {
            db.execute_raw(Statement::from_sql_and_values(
                backend,
                match backend {
                    sea_orm::DbBackend::Postgres => {
                        "INSERT INTO visit_day_set (url_map_id, kind, stat_date, who) VALUES ($1, $2, $3, $4)"
                    }
                    _ => "INSERT INTO visit_day_set (url_map_id, kind, stat_date, who) VALUES (?, ?, ?, ?)",
                },
                [scope.into(), kind.into(), day.into(), who.into()],
            ))
            .await
            .unwrap();
        }
    }
    recount::rebuild(db, chrono_tz::UTC, today, today)
        .await
        .unwrap();
    for scope in [Scope::Link(link.id), Scope::All] {
        let (_, uv, ip, _, _) = stored_range(&app, scope, four, today).await;
        assert_eq!(
            (uv, ip),
            (3, 2),
            "{scope:?}: UV and IP from four days ago to today"
        );
        let (_, uv, ip, _, _) = stored_range(&app, scope, three, three).await;
        assert_eq!((uv, ip), (2, 1), "{scope:?}: three days ago");
        let (pv, uv, ip, _, _) = stored_range(&app, scope, today, today).await;
        assert_eq!((pv, uv, ip), (1, 1, 1), "{scope:?}: today");
    }
    let left = db
        .query_one_raw(Statement::from_string(
            backend,
            "SELECT COUNT(*) FROM visit_day_set",
        ))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        left.try_get_by_index::<i64>(0).unwrap(),
        0,
        "the old sets are gone"
    );
}

/// (link, PV, effective) of the top links over the range.
async fn top_links(app: &TestApp, from: NaiveDate, to: NaiveDate) -> Vec<(i64, i64, i64)> {
    report::top_links(&app.core.db, &app.core.kept, from, to, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|link| (link.id, link.pv, link.effective))
        .collect()
}

async fn uv_ip(app: &TestApp, scope: Scope<'_>, from: NaiveDate, to: NaiveDate) -> (i64, i64) {
    let (_, uv, ip, _, _) = stored_range(app, scope, from, to).await;
    (uv, ip)
}

/// A click by `visitor` (an address; one browser) on `link` at noon of `day`.
fn click_on(link: &url_map::Model, day: NaiveDate, visitor: u8) -> ClickEvent {
    page_view(
        link.compression_code.as_str(),
        link.id,
        day.and_hms_opt(12, 0, 0).unwrap(),
        IpAddr::from([198, 51, 100, visitor]),
    )
}

/// Range UV and IP and the top links of finished days are kept in memory between requests; a
/// late click on a finished day, counted by another instance, and a rebuild must show in the
/// next answer.
#[actix_web::test]
async fn finished_days_kept_between_requests_stay_exact_when_another_instance_counts_late_clicks() {
    let db = std::sync::Arc::new(crate::support::TestDb::create().await);
    let extra = ["--timezone", "UTC", "--stats-interval", "3600"];
    let one = crate::support::spawn_on(db.clone(), &extra).await;
    let two = crate::support::spawn_on(db.clone(), &extra).await;
    let link = create_link(&one, "https://example.com/late").await.link;
    let other = create_link(&one, "https://example.com/other").await.link;
    let today = days::today(chrono_tz::UTC);
    let day = |back: i64| today - Duration::days(back);
    // Visitors 1–3 three days ago, 2–4 two days ago, 4 and 5 today; 6 on the other link.
    let clicks = [
        click_on(&link, day(3), 1),
        click_on(&link, day(3), 2),
        click_on(&link, day(3), 3),
        click_on(&link, day(2), 2),
        click_on(&link, day(2), 3),
        click_on(&link, day(2), 4),
        click_on(&link, today, 4),
        click_on(&link, today, 5),
        click_on(&other, day(1), 6),
    ];
    for click in &clicks {
        one.state.clicks.sink().record(click.clone());
    }
    wait_written(&one, clicks.len() as u64).await;
    tally::drain(&one.core.db, chrono_tz::UTC).await.unwrap();
    let (from, to) = (day(3), today);
    let mut browser = signed_in(&one).await;
    let range = format!("from={from}&to={to}");
    let dashboard_uv = |body: String| csv_total(&body).1;
    for _ in 0..2 {
        assert_eq!(uv_ip(&one, Scope::Link(link.id), from, to).await, (5, 5));
        assert_eq!(uv_ip(&one, Scope::All, from, to).await, (6, 6));
        let csv = browser.get(&format!("/admin/dashboard.csv?{range}")).await;
        assert_eq!(dashboard_uv(csv.body), 6);
    }

    // Two days ago, counted by the other instance: a new visitor, and one seen today.
    two.state.clicks.sink().record(click_on(&link, day(2), 7));
    two.state.clicks.sink().record(click_on(&link, day(2), 5));
    wait_written(&two, 2).await;
    tally::drain(&two.core.db, chrono_tz::UTC).await.unwrap();
    assert_eq!(uv_ip(&one, Scope::Link(link.id), from, to).await, (6, 6));
    assert_eq!(uv_ip(&one, Scope::All, from, to).await, (7, 7));
    let csv = browser.get(&format!("/admin/dashboard.csv?{range}")).await;
    assert_eq!(
        dashboard_uv(csv.body),
        7,
        "the dashboard of the first instance"
    );
    // A range ending yesterday keeps two days ago in its kept part.
    let (_, uv, _, _, _) = stored_range(&one, Scope::All, from, day(1)).await;
    assert_eq!(uv, 7, "visitors 1–5 and 7 on the link, 6 on the other");
    let (_, uv, _, _, _) = stored_range(&one, Scope::All, from, day(1)).await;
    assert_eq!(uv, 7);

    // Counting the days again from their events gives the same figures, from each instance.
    recount::rebuild(&two.core.db, chrono_tz::UTC, from, to)
        .await
        .unwrap();
    assert_eq!(uv_ip(&one, Scope::Link(link.id), from, to).await, (6, 6));
    assert_eq!(uv_ip(&two, Scope::All, from, to).await, (7, 7));
    assert_eq!(uv_ip(&one, Scope::All, from, to).await, (7, 7));
    let (_, uv, _, _, _) = stored_range(&one, Scope::All, from, day(1)).await;
    assert_eq!(uv, 7);

    // The top links over the range: the other link overtakes with late clicks counted
    // elsewhere, and a link deleted keeps its place but is left out.
    assert_eq!(
        top_links(&one, from, to).await,
        [(link.id, 10, 10), (other.id, 1, 1)]
    );
    // The same visitor again: no bitmap changes, only the page views.
    for _ in 0..10 {
        two.state.clicks.sink().record(click_on(&other, day(1), 6));
    }
    wait_written(&two, 12).await;
    tally::drain(&two.core.db, chrono_tz::UTC).await.unwrap();
    assert_eq!(
        top_links(&one, from, to).await,
        [(other.id, 11, 11), (link.id, 10, 10)]
    );
    assert_eq!(
        top_links(&one, from, to).await,
        [(other.id, 11, 11), (link.id, 10, 10)]
    );
    let page = browser.get(&format!("/admin/dashboard?{range}")).await;
    let (first, second) = (
        page.body.find(&format!(">{}<", other.compression_code)),
        page.body.find(&format!(">{}<", link.compression_code)),
    );
    assert!(first.is_some() && first < second, "the other link first");
    // A range that ends before today is kept whole: a late click on its last day shows too.
    two.state.clicks.sink().record(click_on(&other, day(1), 30));
    wait_written(&two, 13).await;
    tally::drain(&two.core.db, chrono_tz::UTC).await.unwrap();
    let (_, uv, _, _, _) = stored_range(&one, Scope::All, from, day(1)).await;
    assert_eq!(uv, 8, "and visitor 30");
    let (_, uv, _, _, _) = stored_range(&one, Scope::Link(other.id), day(1), day(1)).await;
    assert_eq!(uv, 2, "visitors 6 and 30 on the other link yesterday");
    url_map::Entity::delete_by_id(other.id)
        .exec(&one.core.db)
        .await
        .unwrap();
    assert_eq!(top_links(&one, from, to).await, [(link.id, 10, 10)]);
}

/// A visitor chooses the short URL's query string: a campaign value with control characters
/// (a NUL, which PostgreSQL text cannot hold) must not stop counting for everyone.
#[actix_web::test]
async fn campaign_values_with_control_characters_are_counted_without_them() {
    let app = spawn_app_with(&["--timezone", "UTC", "--stats-interval", "3600"]).await;
    let link = create_link(&app, "https://example.com/nul").await.link;
    let code = link.compression_code.to_string();
    for query in [
        "utm_source=%00",
        "utm_source=a%00b%01c&utm_medium=%0Asms%0D",
        "utm_source=ok",
    ] {
        let answer = app
            .client
            .get(app.url(&format!("/{code}?{query}")))
            .insert_header(("user-agent", AGENTS[0].ua))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 302);
    }
    wait_written(&app, 3).await;
    let counted = tally::drain(&app.core.db, chrono_tz::UTC).await.unwrap();
    assert_eq!(counted, 3);
    let today = days::today(chrono_tz::UTC);
    let breakdown = stored_breakdown(&app).await;
    let source = |value: &str| breakdown.get(&(today, link.id, "utm_source".into(), value.into()));
    assert_eq!(source("abc"), Some(&(1, 1)));
    // The same visitor, counted once under each value.
    assert_eq!(source("ok"), Some(&(1, 1)));
    assert!(
        breakdown.keys().all(|k| !k.3.chars().any(char::is_control)),
        "{breakdown:?}"
    );
    assert_eq!(
        breakdown.get(&(today, link.id, "utm_medium".into(), "sms".into())),
        Some(&(1, 1))
    );
}

/// Issue 40: the UTM parameters the UTM builder writes into a link's target count in the
/// campaign breakdowns, as those of the short URL's own query do. Where both have one, the
/// target's counts, as the redirect gives the target's to the landing page; `stats rebuild`
/// recounts days the same way.
#[actix_web::test]
async fn campaign_breakdowns_count_the_utm_parameters_of_the_target_and_of_the_short_url() {
    let app = spawn_app_with(&[]).await;
    let mut browser = signed_in(&app).await;
    let csrf = crate::admin::csrf_in(&browser.get("/admin/links/new").await.body);
    let host = format!("localhost:{}", app.port);
    let created = browser
        .post(
            "/admin/links",
            &[
                ("csrf", &csrf),
                ("url", "https://shop.example.com/sale"),
                ("domain", &host),
                ("code", "built"),
                ("utm_source", "sms"),
                ("utm_campaign", "双十一"),
            ],
        )
        .await;
    assert_eq!(created.status, 303, "{}", created.body);
    let agent = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36";
    for path in [
        "/built",
        "/built?utm_source=wechat",
        "/built?utm_medium=moments",
    ] {
        let visit = app
            .client
            .get(app.url(path))
            .insert_header(("user-agent", agent))
            .send()
            .await
            .unwrap();
        assert_eq!(visit.status().as_u16(), 302);
    }
    wait_written(&app, 3).await;
    let tz = app.core.settings.timezone;
    let today = days::today(tz);
    let link = inklink::services::links::find_by_code(
        &app.core.db,
        &inklink::rules::ShortCode::parse("built").unwrap(),
    )
    .await
    .unwrap()
    .unwrap();
    let expected: BTreeMap<(&str, &str), i64> = [
        (("utm_source", "sms"), 3),
        (("utm_campaign", "双十一"), 3),
        (("utm_medium", "moments"), 1),
    ]
    .into_iter()
    .collect();
    let shown = || async {
        let mut out: BTreeMap<(&str, String), i64> = BTreeMap::new();
        for (dimension, shares) in
            report::breakdowns(&app.core.db, Scope::Link(link.id), today, today, 10)
                .await
                .unwrap()
        {
            if dimension.is_query() {
                for share in shares {
                    out.insert((dimension.name(), share.value), share.pv);
                }
            }
        }
        out
    };
    tally::drain(&app.core.db, tz).await.unwrap();
    let counted = shown().await;
    let want: BTreeMap<(&str, String), i64> = expected
        .iter()
        .map(|((d, v), n)| ((*d, v.to_string()), *n))
        .collect();
    assert_eq!(counted, want, "counted as the clicks came");
    recount::rebuild(&app.core.db, tz, today, today)
        .await
        .unwrap();
    assert_eq!(shown().await, want, "recounted by stats rebuild");
}

/// Issue 40: the range presets today and yesterday beside 7, 30 and 90 days, and each total
/// with its change against the days just before.
#[actix_web::test]
async fn dashboards_offer_today_and_yesterday_and_show_each_totals_change() {
    let app = spawn_app_with(&[]).await;
    let link = create_link(&app, "https://example.com/glance").await;
    let code = link.link.compression_code.to_string();
    let agent = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36";
    for _ in 0..2 {
        let visit = app
            .client
            .get(app.url(&format!("/{code}")))
            .insert_header(("user-agent", agent))
            .send()
            .await
            .unwrap();
        assert_eq!(visit.status().as_u16(), 302);
    }
    wait_written(&app, 2).await;
    tally::drain(&app.core.db, app.core.settings.timezone)
        .await
        .unwrap();
    let mut browser = signed_in(&app).await;
    let today = browser
        .get(&format!("/admin/links/{code}/stats?range=today"))
        .await;
    assert_eq!(today.status, 200);
    assert!(
        today.body.contains(r#"?range=today" aria-current="page""#),
        "{}",
        today.body
    );
    assert!(
        today.body.contains(r#"id="total-pv" data-value="2""#),
        "{}",
        today.body
    );
    assert!(
        today.body.contains(r#"id="change-pv">—</dd>"#),
        "nothing before: {}",
        today.body
    );
    let yesterday = browser
        .get(&format!("/admin/links/{code}/stats?range=yesterday"))
        .await;
    assert!(yesterday.body.contains(r#"id="total-pv" data-value="0""#));
    let refused = browser
        .get(&format!("/admin/links/{code}/stats?range=fortnight"))
        .await;
    assert_eq!(refused.status, 400);
    assert!(refused.body.contains("today, yesterday, 7, 30 or 90"));
}

/// Issue 40: the dashboard's top links say what each link is (its description) and where it
/// goes, the target decoded as people read it.
#[actix_web::test]
async fn top_links_show_their_description_and_their_target_decoded() {
    let app = spawn_app_with(&[]).await;
    let target = inklink::services::links::parse_target(
        &app.core,
        "https://example.com/%E8%B7%AF%E5%BE%84?q=%E7%9F%AD%E9%93%BE",
    )
    .await
    .unwrap();
    let saved = inklink::services::links::create(
        &app.core,
        inklink::services::links::NewLink {
            description: Some("双十一 第一波".into()),
            ..inklink::services::links::NewLink::to(target)
        },
        &inklink::services::Actor::Cli,
    )
    .await
    .unwrap();
    let code = saved.link.compression_code.to_string();
    let visit = app
        .client
        .get(app.url(&format!("/{code}")))
        .insert_header(("user-agent", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36"))
        .send()
        .await
        .unwrap();
    assert_eq!(visit.status().as_u16(), 302);
    wait_written(&app, 1).await;
    tally::drain(&app.core.db, app.core.settings.timezone)
        .await
        .unwrap();
    let mut browser = signed_in(&app).await;
    let page = browser.get("/admin/dashboard").await.body;
    let top = &page[page.find("id=\"top-links\"").expect("top links")..];
    assert!(
        top.contains("<strong>双十一 第一波</strong><br>https://example.com/路径?q=短链"),
        "{top}"
    );
}
