//! Durability of click recording: a database outage, a shutdown under load, a GeoIP file
//! that appears later, and rebuilding statistics from the command line.

use crate::analytics::{GEOIP, wait_written};
use crate::cli::{inklink, inklink_live, ok};
use crate::support::{
    Backend, TcpProxy, TestApp, TestDb, create_link, page_view, spawn_on, spawn_via,
};
use sea_orm::{ConnectionTrait, Database};
use std::collections::HashSet;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

async fn query_strings(db: &sea_orm::DatabaseConnection) -> Vec<String> {
    inklink::clickstore::stored::all(db)
        .await
        .unwrap()
        .into_iter()
        .filter(|row| row.outcome.status() == "success")
        .map(|row| row.query_string.as_deref().unwrap_or_default().to_owned())
        .collect()
}

async fn click(app: &TestApp, code: &str, n: usize) {
    let (status, _, _) = app.fetch(&format!("/{code}?n={n}")).await;
    assert_eq!(status, 302, "click {n} is redirected");
}

#[actix_web::test]
async fn clicks_during_a_database_outage_are_kept_and_arrive_when_it_returns() {
    let db = Arc::new(TestDb::create().await);
    // Five events fit in memory; the rest of the outage goes to the spool file.
    let extra = ["--click-buffer", "5"];
    let proxy = match db.backend {
        Backend::Sqlite => None,
        _ => Some(TcpProxy::start(db.server_addr().expect("a server address")).await),
    };
    let app = match &proxy {
        Some(proxy) => spawn_via(db.clone(), &proxy.url_for(&db.url), &extra).await,
        None => spawn_on(db.clone(), &extra).await,
    };
    let link = create_link(&app, "https://example.com/outage").await;
    let code = link.link.compression_code.clone();
    click(&app, &code, 0).await;
    wait_written(&app, 1).await;

    let started = Instant::now();
    // SQLite: another connection holds the write lock past the 10 s busy timeout.
    let locker = match db.backend {
        Backend::Sqlite => {
            let locker = Database::connect(
                sea_orm::ConnectOptions::new(&db.url)
                    .max_connections(1)
                    .to_owned(),
            )
            .await
            .unwrap();
            locker.execute_unprepared("BEGIN EXCLUSIVE").await.unwrap();
            Some(locker)
        }
        _ => {
            proxy.as_ref().unwrap().cut();
            None
        }
    };
    // Redirects of the cached link keep working, past the cache TTL too.
    for n in 1..=30 {
        click(&app, &code, n).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let metrics = app.state.clicks.metrics();
    let hold_until = match db.backend {
        Backend::Sqlite => Duration::from_secs(13),
        _ => Duration::from_secs(7),
    };
    tokio::time::sleep(hold_until.saturating_sub(started.elapsed())).await;
    assert_eq!(
        metrics.events_written.load(Relaxed),
        1,
        "nothing written during the outage"
    );
    assert!(metrics.events_backlog.load(Relaxed) > 0, "events are held");
    assert!(
        metrics.events_spooled.load(Relaxed) > 0,
        "the overflow was spooled"
    );
    let spool_file = db
        .spool_dir()
        .join(format!("inklink-spool-{}.jsonl", app.port));
    assert!(
        spool_file.exists(),
        "{} exists during the outage",
        spool_file.display()
    );

    match locker {
        Some(locker) => {
            locker.execute_unprepared("COMMIT").await.unwrap();
            locker.close().await.unwrap();
        }
        None => proxy.as_ref().unwrap().restore(),
    }
    wait_written(&app, 31).await;
    let mut stored = query_strings(&app.core.db).await;
    stored.sort();
    let mut expected: Vec<String> = (0..=30).map(|n| format!("n={n}")).collect();
    expected.sort();
    assert_eq!(stored, expected, "every click once");
    assert_eq!(metrics.events_dropped.load(Relaxed), 0);
    assert_eq!(metrics.events_backlog.load(Relaxed), 0);
    assert!(!spool_file.exists(), "the emptied spool is removed");
}

#[actix_web::test]
async fn sigterm_under_load_loses_no_click_and_records_none_twice() {
    let db = Arc::new(TestDb::create().await);
    ok(inklink(
        &db,
        &["link", "add", "https://example.com/t", "--code", "term"],
    ));
    let log = std::fs::File::create(
        std::env::temp_dir().join(format!("inklink-term-{}.log", std::process::id())),
    )
    .unwrap();
    let (mut server, port) =
        crate::support::serve_binary(&db, &[("INKLINK_WORKERS", "2")], log.into()).await;
    let client = crate::support::client();
    let base = format!("http://127.0.0.1:{port}");
    let ready = client.get(format!("{base}/healthz")).send().await.is_ok();
    assert!(ready, "the server came up");

    let (redirected, clients) = load(&base, "term");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    crate::support::signal(&server, "-TERM");
    let redirected = finished(redirected, clients).await;
    let status = crate::support::exit_of(&mut server).await;
    assert!(status.success(), "exit status {status}");
    let conn = Database::connect(&db.url).await.unwrap();
    assert_stored_once(&conn, &redirected).await;
}

/// Eight clients following `/{code}?n=…` as fast as they can until the server stops
/// answering; what they collect is the query of every click that was redirected.
fn load(
    base: &str,
    code: &str,
) -> (
    Arc<Mutex<Vec<String>>>,
    Vec<actix_web::rt::task::JoinHandle<()>>,
) {
    let redirected: Arc<Mutex<Vec<String>>> = Arc::default();
    let mut clients = Vec::new();
    for worker in 0..8 {
        let (redirected, url) = (redirected.clone(), format!("{base}/{code}"));
        clients.push(actix_web::rt::spawn(async move {
            let client = crate::support::client();
            // A long referrer and user agent (each near the 2,048 bytes kept) make a journal
            // line about 4,100 bytes, so that about 500 clicks a second on a worker fill one of
            // its 2 MB segment files before the generation closes: a debug build beside other
            // tests on a slow machine still does that (at 1,600 bytes a line, CI once did not).
            let referrer = format!("https://example.com/{}", "r".repeat(2000));
            let agent = format!("Mozilla/5.0 (load) {}", "a".repeat(2000));
            for i in 0.. {
                let n = format!("n={worker}-{i}");
                let request = client.get(format!("{url}?{n}"));
                match request
                    .insert_header(("referer", referrer.as_str()))
                    .insert_header(("user-agent", agent.as_str()))
                    .send()
                    .await
                {
                    Ok(response) if response.status().as_u16() == 302 => {
                        redirected.lock().unwrap().push(n)
                    }
                    Ok(response) => panic!("unexpected status {}", response.status()),
                    // The server has stopped accepting.
                    Err(_) => break,
                }
            }
        }));
    }
    (redirected, clients)
}

async fn finished(
    redirected: Arc<Mutex<Vec<String>>>,
    clients: Vec<actix_web::rt::task::JoinHandle<()>>,
) -> Vec<String> {
    for task in clients {
        task.await.unwrap();
    }
    let redirected = redirected.lock().unwrap().clone();
    assert!(
        redirected.len() > 100,
        "the load ran ({} clicks)",
        redirected.len()
    );
    redirected
}

/// Every redirected click is stored, and no click twice.
async fn assert_stored_once(conn: &sea_orm::DatabaseConnection, redirected: &[String]) {
    let stored = query_strings(conn).await;
    let unique: HashSet<&String> = stored.iter().collect();
    assert_eq!(unique.len(), stored.len(), "no click recorded twice");
    let missing: Vec<&String> = redirected.iter().filter(|n| !unique.contains(n)).collect();
    assert!(
        missing.is_empty(),
        "{} of {} redirected clicks are missing, e.g. {:?}",
        missing.len(),
        redirected.len(),
        missing.first()
    );
}

fn journals(db: &TestDb) -> Vec<String> {
    std::fs::read_dir(db.spool_dir())
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .filter(|name| name.starts_with("inklink-journal-"))
                .collect()
        })
        .unwrap_or_default()
}

