//! Click pipeline and dashboard budgets, on a fresh database:
//!
//! 1. the writer's sustained rate: synthetic clicks pushed through the server's own queue
//!    (enrichment, GeoIP from the test fixture, batched inserts) as fast as it drains them;
//! 2. the dashboards with many events stored: a generator inserts enriched events spread
//!    over 90 days, the days are aggregated, and the global and a link's dashboard pages are
//!    fetched over HTTP by a signed-in admin (median of 15).
//!
//!   cargo bench --bench clicks                                   # SQLite
//!   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres cargo bench --bench clicks
//!
//! 3. the global dashboards again over 90 days of visitor bitmaps as 10 M clicks a day
//!    leave them (DAY_VISITORS distinct visitors a day), the first request (which reads
//!    every day's bitmaps) and the median of 15 (which find the finished days' union kept);
//! 4. the CPU per click of each stage: capture (request to queue), enrichment, storing,
//!    counting;
//! 5. seconds from a click to the dashboard, through a second instance counting on the
//!    default schedule: quiet, right after 10 s of 40,000 clicks a second, and with today's
//!    bitmaps at campaign scale.
//!
//! Knobs: WRITER_EVENTS (500000), EVENTS (10000000, in all), LINKS (1000), DAY_VISITORS
//! (3000000), KEEP_DATABASE (set: leave the database for a look at its tables), ONLY_COUNTING
//! (set: stop after counting the writer's clicks, and print its CPU per click), SPREAD=burst
//! (the writer's clicks all of today, from 10,000 addresses and 600 user agents as
//! `bench/redirect.sh` sends them, so that nearly every page view is a visitor never seen
//! before, as after a burst; by default they come from 8,000 addresses and 6 user agents
//! over days, and a day's visitors are mostly known), KNOWN_VISITORS (0: so many visitors
//! numbered before the writer's clicks come, as months of traffic leave `visit_key`; SQLite
//! and PostgreSQL).

use actix_web::web;
use chrono::Duration;
use inklink::clicks::enrich::Enricher;
use inklink::clicks::geoip::GeoIp;
use inklink::clicks::writer::{BATCH, ClickStore};
use inklink::clicks::{ClickEvent, capture};
use inklink::net::client::TrustedProxies;
use inklink::rules::Outcome;
use inklink::startup::Application;
use inklink::stats::tally;
use sea_orm::{ConnectionTrait, Database};
use std::net::{IpAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

mod common;
use common::{Rng, cpu_seconds, env_number};

// The server's allocator (src/main.rs), so that the CPU measured here is the server's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const GEOIP: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/geoip-test.mmdb"
);
const AGENTS: [&str; 6] = [
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 MicroMessenger/8.0.47(0x18002f2f) NetType/WIFI Language/zh_CN",
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.6099.144 Mobile Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Safari/605.1.15",
    "Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0",
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
];
const PREFIXES: [[u8; 2]; 8] = [
    [36, 110],
    [116, 228],
    [113, 108],
    [58, 100],
    [203, 0],
    [198, 51],
    [100, 64],
    [10, 9],
];

/// Visitors of the writer's clicks: those of days of ordinary traffic, or of a burst.
#[derive(Clone, Copy, PartialEq)]
enum Spread {
    Days,
    Burst,
}

fn synthetic(
    rng: &mut Rng,
    links: &[(i64, String)],
    at: chrono::NaiveDateTime,
    spread: Spread,
) -> ClickEvent {
    let (id, code) = &links[rng.next(links.len() as u64) as usize];
    let prefix = PREFIXES[rng.next(PREFIXES.len() as u64) as usize];
    let networks = match spread {
        Spread::Days => 4,
        Spread::Burst => 5,
    };
    let ip = IpAddr::from([
        prefix[0],
        prefix[1],
        rng.next(networks) as u8,
        rng.next(250) as u8,
    ]);
    let agent = AGENTS[rng.next(AGENTS.len() as u64) as usize];
    let agent = match spread {
        Spread::Days => agent.to_owned(),
        Spread::Burst => format!("{agent} Build/{}", rng.next(100)),
    };
    ClickEvent {
        at,
        code: code.as_str().into(),
        link_id: Some(*id),
        host: Some("s.example.com".into()),
        client_ip: ip,
        user_agent: Some(agent.as_str().into()),
        referer: (rng.next(3) == 0).then(|| "https://weixin.qq.com/s/x".into()),
        query: None,
        outcome: if rng.next(50) == 0 {
            Outcome::Disabled
        } else {
            Outcome::Redirected
        },
        head: false,
        key: None,
        generation: 0,
    }
}

