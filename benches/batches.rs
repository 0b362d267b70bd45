//! Campaign batch budgets (the targets of the batches issue), on a fresh database:
//!
//! 1. creating a batch of RECIPIENTS (1,000,000) in `code` mode from a CSV file of phones and
//!    names, as the API's upload does: seconds, and bytes per recipient stored (the
//!    recipients' table with its indexes), with the phone numbers and again without them (as
//!    the retention purge leaves them);
//! 2. ingesting receipts 10,000 to a request (Aliyun's format, matched by key), RECEIPTS
//!    (100,000) in all: the median and the slowest request;
//! 3. CLICKS (100,000) clicks by as many recipients, stored and counted (counting places each
//!    person); then the funnel of the batch, read as its API reads it (median of 15).
//!
//!   cargo bench --bench batches                                   # SQLite
//!   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres cargo bench --bench batches

use chrono::Duration;
use inklink::clicks::ClickEvent;
use inklink::clicks::enrich::Enricher;
use inklink::clicks::geoip::GeoIp;
use inklink::clicks::writer::{BATCH, ClickStore};
use inklink::rules::Outcome;
use inklink::services::Actor;
use inklink::services::batches::read::RecipientFile;
use inklink::services::batches::receipts::{self, Incoming, Scope};
use inklink::services::batches::{self, BatchFields, export, funnel};
use sea_orm::{ConnectionTrait, Database};
use std::net::IpAddr;
use std::time::Instant;

const GEOIP: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/geoip-test.mmdb"
);
const CARRIERS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/carrier-test.mmdb"
);
const PREFIXES: [[u8; 2]; 6] = [
    [36, 110],
    [116, 228],
    [113, 108],
    [58, 100],
    [203, 0],
    [100, 64],
];

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

