//! Getting the raw clicks out: `inklink events export` / `GET /api/v1/events` over many
//! stored clicks, as NDJSON and CSV, in rows a second and the process's memory while it runs.
//!
//!   cargo bench --bench export                                   # SQLite
//!   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres cargo bench --bench export
//!
//! Knobs: EVENTS (10000000), LINKS (1000), HAND_ON (set: a `link.clicked` subscription exists
//! while the clicks are stored, and instead of exporting them the bench hands them all on to
//! it as the webhooks' dispatcher does, printing clicks a second and CPU a click; with
//! EVENTS=1200000 that is a 40,000-a-second campaign burst of 30 s).

use chrono::Duration;
use futures_util::StreamExt;
use inklink::clicks::ClickEvent;
use inklink::clicks::enrich::Enricher;
use inklink::clicks::geoip::GeoIp;
use inklink::clicks::writer::{BATCH, ClickStore};
use inklink::rules::Outcome;
use inklink::services::events::{self, ExportFilter, Format};
use sea_orm::{ConnectionTrait, Database};
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::Instant;

mod common;
use common::{Rng, cpu_seconds, env_number};

const GEOIP: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/geoip-test.mmdb"
);
const AGENTS: [&str; 4] = [
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 MicroMessenger/8.0.47(0x18002f2f) NetType/WIFI Language/zh_CN",
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.6099.144 Mobile Safari/537.36",
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
];
const PREFIXES: [[u8; 2]; 4] = [[36, 110], [116, 228], [113, 108], [58, 100]];
const DAYS: i64 = 30;

/// Resident memory now, in MB.
fn rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .unwrap_or(0.0)
        / 1024.0
}