/// A fresh database for the run: a temporary SQLite file, or a new database on the server.
async fn fresh_database() -> (String, Option<(String, String)>) {
    let name = format!("inklink_bench_{}", std::process::id());
    match std::env::var("BENCH_DATABASE_URL") {
        Ok(server) if !server.is_empty() => {
            let admin = Database::connect(&server)
                .await
                .expect("the database server");
            admin
                .execute_unprepared(&format!("CREATE DATABASE {name}"))
                .await
                .expect("create the bench database");
            let mut url = url::Url::parse(&server).unwrap();
            url.set_path(&format!("/{name}"));
            (url.to_string(), Some((server, name)))
        }
        _ => {
            let file = std::env::temp_dir().join(format!("{name}.db"));
            (format!("sqlite://{}?mode=rwc", file.display()), None)
        }
    }
}

async fn drop_database(server: Option<(String, String)>, url: &str) {
    if std::env::var_os("KEEP_DATABASE").is_some() {
        println!("kept the database: {url}");
        return;
    }
    match server {
        Some((server, name)) => {
            let admin = Database::connect(&server).await.unwrap();
            let force = if server.starts_with("postgres") {
                " WITH (FORCE)"
            } else {
                ""
            };
            let _ = admin
                .execute_unprepared(&format!("DROP DATABASE IF EXISTS {name}{force}"))
                .await;
        }
        None => {
            let file = url
                .trim_start_matches("sqlite://")
                .trim_end_matches("?mode=rwc");
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{file}{suffix}"));
            }
        }
    }
}