async fn fresh_database() -> (String, Option<(String, String)>) {
    let name = format!("inklink_bench_batches_{}", std::process::id());
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

/// Bytes of `table` with its indexes, after the database has tidied up.
async fn table_bytes(db: &sea_orm::DatabaseConnection, table: &str) -> u64 {
    let backend = db.get_database_backend();
    let (tidy, sql) = match backend {
        sea_orm::DbBackend::Postgres => (
            format!("VACUUM FULL {table}"),
            format!("SELECT CAST(pg_total_relation_size('{table}') AS BIGINT)"),
        ),
        sea_orm::DbBackend::MySql => (
            format!("OPTIMIZE TABLE {table}"),
            format!(
                "SELECT CAST(data_length + index_length AS SIGNED) FROM information_schema.tables \
                 WHERE table_schema = DATABASE() AND table_name = '{table}'"
            ),
        ),
        _ => (
            "VACUUM".to_owned(),
            format!(
                "SELECT SUM(d.pgsize) FROM dbstat d JOIN sqlite_schema s ON s.name = d.name \
                 WHERE s.tbl_name = '{table}'"
            ),
        ),
    };
    db.execute_unprepared(&tidy).await.unwrap();
    let row = db
        .query_one_raw(sea_orm::Statement::from_string(backend, sql))
        .await
        .unwrap()
        .unwrap();
    row.try_get_by_index::<i64>(0).unwrap_or(0) as u64
}

fn median(times: &mut [f64]) -> f64 {
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn main() {
    actix_web::rt::System::new().block_on(run());
}

async fn run() {
    let recipients = env_number("RECIPIENTS", 1_000_000);
    let receipt_count = env_number("RECEIPTS", 100_000).min(recipients);
    let click_count = env_number("CLICKS", 100_000).min(recipients);
    let (url, server) = fresh_database().await;
    let settings = inklink::cli::parse_from([
        "inklink",
        "--database-url",
        &url,
        "--secret",
        "bench-secret",
        "--geoip-db",
        GEOIP,
        "--carrier-db",
        CARRIERS,
    ])
    .unwrap()
    .settings;
    let core = inklink::startup::open(settings)
        .await
        .expect("the bench database opens");
    let db = &core.db;

    // 1. A million recipients from a CSV file.
    let mut file = String::with_capacity(recipients as usize * 24);
    file.push_str("phone,name\n");
    for n in 0..recipients {
        file.push_str(&format!("1{:010},客户{n}\n", 3_000_000_000 + n));
    }
    let spec = BatchFields {
        name: "bench".into(),
        url: Some("https://shop.example.com/sale?from=sms".into()),
        template: "【小店】{name}您好，双十一低至5折 {link} 回T退订".into(),
        ..Default::default()
    }
    .parse(&core)
    .await
    .unwrap();
    let started = Instant::now();
    let parsed = RecipientFile::parse(file.as_bytes()).unwrap();
    let created = batches::create(&core, spec, &parsed.columns(), parsed.rows(), &Actor::Cli)
        .await
        .unwrap();
    let create_seconds = started.elapsed().as_secs_f64();
    drop(parsed);
    drop(file);
    let batch = created.batch;
    assert_eq!(batch.recipients as u64, recipients);
    let with_phones = table_bytes(db, "batch_recipient").await;

    // 2. Receipts, 10,000 to a request, matched by the key of the messages CSV.
    let mut request_times = Vec::new();
    let mut start = 0;
    while start < receipt_count {
        let end = (start + 10_000).min(receipt_count);
        let list: Vec<Result<Incoming, inklink::i18n::Message>> = (start..end)
            .map(|n| {
                Ok(Incoming {
                    key: Some(batches::recipient_key(batch.id, n as i32 + 1)),
                    phone: None,
                    delivered: n % 10 != 0,
                    error_code: (n % 10 == 0).then(|| "isv.MOBILE_NUMBER_ILLEGAL".to_owned()),
                    at: Some(1_796_000_000 + n as i64 % 3600),
                })
            })
            .collect();
        let started = Instant::now();
        receipts::ingest(&core, Scope::Batch(&batch), list)
            .await
            .unwrap();
        request_times.push(started.elapsed().as_secs_f64());
        start = end;
    }
    let slowest = request_times.iter().copied().fold(0.0, f64::max);
    let receipts_median = median(&mut request_times);

    // 3. A click by each of the first CLICKS recipients, stored and counted.
    let mut tokens = Vec::with_capacity(click_count as usize);
    let mut after = 0;
    while (tokens.len() as u64) < click_count {
        let page = export::page(db, batch.id, after, export::Filter::default())
            .await
            .unwrap();
        after = page.last().unwrap().number;
        tokens.extend(page.into_iter().map(|line| line.token));
    }
    tokens.truncate(click_count as usize);
    let mut enricher = Enricher::new(
        GeoIp::open(Some(GEOIP.as_ref()), "zh-CN").with_carriers(Some(CARRIERS.as_ref())),
        core.visitor_key,
        7,
    );
    let store = ClickStore::new();
    let first = inklink::db::now() - Duration::hours(1);
    for (chunk_index, chunk) in tokens.chunks(BATCH).enumerate() {
        let rows: Vec<_> = chunk
            .iter()
            .enumerate()
            .map(|(i, token)| {
                let n = chunk_index * BATCH + i;
                let [a, b] = PREFIXES[n % PREFIXES.len()];
                enricher.enrich(ClickEvent {
                    at: first + Duration::milliseconds(n as i64 * 30),
                    code: token.as_str().into(),
                    link_id: Some(batch.link_id),
                    host: None,
                    client_ip: IpAddr::from([a, b, (n / 256 % 256) as u8, (n % 256) as u8]),
                    user_agent: Some("Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1".into()),
                    referer: None,
                    query: None,
                    outcome: Outcome::Redirected,
                    head: false,
                    key: None,
                    generation: 0,
                })
            })
            .collect();
        store.insert(db, &rows).await.unwrap();
    }
    let counting = Instant::now();
    inklink::stats::tally::drain(db, core.settings.timezone)
        .await
        .unwrap();
    let count_seconds = counting.elapsed().as_secs_f64();
    let mut funnel_times = Vec::new();
    let mut last = None;
    for _ in 0..15 {
        let started = Instant::now();
        last = Some(funnel::read(db, &batch).await.unwrap());
        funnel_times.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    let read = last.unwrap();
    assert_eq!(read.clicked as u64, click_count);
    assert_eq!(
        read.delivered as u64,
        receipt_count - receipt_count.div_ceil(10)
    );
    let funnel_ms = median(&mut funnel_times);

    // The retention purge leaves the recipients without their phone numbers and variables.
    db.execute_unprepared("UPDATE batch_recipient SET phone = NULL, vars = NULL")
        .await
        .unwrap();
    let without_phones = table_bytes(db, "batch_recipient").await;

    let backend = format!("{:?}", db.get_database_backend());
    println!("campaign batches on {backend}, {recipients} recipients in code mode");
    println!("| step | figure | target |");
    println!("| --- | --- | --- |");
    println!("| create the batch from a CSV | {create_seconds:.1} s | ≤ 60 s |");
    println!(
        "| stored per recipient, with phone and name | {:.0} bytes | |",
        with_phones as f64 / recipients as f64
    );
    println!(
        "| stored per recipient, phone and name deleted | {:.0} bytes | ≤ 120 bytes |",
        without_phones as f64 / recipients as f64
    );
    println!(
        "| 10,000 receipts in one request ({} requests) | median {receipts_median:.2} s, slowest {slowest:.2} s | ≤ 2 s |",
        request_times.len()
    );
    println!("| count {click_count} clicks of recipients | {count_seconds:.1} s | |");
    println!(
        "| funnel of the batch ({receipt_count} receipts, {click_count} people clicked) | median {funnel_ms:.1} ms | ≤ 200 ms |"
    );
    drop_database(server, &url).await;
}