#[actix_web::test]
async fn kill_9_under_load_loses_no_answered_click_and_records_none_twice() {
    let db = Arc::new(TestDb::create().await);
    ok(inklink(
        &db,
        &["link", "add", "https://example.com/k", "--code", "kill9"],
    ));
    let env = [("INKLINK_WORKERS", "2")];
    let (mut server, port) =
        crate::support::serve_binary(&db, &env, std::process::Stdio::null()).await;
    let base = format!("http://127.0.0.1:{port}");
    let (redirected, clients) = load(&base, "kill9");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    // Files are named …-{generation}-{stripe}-{segment}.journal. The load goes on until a
    // stripe is past its first segment (a slow machine takes longer than the 1.5 s), so that
    // the replay below reads clicks from more than one segment.
    let past_first_segment = |db: &TestDb| {
        journals(db)
            .iter()
            .any(|name| !name.ends_with("-0.journal"))
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while !past_first_segment(&db) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    crate::support::signal(&server, "-KILL");
    let redirected = finished(redirected, clients).await;
    assert!(!crate::support::exit_of(&mut server).await.success());
    assert!(
        !journals(&db).is_empty(),
        "the dead process left its journal"
    );
    assert!(
        past_first_segment(&db),
        "the load filled more than one segment: {:?}",
        journals(&db)
    );

    // The next start on that port writes what the journal holds, then removes it.
    let (mut server, _) =
        crate::support::serve_binary_on(&db, port, &env, std::process::Stdio::null()).await;
    let conn = Database::connect(&db.url).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while query_strings(&conn).await.len() < redirected.len() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    crate::support::signal(&server, "-TERM");
    assert!(crate::support::exit_of(&mut server).await.success());
    assert_stored_once(&conn, &redirected).await;
    assert_eq!(
        journals(&db),
        Vec::<String>::new(),
        "a clean stop leaves no journal"
    );
}

#[actix_web::test]
async fn a_geoip_database_that_appears_later_is_picked_up_without_a_restart() {
    let db = Arc::new(TestDb::create().await);
    let path = db.spool_dir().with_extension("mmdb");
    let path_text = path.to_str().unwrap().to_owned();
    let app = spawn_on(
        db.clone(),
        &["--geoip-db", &path_text, "--trusted-proxies", "127.0.0.1"],
    )
    .await;
    let link = create_link(&app, "https://example.com/geo").await;
    let code = link.link.compression_code.clone();
    let visit = || async {
        let response = app
            .client
            .get(app.url(&format!("/{code}")))
            .insert_header(("x-forwarded-for", "116.228.1.7"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 302);
    };
    visit().await;
    wait_written(&app, 1).await;
    std::fs::copy(GEOIP, &path).unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    visit().await;
    wait_written(&app, 2).await;
    let conn = &app.core.db;
    let countries: Vec<Option<String>> = inklink::clickstore::stored::all(conn)
        .await
        .unwrap()
        .into_iter()
        .map(|row| row.province.as_deref().map(str::to_owned))
        .collect();
    assert_eq!(countries, vec![None, Some("Shanghai".to_owned())]);
    let _ = std::fs::remove_file(path);
}

#[actix_web::test]
async fn stats_rebuild_recomputes_a_range_from_the_command_line() {
    let db = Arc::new(TestDb::create().await);
    let app = spawn_on(db.clone(), &["--stats-interval", "3600"]).await;
    let link = create_link(&app, "https://example.com/cli-stats").await;
    let at = chrono::NaiveDate::from_ymd_opt(2026, 3, 14)
        .unwrap()
        .and_hms_opt(23, 30, 0)
        .unwrap();
    for i in 0..3u8 {
        app.state.clicks.sink().record(page_view(
            link.link.compression_code.as_str(),
            link.link.id,
            at,
            std::net::IpAddr::from([192, 0, 2, i]),
        ));
    }
    wait_written(&app, 3).await;
    // 23:30 UTC is the next day in Shanghai.
    let run = inklink_live(
        &db,
        &[
            "stats",
            "rebuild",
            "--from",
            "2026-03-14",
            "--to",
            "2026-03-16",
            "--timezone",
            "Asia/Shanghai",
        ],
    )
    .await;
    assert!(ok(run).contains("recomputed 3 days"));
    let days = inklink::stats::report::daily(
        &app.core.db,
        inklink::stats::report::Scope::Link(link.link.id),
        chrono::NaiveDate::from_ymd_opt(2026, 3, 14).unwrap(),
        chrono::NaiveDate::from_ymd_opt(2026, 3, 16).unwrap(),
    )
    .await
    .unwrap();
    let pv: Vec<(String, i64, i64)> = days
        .iter()
        .map(|d| (d.day.to_string(), d.visits.pv, d.visits.ip))
        .collect();
    assert_eq!(
        pv,
        vec![
            ("2026-03-14".to_owned(), 0, 0),
            ("2026-03-15".to_owned(), 3, 3),
            ("2026-03-16".to_owned(), 0, 0)
        ]
    );
    let reversed = inklink_live(
        &db,
        &[
            "stats",
            "rebuild",
            "--from",
            "2026-03-16",
            "--to",
            "2026-03-14",
        ],
    )
    .await;
    assert_ne!(reversed.code, 0);
    assert!(reversed.stderr.contains("is after"), "{}", reversed.stderr);
    let bad = inklink_live(&db, &["stats", "rebuild", "--from", "14/03/2026"]).await;
    assert_ne!(bad.code, 0);
    assert!(bad.stderr.contains("--from"), "{}", bad.stderr);
}

#[test]
fn report_periods_are_parsed_with_clear_errors() {
    use chrono::NaiveDate;
    use inklink::stats::report::{Period, PeriodError};
    let today = NaiveDate::from_ymd_opt(2026, 11, 21).unwrap();
    let day = |s: &str| NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap();
    let span = |p: Period| (p.from.to_string(), p.to.to_string(), p.days());
    assert_eq!(
        span(Period::parse(None, None, None, today).unwrap()),
        ("2026-11-15".into(), "2026-11-21".into(), 7)
    );
    assert_eq!(
        Period::parse(Some("90"), None, None, today).unwrap().days(),
        90
    );
    assert_eq!(
        span(Period::parse(None, Some("2026-01-01"), Some("2026-01-01"), today).unwrap()),
        ("2026-01-01".into(), "2026-01-01".into(), 1)
    );
    assert_eq!(
        Period::parse(None, Some("2025-11-21"), None, today)
            .unwrap()
            .days(),
        366
    );
    assert_eq!(
        Period::parse(Some("12"), None, None, today),
        Err(PeriodError::BadPreset("12".into()))
    );
    assert_eq!(
        Period::parse(None, Some("2026-13-01"), None, today),
        Err(PeriodError::BadDate {
            field: "from",
            text: "2026-13-01".into()
        })
    );
    let bad_end = Period::parse(None, None, Some("11/01/2026"), today).unwrap_err();
    assert_eq!(bad_end.field(), "to");
    assert!(bad_end.to_string().contains("'11/01/2026'"), "{bad_end}");
    assert_eq!(
        Period::parse(None, Some("2026-11-20"), Some("2026-11-01"), today),
        Err(PeriodError::Reversed {
            from: day("2026-11-20"),
            to: day("2026-11-01")
        })
    );
    assert_eq!(
        Period::parse(None, Some("2024-01-01"), Some("2026-01-01"), today),
        Err(PeriodError::TooLong(732))
    );
}

#[test]
fn days_begin_at_local_midnight_even_across_clock_changes() {
    use chrono::NaiveDate;
    use inklink::stats::days::day_range;
    let at = |s: &str| chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M").unwrap();
    let shanghai: chrono_tz::Tz = "Asia/Shanghai".parse().unwrap();
    let day = NaiveDate::from_ymd_opt(2026, 11, 2).unwrap();
    assert_eq!(
        day_range(day, shanghai),
        Some((at("2026-11-01 16:00"), at("2026-11-02 16:00")))
    );
    // Berlin's spring-forward day has 23 hours.
    let berlin: chrono_tz::Tz = "Europe/Berlin".parse().unwrap();
    let short = NaiveDate::from_ymd_opt(2026, 3, 29).unwrap();
    let (start, end) = day_range(short, berlin).unwrap();
    assert_eq!((end - start).num_hours(), 23);
    // Where a clock change skips midnight itself (Santiago), the day starts at 01:00.
    let santiago: chrono_tz::Tz = "America/Santiago".parse().unwrap();
    let skipped = NaiveDate::from_ymd_opt(2026, 9, 6).unwrap();
    let (start, _) = day_range(skipped, santiago).unwrap();
    assert_eq!(start, at("2026-09-06 04:00"));
}

#[actix_web::test]
async fn sighup_leaves_the_server_serving_and_sigterm_still_stops_it() {
    let db = Arc::new(TestDb::create().await);
    ok(inklink(
        &db,
        &["link", "add", "https://example.com/h", "--code", "hup"],
    ));
    let (mut server, port) =
        crate::support::serve_binary(&db, &[], std::process::Stdio::null()).await;
    let client = crate::support::client();
    let answers = || async {
        client
            .get(format!("http://127.0.0.1:{port}/hup"))
            .send()
            .await
            .map(|r| r.status().as_u16())
            .ok()
    };
    assert_eq!(answers().await, Some(302), "the server came up");

    crate::support::signal(&server, "-HUP");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        server.try_wait().unwrap().is_none(),
        "SIGHUP stopped the server"
    );
    assert_eq!(answers().await, Some(302));

    crate::support::signal(&server, "-TERM");
    let status = crate::support::exit_of(&mut server).await;
    assert!(status.success(), "exit status {status}");
}

/// mimalloc asks for transparent huge pages on its heap, where one small live allocation keeps
/// 2 MB resident: the server turns them off for itself (the kernel says so in its status file).
#[cfg(target_os = "linux")]
#[actix_web::test]
async fn the_server_runs_without_transparent_huge_pages() {
    let db = Arc::new(TestDb::create().await);
    let (mut server, port) =
        crate::support::serve_binary(&db, &[], std::process::Stdio::null()).await;
    let health = crate::support::client()
        .get(format!("http://127.0.0.1:{port}/healthz"))
        .send()
        .await;
    assert!(health.is_ok(), "the server came up");
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.id())).unwrap();
    let thp = status.lines().find(|line| line.starts_with("THP_enabled:"));
    let _ = server.kill();
    let _ = server.wait();
    let thp = thp.expect("the kernel reports THP_enabled (Linux 5.0 and later)");
    assert_eq!(thp.split_whitespace().nth(1), Some("0"), "{thp}");
}