/// Gives `count` visitors numbers, as if they had come before (hashes at random, numbers from
/// 0), so that counting finds `visit_key` as months of traffic leave it.
async fn number_visitors(db: &sea_orm::DatabaseConnection, count: u64) {
    let started = Instant::now();
    let sql = match db.get_database_backend() {
        sea_orm::DbBackend::Sqlite => format!(
            "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < {count}) \
             INSERT OR IGNORE INTO visit_key (hash, id) SELECT random(), i FROM n"
        ),
        sea_orm::DbBackend::Postgres => format!(
            "INSERT INTO visit_key (hash, id) SELECT (random() * 9.2e18 - 4.6e18)::bigint, i \
             FROM generate_series(0, {count} - 1) AS i ON CONFLICT DO NOTHING"
        ),
        _ => panic!("KNOWN_VISITORS is for SQLite and PostgreSQL"),
    };
    db.execute_unprepared(&sql).await.unwrap();
    db.execute_unprepared(&format!(
        "UPDATE stats_tally SET next_visitor = {count} WHERE id = 1"
    ))
    .await
    .unwrap();
    println!(
        "numbered {count} visitors before the clicks in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// Bytes this process has written (`/proc/self/io`, `wchar`: through `write` and `pwrite`,
/// whether or not they reached the disk yet): SQLite's log and checkpoints.
fn written_bytes() -> u64 {
    let io = std::fs::read_to_string("/proc/self/io").unwrap_or_default();
    (io.lines())
        .find_map(|line| line.strip_prefix("wchar: "))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// CPU time of the calling thread in nanoseconds, as the scheduler accounts it (precise,
/// unlike the 10 ms ticks of `/proc/self/stat`).
fn thread_cpu_ns() -> u64 {
    schedstat_ns("/proc/thread-self/schedstat")
}

/// CPU time the whole machine spent busy (every process; idle, I/O wait and time stolen by
/// the host left out), in seconds: less this process's, what the database server spent, on a
/// machine that runs nothing else.
fn machine_busy_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let fields: Vec<f64> = stat
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .skip(1)
        .map(|v| v.parse().unwrap_or(0.0))
        .collect();
    // user, nice, system, idle, iowait, irq, softirq, steal; 100 ticks/s.
    let at = |i: usize| fields.get(i).copied().unwrap_or(0.0);
    (at(0) + at(1) + at(2) + at(5) + at(6)) / 100.0
}

/// CPU time of every thread of this process, per thread, in nanoseconds.
struct ProcessCpu(std::collections::HashMap<std::ffi::OsString, u64>);

impl ProcessCpu {
    fn now() -> Self {
        let tasks = std::fs::read_dir("/proc/self/task").into_iter().flatten();
        Self(
            tasks
                .flatten()
                .map(|task| {
                    (
                        task.file_name(),
                        schedstat_ns(task.path().join("schedstat")),
                    )
                })
                .collect(),
        )
    }

    /// The CPU time used since `self`, thread by thread: a sum over the live threads drops
    /// when one ends (the database driver's workers do), and a plain difference wrapped. A
    /// thread that ended in between is missing from the figure.
    fn since(&self) -> u64 {
        Self::now()
            .0
            .iter()
            .map(|(task, ns)| ns.saturating_sub(self.0.get(task).copied().unwrap_or(0)))
            .sum()
    }
}

fn schedstat_ns(path: impl AsRef<std::path::Path>) -> u64 {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|line| line.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// The request a browser behind the trusted proxy 127.0.0.1 sends for `event`.
fn request_of(event: &ClickEvent) -> actix_web::HttpRequest {
    let mut request = actix_web::test::TestRequest::get()
        .uri(&format!("/{}", event.code))
        .peer_addr("127.0.0.1:40000".parse().unwrap())
        .insert_header(("host", "s.example.com"))
        .insert_header(("x-forwarded-for", event.client_ip.to_string()));
    if let Some(agent) = &event.user_agent {
        request = request.insert_header(("user-agent", agent.as_ref()));
    }
    if let Some(referer) = &event.referer {
        request = request.insert_header(("referer", referer.as_ref()));
    }
    request.to_http_request()
}

/// The click store's tables: the clicks and their dictionaries.
const CLICK_TABLES: [&str; 6] = [
    "click",
    "click_agent",
    "click_place",
    "click_referer",
    "click_outcome",
    "click_text",
];
/// The statistics' tables.
const STATISTICS_TABLES: [&str; 7] = [
    "visit_statistics",
    "visit_statistics_breakdown",
    "visit_day_bits",
    "visit_day_added",
    "visit_day_stamp",
    "visit_key",
    "visit_key_recent",
];

/// Bytes the database holds in `tables`, indexes included.
async fn stored_bytes(db: &sea_orm::DatabaseConnection, tables: &[&str]) -> u64 {
    let backend = db.get_database_backend();
    let list = tables
        .iter()
        .map(|t| format!("'{t}'"))
        .collect::<Vec<_>>()
        .join(", ");
    let sql = match backend {
        sea_orm::DbBackend::Postgres => format!(
            "SELECT CAST(SUM(pg_total_relation_size(c.oid)) AS BIGINT) FROM pg_class c \
             JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = current_schema() AND c.relkind = 'r' AND c.relname IN ({list})"
        ),
        sea_orm::DbBackend::MySql => format!(
            "SELECT CAST(SUM(data_length + index_length) AS SIGNED) FROM information_schema.tables \
             WHERE table_schema = DATABASE() AND table_name IN ({list})"
        ),
        _ => format!(
            "SELECT SUM(d.pgsize) FROM dbstat d JOIN sqlite_schema s ON s.name = d.name \
             WHERE s.tbl_name IN ({list})"
        ),
    };
    let row = db
        .query_one_raw(sea_orm::Statement::from_string(backend, sql))
        .await
        .unwrap()
        .unwrap();
    row.try_get_by_index::<i64>(0).unwrap_or(0) as u64
}

async fn median_get(client: &awc::Client, cookie: &str, url: &str) -> f64 {
    timed_gets(client, cookie, url).await.1
}

/// The first of 15 requests and their median, in milliseconds.
async fn timed_gets(client: &awc::Client, cookie: &str, url: &str) -> (f64, f64) {
    let mut times = Vec::new();
    for _ in 0..15 {
        let started = Instant::now();
        let mut response = client
            .get(url)
            .insert_header(("cookie", cookie))
            .send()
            .await
            .unwrap();
        let body = response.body().limit(16 << 20).await.unwrap();
        assert_eq!(response.status().as_u16(), 200, "{url}");
        assert!(body.len() > 1000);
        times.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    let first = times[0];
    times.sort_by(f64::total_cmp);
    (first, times[times.len() / 2])
}

async fn run() {
    let writer_events = env_number("WRITER_EVENTS", 500_000);
    let total_events = env_number("EVENTS", 10_000_000).max(writer_events);
    let link_count = env_number("LINKS", 1000);
    let spread = match std::env::var("SPREAD").as_deref() {
        Ok("burst") => Spread::Burst,
        Ok("days") | Err(_) => Spread::Days,
        Ok(other) => panic!("SPREAD is burst or days, not {other}"),
    };
    let (url, server) = fresh_database().await;
    let spool = std::env::temp_dir().join(format!("inklink-bench-spool-{}", std::process::id()));
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let settings = inklink::cli::parse_from([
        "inklink",
        "--database-url",
        &url,
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--secret",
        "bench-secret",
        "--admin-password",
        "bench-password",
        "--geoip-db",
        GEOIP,
        "--spool-dir",
        spool.to_str().unwrap(),
        "--stats-interval",
        "3600",
        "--click-queue",
        "200000",
    ])
    .unwrap()
    .settings;
    let backend = if url.starts_with("postgres") {
        "PostgreSQL"
    } else if url.starts_with("mysql") {
        "MariaDB"
    } else {
        "SQLite"
    };
    let core = Arc::new(inklink::startup::open(settings).await.unwrap());
    inklink::services::users::ensure_admin(&core.db, Some("bench-password"))
        .await
        .unwrap();
    let app = Application::with_listener(core.clone(), listener).unwrap();
    let state = app.state();
    let handle = app.handle();
    actix_web::rt::spawn(app.run_until_stopped());

    let mut links = Vec::new();
    for i in 0..link_count {
        let target = inklink::services::links::parse_target(
            &core,
            &format!("https://example.com/campaign/{i}"),
        )
        .await
        .unwrap();
        let saved = inklink::services::links::create(
            &core,
            inklink::services::links::NewLink::to(target),
            &inklink::services::Actor::Cli,
        )
        .await
        .unwrap();
        links.push((saved.link.id, saved.link.compression_code.to_string()));
    }

    let known_visitors = env_number("KNOWN_VISITORS", 0);
    if known_visitors > 0 {
        number_visitors(&core.db, known_visitors).await;
    }

    // 1. The writer, fed as fast as it drains (the queue never overflows).
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let today = chrono::Utc::now().date_naive();
    let first_day = today - Duration::days(89);
    let metrics = state.clicks.metrics();
    let sink = state.clicks.sink();
    let proxies: TrustedProxies = "127.0.0.1".parse().unwrap();
    // Capture as the redirect does it (headers copied into an event, handed to the journal
    // and the queue), timed on this thread; the requests are built beforehand, untimed.
    let mut capture_ns = 0;
    let started = Instant::now();
    let mut n = 0;
    while n < writer_events {
        while sink.depth() > 150_000 {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        let chunk: Vec<_> = (n..(n + 5_000).min(writer_events))
            .map(|n| {
                let at = match spread {
                    Spread::Days => {
                        first_day.and_hms_opt(0, 0, 0).unwrap()
                            + Duration::seconds((n * 90 * 86_400 / total_events) as i64)
                    }
                    // Within today's first 20 hours (a day in the server's time zone, UTC).
                    Spread::Burst => {
                        today.and_hms_opt(0, 0, 0).unwrap()
                            + Duration::seconds((n * 72_000 / writer_events) as i64)
                    }
                };
                let event = synthetic(&mut rng, &links, at, spread);
                (request_of(&event), event)
            })
            .collect();
        n += chunk.len() as u64;
        let cpu = thread_cpu_ns();
        for (request, event) in &chunk {
            let mut captured =
                capture::click(request, &proxies, &event.code, event.link_id, event.outcome);
            captured.at = event.at;
            sink.record(captured);
        }
        capture_ns += thread_cpu_ns() - cpu;
    }
    while metrics.events_written.load(Relaxed) < writer_events {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let writer_seconds = started.elapsed().as_secs_f64();
    assert_eq!(metrics.events_dropped.load(Relaxed), 0);
    let tz = core.settings.timezone;
    // Counting what the writer stored, as the server's schedule does every second.
    let counting = Instant::now();
    let cpu = cpu_seconds();
    let busy = machine_busy_seconds();
    let written = written_bytes();
    let counted_live = tally::drain(&core.db, tz).await.unwrap();
    let written = written_bytes() - written;
    let live_seconds = counting.elapsed().as_secs_f64();
    let live_cpu = cpu_seconds() - cpu;
    // The database server's share, as the machine's busy time less this process's (SQLite
    // runs inside it: about zero there).
    let server_cpu = (machine_busy_seconds() - busy - live_cpu).max(0.0);
    if std::env::var_os("ONLY_COUNTING").is_some() {
        let per_click = |seconds: f64| seconds * 1e6 / counted_live.max(1) as f64;
        println!(
            "counted the writer's {counted_live} clicks in {live_seconds:.1} s ({:.0} clicks/s): {:.1} µs CPU of this process per click; \
             the rest of the machine (the database server) {:.1} µs; this process wrote {:.0} MB ({:.1} KB a click)",
            counted_live as f64 / live_seconds,
            per_click(live_cpu),
            per_click(server_cpu),
            written as f64 / 1e6,
            written as f64 / 1e3 / counted_live.max(1) as f64,
        );
        drop_database(server, &url).await;
        let _ = std::fs::remove_dir_all(spool);
        std::process::exit(0);
    }

    // 2. The rest of the events, straight into the table, in time order over 90 days.
    let mut enricher = Enricher::new(GeoIp::open(Some(GEOIP.as_ref()), "en"), core.visitor_key, 7);
    let store = ClickStore::new();
    let seeding = Instant::now();
    let (mut enrich_ns, mut store_ns) = (0, 0);
    let mut n = writer_events;
    while n < total_events {
        let events: Vec<ClickEvent> = (n..(n + BATCH as u64).min(total_events))
            .map(|n| {
                let at = first_day.and_hms_opt(0, 0, 0).unwrap()
                    + Duration::seconds((n * 90 * 86_400 / total_events) as i64);
                synthetic(&mut rng, &links, at, Spread::Days)
            })
            .collect();
        n += events.len() as u64;
        let cpu = thread_cpu_ns();
        let rows: Vec<_> = events.into_iter().map(|e| enricher.enrich(e)).collect();
        enrich_ns += thread_cpu_ns() - cpu;
        // The insert runs partly on the database driver's own threads.
        let cpu = ProcessCpu::now();
        store.insert(&core.db, &rows).await.unwrap();
        store_ns += cpu.since();
    }
    let seed_seconds = seeding.elapsed().as_secs_f64();
    let store_bytes = stored_bytes(&core.db, &CLICK_TABLES).await;
    let waiting_bytes = stored_bytes(&core.db, &["click_waiting"]).await;
    let aggregating = Instant::now();
    let counted = tally::drain(&core.db, tz).await.unwrap();
    let aggregate_seconds = aggregating.elapsed().as_secs_f64();
    // Counting deletes from the waiting list only: the click store does not change, and the
    // list's space is reused by the next clicks (on PostgreSQL once a vacuum has run).
    let counted_store_bytes = stored_bytes(&core.db, &CLICK_TABLES).await;
    let counted_waiting_bytes = stored_bytes(&core.db, &["click_waiting"]).await;
    let statistics_bytes = stored_bytes(&core.db, &STATISTICS_TABLES).await;
    // Without traffic: what counting costs a minute (one indexed look a second).
    let idle = ProcessCpu::now();
    let quiet = Instant::now();
    while quiet.elapsed() < std::time::Duration::from_secs(10) {
        tally::tally(&core.db, tz, tally::BATCH).await.unwrap();
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    }
    // Every thread's CPU as the scheduler accounts it (`/proc/self/stat` counts 10 ms ticks:
    // 0.06 s a minute apart).
    let idle_cpu_minute = idle.since() as f64 / 1e9 * 6.0;

    // 3. The dashboards, signed in.
    let client = awc::Client::builder()
        .disable_redirects()
        .timeout(std::time::Duration::from_secs(60))
        .finish();
    let base = format!("http://127.0.0.1:{port}");
    let mut login = client
        .get(format!("{base}/admin/login"))
        .send()
        .await
        .unwrap();
    let cookie = login
        .headers()
        .get("set-cookie")
        .map(|v| v.to_str().unwrap().split(';').next().unwrap().to_owned())
        .unwrap_or_default();
    let page = String::from_utf8(login.body().await.unwrap().to_vec()).unwrap();
    let at = page.find("name=\"csrf\" value=\"").unwrap() + 19;
    let csrf = &page[at..at + 64];
    let signed = client
        .post(format!("{base}/admin/login"))
        .insert_header(("cookie", cookie.clone()))
        .send_form(&[
            ("csrf", csrf),
            ("username", "admin"),
            ("password", "bench-password"),
        ])
        .await
        .unwrap();
    assert_eq!(signed.status().as_u16(), 303, "signed in");
    // The session cookie (sign-in also removes the sign-in form's own cookie).
    let cookie = signed
        .headers()
        .get_all("set-cookie")
        .map(|v| v.to_str().unwrap().split(';').next().unwrap().to_owned())
        .find(|pair| pair.starts_with("inklink_session="))
        .expect("a session cookie");
    let global_90 = median_get(
        &client,
        &cookie,
        &format!("{base}/admin/dashboard?range=90"),
    )
    .await;
    let global_7 = median_get(&client, &cookie, &format!("{base}/admin/dashboard?range=7")).await;
    let link_90 = median_get(
        &client,
        &cookie,
        &format!("{base}/admin/links/{}/stats?range=90", links[0].1),
    )
    .await;

    // 4. The same dashboards at campaign scale: the visitor bitmaps of all links replaced by
    // those of 90 days of 10 M clicks a day (DAY_VISITORS distinct visitors a day, 30% of
    // them back from earlier days, addresses four fifths of that), as counting would have
    // numbered them. The daily rows stay those of part 2: their size does not grow with
    // clicks (one row per day, breakdowns capped per day), the bitmaps do.
    // 5. Seconds from a click to the dashboard, on a second instance sharing the database
    // and counting on the default schedule: quiet, and after 10 s of 40,000 clicks a second.
    let marker = inklink::services::links::create(
        &core,
        inklink::services::links::NewLink::to(
            inklink::services::links::parse_target(&core, "https://example.com/marker")
                .await
                .unwrap(),
        ),
        &inklink::services::Actor::Cli,
    )
    .await
    .unwrap()
    .link
    .compression_code
    .to_string();
    let second = Second::start(&url, &spool).await;
    let quiet_lag = second.click_to_dashboard(&client, &cookie, &marker).await;
    let burst = second.burst(&links, &mut rng).await;
    let burst_lag = second.click_to_dashboard(&client, &cookie, &marker).await;

    let day_visitors = env_number("DAY_VISITORS", 3_000_000) as u32;
    let (scale_bytes, scale_90, scale_7) =
        campaign_scale(&core.db, &client, &cookie, &base, first_day, day_visitors).await;
    let scale_lag = second.click_to_dashboard(&client, &cookie, &marker).await;

    println!();
    println!("inklink click pipeline and dashboards — {backend}, {link_count} links");
    println!(
        "writer: {writer_events} clicks through the queue (enrich + GeoIP + batched insert) in {writer_seconds:.1} s = {:.0} events/s, 0 dropped",
        writer_events as f64 / writer_seconds
    );
    println!(
        "seeded {} more events directly in {seed_seconds:.1} s ({:.0} rows/s); {total_events} events in all over 90 days",
        total_events - writer_events,
        (total_events - writer_events) as f64 / seed_seconds
    );
    println!(
        "counted the writer's {counted_live} clicks in {live_seconds:.1} s: {:.1} µs CPU of this process per click ({:.0} clicks/s)",
        live_cpu * 1e6 / counted_live.max(1) as f64,
        counted_live as f64 / live_seconds
    );
    println!(
        "counted the other {counted} events in {aggregate_seconds:.1} s ({:.0} events/s)",
        counted as f64 / aggregate_seconds
    );
    let seeded = (total_events - writer_events).max(1) as f64;
    println!(
        "CPU per click by stage (this process): capture {:.2} µs, enrichment {:.2} µs, storing {:.2} µs, counting {:.1} µs{}",
        capture_ns as f64 / 1e3 / writer_events.max(1) as f64,
        enrich_ns as f64 / 1e3 / seeded,
        store_ns as f64 / 1e3 / seeded,
        live_cpu * 1e6 / counted_live.max(1) as f64,
        if backend == "SQLite" {
            ""
        } else {
            " (the database server's CPU not included)"
        }
    );
    let per_click = |bytes: u64| bytes as f64 / total_events as f64;
    println!(
        "stored: {:.0} bytes per click in the click store (clicks, dictionaries, indexes; {} MB); \
         {:.0} once counted",
        per_click(store_bytes),
        store_bytes >> 20,
        per_click(counted_store_bytes),
    );
    let seeded_clicks = total_events - writer_events;
    println!(
        "waiting list: {:.0} bytes per click waiting to be counted ({} MB for {seeded_clicks} clicks); \
         {} MB once counted, the space kept for the next clicks",
        waiting_bytes as f64 / seeded_clicks.max(1) as f64,
        waiting_bytes >> 20,
        counted_waiting_bytes >> 20,
    );
    println!(
        "statistics: {:.0} bytes per click ({} MB: {} links over 90 days, {:.0} clicks a link a day)",
        per_click(statistics_bytes),
        statistics_bytes >> 20,
        link_count,
        total_events as f64 / link_count as f64 / 90.0,
    );
    println!(
        "idle: {idle_cpu_minute:.2} s CPU a minute on statistics (counting turns with nothing new)"
    );
    println!("dashboard, all links, 90 days: {global_90:.1} ms (median of 15, over HTTP)");
    println!("dashboard, all links, 7 days:  {global_7:.1} ms");
    println!("dashboard, one link, 90 days:  {link_90:.1} ms");
    println!(
        "at 10 M clicks a day ({day_visitors} visitors a day, bitmaps of all links {:.1} MB a day):",
        scale_bytes as f64 / 90.0 / 1e6
    );
    println!(
        "dashboard, all links, 90 days: {:.1} ms (first request, reading every day's bitmaps: {:.1} ms)",
        scale_90.1, scale_90.0
    );
    println!(
        "dashboard, all links, 7 days:  {:.1} ms (first request: {:.1} ms)",
        scale_7.1, scale_7.0
    );

    println!(
        "click to dashboard (a second instance counting every second): {quiet_lag:.2} s quiet; {burst_lag:.2} s for a click right after {burst} clicks in 10 s; {scale_lag:.2} s quiet with today's bitmaps of 3 M visitors"
    );

    second.handle.stop(true).await;
    handle.stop(true).await;
    core.db.clone().close().await.ok();
    drop_database(server, &url).await;
    let _ = std::fs::remove_dir_all(spool);
}

/// A second server on the same database, counting on the default schedule (every second).
struct Second {
    state: web::Data<inklink::state::AppState>,
    handle: actix_web::dev::ServerHandle,
    base: String,
}

impl Second {
    async fn start(url: &str, spool: &std::path::Path) -> Self {
        let spool = spool.join("second");
        std::fs::create_dir_all(&spool).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let settings = inklink::cli::parse_from([
            "inklink",
            "--database-url",
            url,
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--secret",
            "bench-secret",
            "--geoip-db",
            GEOIP,
            "--spool-dir",
            spool.to_str().unwrap(),
            "--click-queue",
            "500000",
        ])
        .unwrap()
        .settings;
        let core = Arc::new(inklink::startup::open(settings).await.unwrap());
        let app = Application::with_listener(core, listener).unwrap();
        let (state, handle) = (app.state(), app.handle());
        actix_web::rt::spawn(app.run_until_stopped());
        Self {
            state,
            handle,
            base: format!("http://127.0.0.1:{port}"),
        }
    }

    /// Clicks `code` once through this server and waits until its dashboard's 7-day PV shows
    /// the click; returns the seconds from sending the click.
    async fn click_to_dashboard(&self, client: &awc::Client, cookie: &str, code: &str) -> f64 {
        let stats = format!("{}/admin/links/{code}/stats.csv?range=7", self.base);
        let shown = || async {
            let mut response = client
                .get(&stats)
                .insert_header(("cookie", cookie))
                .send()
                .await
                .unwrap();
            let body = response.body().await.unwrap();
            let body = String::from_utf8_lossy(&body).into_owned();
            let total = body.lines().last().unwrap_or_default().to_owned();
            total
                .split(',')
                .nth(1)
                .and_then(|pv| pv.parse::<u64>().ok())
                .unwrap_or_else(|| panic!("no total row: {total}"))
        };
        let before = shown().await;
        let started = Instant::now();
        let answer = client
            .get(format!("{}/{code}", self.base))
            .insert_header(("user-agent", AGENTS[0]))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status().as_u16(), 302);
        while shown().await <= before {
            assert!(started.elapsed().as_secs() < 900, "the click never showed");
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        started.elapsed().as_secs_f64()
    }

    /// 40,000 clicks a second for 10 seconds into this server's queue; returns how many.
    async fn burst(&self, links: &[(i64, String)], rng: &mut Rng) -> u64 {
        let sink = self.state.clicks.sink();
        let started = Instant::now();
        let mut sent = 0u64;
        for tick in 1..=100u32 {
            for _ in 0..4_000 {
                sink.record(synthetic(rng, links, inklink::db::now(), Spread::Days));
                sent += 1;
            }
            let next = std::time::Duration::from_millis(100) * tick;
            if let Some(wait) = next.checked_sub(started.elapsed()) {
                tokio::time::sleep(wait).await;
            }
        }
        sent
    }
}

/// Writes 90 days of all-links visitor and address bitmaps of `day_visitors` a day and
/// times the global dashboards; returns the bitmaps' bytes and the first request and median
/// of each.
async fn campaign_scale(
    db: &sea_orm::DatabaseConnection,
    client: &awc::Client,
    cookie: &str,
    base: &str,
    first_day: chrono::NaiveDate,
    day_visitors: u32,
) -> (u64, (f64, f64), (f64, f64)) {
    use inklink::stats::daysets::{ADDRESSES, VISITORS};
    use inklink::stats::dimension::ALL_LINKS;
    let backend = db.get_database_backend();
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let mut seen = 0u32;
    let mut bytes = 0u64;
    for day in 0..90 {
        let date = first_day + Duration::days(day);
        let returning = if seen == 0 { 0 } else { day_visitors / 10 * 3 };
        let mut visitors = roaring::RoaringBitmap::new();
        visitors.insert_range(seen..seen + (day_visitors - returning));
        while visitors.len() < u64::from(day_visitors) {
            visitors.insert(rng.next(u64::from(seen)) as u32);
        }
        seen += day_visitors - returning;
        // Addresses: four fifths of the visitors' numbers (shared addresses).
        let addresses: roaring::RoaringBitmap = visitors
            .iter()
            .filter(|n| n % 5 != 0)
            .map(|n| n / 5 * 4 + n % 5 - 1)
            .collect();
        for (kind, mut set) in [(VISITORS, visitors), (ADDRESSES, addresses)] {
            set.optimize();
            let mut members = Vec::with_capacity(set.serialized_size());
            set.serialize_into(&mut members).unwrap();
            bytes += members.len() as u64;
            let values = vec![
                sea_orm::Value::from(ALL_LINKS),
                kind.into(),
                date.into(),
                members.into(),
            ];
            let sql = match backend {
                sea_orm::DbBackend::MySql => {
                    "INSERT INTO visit_day_bits (url_map_id, kind, value, stat_date, members) \
                     VALUES (?, ?, '', ?, ?) ON DUPLICATE KEY UPDATE members = VALUES(members)"
                }
                sea_orm::DbBackend::Postgres => {
                    "INSERT INTO visit_day_bits (url_map_id, kind, value, stat_date, members) \
                     VALUES ($1, $2, '', $3, $4) ON CONFLICT (url_map_id, kind, value, stat_date) \
                     DO UPDATE SET members = excluded.members"
                }
                _ => {
                    "INSERT INTO visit_day_bits (url_map_id, kind, value, stat_date, members) \
                     VALUES (?, ?, '', ?, ?) ON CONFLICT (url_map_id, kind, value, stat_date) \
                     DO UPDATE SET members = excluded.members"
                }
            };
            db.execute_raw(sea_orm::Statement::from_sql_and_values(
                backend, sql, values,
            ))
            .await
            .unwrap();
        }
        // As counting stamps a day whose bitmaps it changed, with a turn after all others.
        let day_stamp = std::collections::BTreeSet::from([(ALL_LINKS, date)]);
        inklink::stats::daysets::stamp(db, 1_000_000 + day, day_stamp)
            .await
            .unwrap();
    }
    let global_90 = timed_gets(client, cookie, &format!("{base}/admin/dashboard?range=90")).await;
    let global_7 = timed_gets(client, cookie, &format!("{base}/admin/dashboard?range=7")).await;
    (bytes, global_90, global_7)
}

fn main() {
    actix_web::rt::System::new().block_on(run());
}