async fn run() {
    let total = env_number("EVENTS", 10_000_000);
    let link_count = env_number("LINKS", 1000);
    let name = format!("inklink_export_{}", std::process::id());
    let (url, server) = match std::env::var("BENCH_DATABASE_URL") {
        Ok(server) if !server.is_empty() => {
            let admin = Database::connect(&server).await.unwrap();
            admin
                .execute_unprepared(&format!("CREATE DATABASE {name}"))
                .await
                .unwrap();
            let mut url = url::Url::parse(&server).unwrap();
            url.set_path(&format!("/{name}"));
            (url.to_string(), Some(server))
        }
        _ => {
            let file = std::env::temp_dir().join(format!("{name}.db"));
            (format!("sqlite://{}?mode=rwc", file.display()), None)
        }
    };
    let spool = std::env::temp_dir().join(format!("inklink-export-spool-{}", std::process::id()));
    let settings = inklink::cli::parse_from([
        "inklink",
        "--database-url",
        &url,
        "--secret",
        "bench-secret",
        "--spool-dir",
        spool.to_str().unwrap(),
        "--timezone",
        "UTC",
        "--webhook-allow-private",
        "true",
    ])
    .unwrap()
    .settings;
    let core = Arc::new(inklink::startup::open(settings).await.unwrap());
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
    let hand_on = std::env::var_os("HAND_ON").is_some();
    if hand_on {
        use inklink::services::webhooks;
        let new = webhooks::NewWebhook::parse("http://127.0.0.1:9/", None, ["link.clicked"], None)
            .unwrap();
        webhooks::create(&core, new, &inklink::services::Actor::Cli, "en")
            .await
            .unwrap();
    }
    let today = chrono::Utc::now().date_naive();
    let first_day = today - Duration::days(DAYS - 1);
    let seeding = actix_web::rt::spawn(seed(core.clone(), links, total, first_day));
    if hand_on {
        hand_on_while_stored(&core, seeding, total).await;
    } else {
        let seconds = seeding.await.unwrap();
        println!("{total} clicks over {DAYS} days stored in {seconds:.1} s");
        for format in [Format::Ndjson, Format::Csv] {
            export_all(&core, first_day, today, total, format).await;
        }
    }
    match server {
        Some(server) => {
            drop(core);
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
    let _ = std::fs::remove_dir_all(spool);
}

/// Hands every stored click on to the `link.clicked` subscription as the webhooks' dispatcher
/// does, while `seeding` is still storing them, and prints the rates.
async fn hand_on_while_stored(
    core: &inklink::state::Inklink,
    seeding: actix_web::rt::task::JoinHandle<f64>,
    total: u64,
) {
    use inklink::services::webhooks::{deliver, hand_on};
    let policy = deliver::Policy {
        allow_private: true,
        first_retry_ms: 1_000,
        outbox_limit: u64::MAX / 2,
        keep_days: 7,
    };
    let metrics = inklink::metrics::Metrics::default();
    let started = Instant::now();
    let cpu = cpu_seconds();
    let (mut taken, mut stored) = (0, None);
    // As the dispatcher does it, while the clicks are being stored.
    loop {
        let turn = hand_on::hand_on_clicks(&core.db, policy.outbox_limit, &metrics)
            .await
            .unwrap();
        taken += turn;
        if stored.is_none() && seeding.is_finished() {
            stored = Some((started.elapsed().as_secs_f64(), taken));
        }
        match (turn, stored) {
            (0, Some(_)) => break,
            (0, None) => actix_web::rt::time::sleep(std::time::Duration::from_millis(200)).await,
            _ => actix_web::rt::task::yield_now().await,
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let (stored_at, taken_then) = stored.unwrap();
    assert_eq!(taken, total, "every click handed on once");
    println!(
        "{total} clicks stored in {stored_at:.1} s ({:.0}/s) while {taken_then} were handed on; all handed on {:.1} s after the last was stored ({:.0} clicks/s meanwhile); {:.1} µs CPU of this process a click",
        total as f64 / stored_at,
        seconds - stored_at,
        (taken - taken_then) as f64 / (seconds - stored_at).max(1e-9),
        (cpu_seconds() - cpu) * 1e6 / taken as f64,
    );
}

/// Exports every stored click in `format`, printing rows a second, CPU a row and memory.
async fn export_all(
    core: &inklink::state::Inklink,
    first_day: chrono::NaiveDate,
    today: chrono::NaiveDate,
    total: u64,
    format: Format,
) {
    let filter =
        ExportFilter::new(first_day, today, None, None, &inklink::services::Actor::Cli).unwrap();
    let peak = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (peak, done) = (peak.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(Relaxed) {
                peak.fetch_max((rss_mb() * 10.0) as u64, Relaxed);
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        })
    };
    let before = rss_mb();
    let started = Instant::now();
    let cpu = cpu_seconds();
    let stream = events::stream(core.db.clone(), chrono_tz::UTC, filter, None, format);
    futures_util::pin_mut!(stream);
    let (mut rows, mut bytes) = (0u64, 0u64);
    let mut at_tenth = 0.0;
    let mut half = None;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.unwrap();
        rows += chunk.bytes().filter(|b| *b == b'\n').count() as u64;
        bytes += chunk.len() as u64;
        if at_tenth == 0.0 && rows >= total / 10 {
            at_tenth = rss_mb();
        }
        if half.is_none() && rows >= total / 2 {
            half = Some(started.elapsed().as_secs_f64());
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu;
    done.store(true, Relaxed);
    sampler.join().unwrap();
    let rows = match format {
        Format::Csv => rows - 1,
        Format::Ndjson => rows,
    };
    assert_eq!(rows, total, "every click exported once");
    let half = half.unwrap_or(seconds);
    println!(
        "{:<6} {rows} rows, {:.0} MB in {seconds:.1} s: {:.0} rows/s ({:.0} in the first half, {:.0} in the second), {:.1} µs CPU a row; RSS {before:.0} MB before, {at_tenth:.0} MB at a tenth, {:.0} MB at the end, {:.0} MB at most",
        format.extension(),
        bytes as f64 / 1e6,
        rows as f64 / seconds,
        rows as f64 / 2.0 / half,
        rows as f64 / 2.0 / (seconds - half).max(1e-9),
        cpu * 1e6 / rows as f64,
        rss_mb(),
        peak.load(Relaxed) as f64 / 10.0,
    );
}

/// Stores `total` synthetic clicks spread over [`DAYS`] days from `first_day`, in the writer's
/// batches; returns the seconds it took.
async fn seed(
    core: Arc<inklink::state::Inklink>,
    links: Vec<(i64, String)>,
    total: u64,
    first_day: chrono::NaiveDate,
) -> f64 {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut enricher = Enricher::new(GeoIp::open(Some(GEOIP.as_ref()), "en"), core.visitor_key, 7);
    let store = ClickStore::new();
    let seeding = Instant::now();
    let mut n = 0;
    while n < total {
        let events: Vec<ClickEvent> = (n..(n + BATCH as u64).min(total))
            .map(|n| {
                let (id, code) = &links[rng.next(links.len() as u64) as usize];
                let prefix = PREFIXES[rng.next(PREFIXES.len() as u64) as usize];
                ClickEvent {
                    at: first_day.and_hms_opt(0, 0, 0).unwrap()
                        + Duration::seconds((n * DAYS as u64 * 86_400 / total) as i64),
                    code: code.as_str().into(),
                    link_id: Some(*id),
                    host: Some("s.example.com".into()),
                    client_ip: IpAddr::from([
                        prefix[0],
                        prefix[1],
                        rng.next(4) as u8,
                        rng.next(250) as u8,
                    ]),
                    user_agent: Some(AGENTS[rng.next(AGENTS.len() as u64) as usize].into()),
                    referer: (rng.next(3) == 0).then(|| "https://weixin.qq.com/s/x".into()),
                    query: (rng.next(4) == 0).then(|| "utm_source=sms".into()),
                    outcome: Outcome::Redirected,
                    head: false,
                    key: None,
                    generation: 0,
                }
            })
            .collect();
        n += events.len() as u64;
        let rows: Vec<_> = events.into_iter().map(|e| enricher.enrich(e)).collect();
        store.insert(&core.db, &rows).await.unwrap();
    }
    seeding.elapsed().as_secs_f64()
}

fn main() {
    actix_web::rt::System::new().block_on(run());
}