/// A click event the database refuses (here a code longer than its column, which no request
/// can carry: codes are parsed first) would be refused on every retry and hold up every click
/// behind it. It is set aside in a file beside the spool; the clicks around it and after it
/// are stored.
#[actix_web::test]
async fn an_event_the_database_refuses_is_set_aside_and_the_clicks_behind_it_are_stored() {
    let db = Arc::new(TestDb::create().await);
    let app = spawn_on(db.clone(), &[]).await;
    let link = create_link(&app, "https://example.com/refused").await.link;
    let code = link.compression_code.to_string();
    let event = |code: &str| {
        let address = std::net::IpAddr::from([198, 51, 100, 7]);
        page_view(code, link.id, inklink::db::now(), address)
    };
    // SQLite keeps any text; PostgreSQL refuses a NUL in text, MySQL a text beyond 65,535
    // bytes.
    let long = "x".repeat(70_000);
    let too_long = format!("{long}\0");
    let sink = app.state.clicks.sink();
    sink.record(event(&code));
    sink.record(event(&too_long));
    sink.record(event(&code));
    let refusing = db.backend != Backend::Sqlite;
    let metrics = app.state.clicks.metrics();
    let started = Instant::now();
    while metrics.events_written.load(Relaxed) + metrics.events_rejected.load(Relaxed) < 3 {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the writer is stuck"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    click(&app, &code, 4).await;
    wait_written(&app, if refusing { 3 } else { 4 }).await;
    let stored = inklink::clickstore::stored::count(&app.core.db)
        .await
        .unwrap() as i64;
    let rejected_file = std::fs::read_dir(db.spool_dir())
        .unwrap()
        .flatten()
        .find(|entry| {
            entry
                .file_name()
                .to_string_lossy()
                .starts_with("inklink-rejected-")
        })
        .map(|entry| std::fs::read_to_string(entry.path()).unwrap());
    let (_, _, exposition) = app.fetch("/metrics").await;
    if refusing {
        assert_eq!(stored, 3, "the clicks before, beside and after it");
        assert_eq!(metrics.events_rejected.load(Relaxed), 1);
        let kept = rejected_file.expect("the refused event is kept in a file");
        assert_eq!(kept.lines().count(), 1);
        assert!(kept.contains(&long), "{}", &kept[..200]);
        assert!(
            exposition.contains("inklink_click_events_rejected_total 1"),
            "{exposition}"
        );
    } else {
        assert_eq!(stored, 4);
        assert!(rejected_file.is_none());
    }
}

#[actix_web::test]
async fn clicks_that_overflow_to_the_spool_are_stored_as_those_held_in_memory() {
    // Arrange: two servers on one database; one holds clicks in memory, the other has no room
    // and spools every click as it was taken, to be enriched when it is read back.
    let db = Arc::new(TestDb::create().await);
    let common = ["--geoip-db", GEOIP, "--trusted-proxies", "127.0.0.1"];
    let held = spawn_on(db.clone(), &common).await;
    let spooling = spawn_on(
        db.clone(),
        &[&common[..], &["--click-buffer", "0"]].concat(),
    )
    .await;
    let link = create_link(&held, "https://example.com/spooled").await;
    let code = link.link.compression_code.clone();
    let agent = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 MicroMessenger/8.0.47(0x18002f2c) NetType/WIFI Language/zh_CN";

    // Act: the same visitor clicks through each.
    for (n, app) in [&held, &spooling].into_iter().enumerate() {
        let response = app
            .client
            .get(app.url(&format!("/{code}?utm_source=sms&n={n}")))
            .insert_header(("host", "go.example.cn"))
            .insert_header(("x-forwarded-for", "203.0.113.9"))
            .insert_header(("user-agent", agent))
            .insert_header(("referer", "https://news.example.cn/a?b=c"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 302);
        wait_written(app, 1).await;
    }

    // Assert: one went through the spool, and both rows say the same but for their key,
    // time and query.
    let spooled = |app: &TestApp| app.state.clicks.metrics().events_spooled.load(Relaxed);
    assert_eq!((spooled(&held), spooled(&spooling)), (0, 1));
    let mut rows = inklink::clickstore::stored::all(&held.core.db)
        .await
        .unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].agent.browser.as_deref(), Some("WeChat"));
    assert_eq!(rows[0].country.as_deref(), Some("United States"));
    for row in &mut rows {
        row.event_key = "".into();
        row.record_time = chrono::NaiveDateTime::default();
        row.query_string = None;
    }
    assert_eq!(rows[0], rows[1]);
}
