//! The click writer's batch insert, called directly: every value arrives as it was enriched,
//! a batch written twice is stored once, and stored times compare with the ranges that
//! statistics query them with.

use crate::analytics::GEOIP;
use crate::support::{TestDb, create_link_in, settings};
use chrono::{NaiveDate, NaiveDateTime};
use inklink::clicks::ClickEvent;
use inklink::clicks::enrich::Enricher;
use inklink::clicks::geoip::GeoIp;
use inklink::clickstore::insert::{from_micros, insert_rows, micros};
use inklink::clickstore::row::{Address, Digest, EventRow};
use inklink::rules::Outcome;
use sea_orm::sea_query::Value;
use sea_orm::{ConnectionTrait, DatabaseConnection, Statement};
use std::net::IpAddr;

#[test]
fn keys_visitors_and_addresses_are_stored_as_bytes_and_read_back_as_they_were() {
    for key in [
        "923fb3064ca90bab0000000000000001",
        "00000000000000000000000000000000",
    ] {
        let packed = Digest::parse(key).packed();
        assert_eq!(packed.as_bytes().len(), 16);
        assert_eq!(Digest::stored(packed.as_bytes()).to_string(), key);
    }
    // Not 32 hex digits (data of an older version): kept as its text.
    for odd in [
        "",
        "abc",
        "not-a-visitor-identity",
        "923fb3064ca90bab000000000000000g",
        "+23fb3064ca90bab0000000000000001",
    ] {
        let packed = Digest::parse(odd).packed();
        assert_eq!(Digest::stored(packed.as_bytes()).to_string(), odd);
    }
    for address in ["1.2.3.4", "2001:db8::1", "::ffff:1.2.3.4", "::"] {
        let packed = Address::parse(address).packed();
        assert!(matches!(packed.as_bytes().len(), 4 | 16));
        assert_eq!(Address::stored(packed.as_bytes()).to_string(), address);
    }
    let unknown = Address::parse("unknown").packed();
    assert_eq!(Address::stored(unknown.as_bytes()).to_string(), "unknown");
    let at = NaiveDate::from_ymd_opt(2026, 3, 9)
        .unwrap()
        .and_hms_micro_opt(7, 5, 3, 120_005)
        .unwrap();
    assert_eq!(from_micros(micros(at)), at);
}

/// `row` as the store keeps it: times to the microsecond.
pub(crate) fn as_stored(row: &EventRow) -> EventRow {
    let mut row = row.clone();
    row.record_time = from_micros(micros(row.record_time));
    row
}

/// `n` enriched rows, one second apart from `start`, across every kind of value: present and
/// absent texts, failures with their reason, and user agents of browsers and bots.
pub(crate) fn rows(n: usize, start: NaiveDateTime, link_id: i64) -> Vec<EventRow> {
    let mut enricher = Enricher::new(GeoIp::open(Some(GEOIP.as_ref()), "en"), [3; 16], 11);
    let agents = [
        Some(
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
        ),
        Some("Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"),
        None,
    ];
    (0..n)
        .map(|i| {
            let outcome = if i % 7 == 0 {
                Outcome::Disabled
            } else if i % 11 == 3 {
                Outcome::RedirectedBy(inklink::rules::TargetRule::Android)
            } else {
                Outcome::Redirected
            };
            enricher.enrich(ClickEvent {
                at: start + chrono::Duration::microseconds(i as i64 * 1_000_001),
                code: "abc234".into(),
                link_id: Some(link_id),
                host: (i % 5 != 0).then(|| "s.example.com".into()),
                client_ip: IpAddr::from([1, 0, (i / 250) as u8, (i % 250) as u8]),
                user_agent: agents[i % agents.len()].map(Into::into),
                // Characters that bulk formats reserve (PostgreSQL's COPY escapes them).
                referer: (i % 2 == 0).then(|| "https://weixin.qq.com/s/x?ü=1&p=C:\\N\t\\".into()),
                query: (i % 3 == 0).then(|| format!("n={i}&raw=\\N&tab=\t\r\n").into()),
                outcome,
                head: false,
                key: None,
                generation: 0,
            })
        })
        .collect()
}

/// The server's core on `db` (migrated, not serving) with one link to `url`, and its id.
pub(crate) async fn core_with_link(db: &TestDb, url: &str) -> (inklink::Inklink, i64) {
    core_with_link_and(db, url, &[]).await
}

/// Like [`core_with_link`], with the flags `extra`.
pub(crate) async fn core_with_link_and(
    db: &TestDb,
    url: &str,
    extra: &[&str],
) -> (inklink::Inklink, i64) {
    let core = inklink::startup::open(settings(db, "127.0.0.1:0", extra))
        .await
        .unwrap();
    let link = create_link_in(&core, url).await.link.id;
    (core, link)
}

async fn count_between(db: &DatabaseConnection, from: NaiveDateTime, to: NaiveDateTime) -> i64 {
    let backend = db.get_database_backend();
    let sql = "SELECT COUNT(*) FROM click WHERE at >= ? AND at < ?";
    let row = db
        .query_one_raw(inklink::db::sql::statement(
            backend,
            sql,
            vec![Value::from(micros(from)), Value::from(micros(to))],
        ))
        .await
        .unwrap()
        .unwrap();
    row.try_get_by_index(0).unwrap()
}

/// Every stored row, as the writer enriched it, ordered by time.
async fn stored(db: &DatabaseConnection) -> Vec<EventRow> {
    inklink::clickstore::stored::all(db).await.unwrap()
}

/// Rows in a table.
pub(crate) async fn rows_in(db: &DatabaseConnection, table: &str) -> i64 {
    let sql = format!("SELECT COUNT(*) FROM {table}");
    let row = db
        .query_one_raw(Statement::from_string(db.get_database_backend(), sql))
        .await
        .unwrap()
        .unwrap();
    row.try_get_by_index(0).unwrap()
}

#[actix_web::test]
async fn a_batch_is_stored_exactly_as_enriched_and_only_once_when_written_twice() {
    let db = TestDb::create().await;
    let (core, link) = core_with_link(&db, "https://example.com/insert").await;
    let start = NaiveDate::from_ymd_opt(2026, 5, 1)
        .unwrap()
        .and_hms_micro_opt(10, 0, 0, 250_000)
        .unwrap();
    // 1,234 rows in one transaction: on MySQL statements of 1,000, 100, 10 and 1 rows, on
    // SQLite one stepped insert per row, on PostgreSQL one COPY.
    let batch = rows(1234, start, link);
    insert_rows(&core.db, &batch[..600]).await.unwrap();
    // A batch of which some rows are stored (a spool replayed after a partial write), a retry
    // of a batch whose commit was not acknowledged, and one that overlaps it.
    insert_rows(&core.db, &batch).await.unwrap();
    insert_rows(&core.db, &batch).await.unwrap();
    insert_rows(&core.db, &batch[1200..]).await.unwrap();

    let got = stored(&core.db).await;
    assert_eq!(got.len(), 1234, "each event once");
    assert_eq!(got, batch.iter().map(as_stored).collect::<Vec<_>>());
    // Each text once: three user agents (one absent, with what it gives), one host, one
    // code, the query strings, one referrer.
    assert_eq!(rows_in(&core.db, "click_agent").await, 3);
    assert_eq!(rows_in(&core.db, "click_referer").await, 1);
    let queries = batch.iter().filter(|r| r.query_string.is_some()).count() as i64;
    assert_eq!(rows_in(&core.db, "click_text").await, 2 + queries);
    assert!(
        got.iter().any(|row| row.agent.is_bot)
            && got.iter().any(|row| row.outcome.reason().is_some())
    );
    assert!(
        got.iter()
            .any(|row| row.outcome.target_rule().map(|rule| rule.as_str()) == Some("android"))
    );

    // Times compare with bound times as statistics compare them: half-open ranges split
    // the batch exactly, including at a fractional boundary.
    let end = start + chrono::Duration::hours(2);
    assert_eq!(count_between(&core.db, start, end).await, 1234);
    let split = as_stored(&batch[600]).record_time;
    assert_eq!(count_between(&core.db, start, split).await, 600);
    assert_eq!(count_between(&core.db, split, end).await, 634);
}

/// Every daily row, as text, to compare before and after.
pub(crate) async fn statistics(db: &DatabaseConnection) -> Vec<String> {
    let sql = "SELECT stat_date, url_map_id, pv, uv, ip_count, effective, ineffective FROM visit_statistics";
    let rows = db
        .query_all_raw(Statement::from_string(db.get_database_backend(), sql))
        .await
        .unwrap();
    let mut out = Vec::new();
    for row in rows {
        let day: NaiveDate = row.try_get_by_index(0).unwrap();
        let link: i64 = row.try_get_by_index(1).unwrap();
        let rest: Vec<String> = (2..7)
            .map(|i| row.try_get_by_index::<i64>(i).unwrap().to_string())
            .collect();
        out.push(format!("{day} {link} {}", rest.join(" ")));
    }
    for (day, link, dimension, value, pv, uv) in crate::support::breakdown_rows(db).await {
        out.push(format!("{day} {link} {dimension} {value} {pv} {uv}"));
    }
    out.sort();
    out
}

/// The day's row of `statistics` that `batch`, all of `link` on `day`, gives, as the test
/// itself counts it.
fn expected_day(day: NaiveDate, link: i64, batch: &[EventRow]) -> String {
    let success = batch.iter().filter(|r| r.outcome.status() == "success");
    let views: Vec<&EventRow> = success.clone().filter(|r| !r.agent.is_bot).collect();
    let effective = success.count();
    let distinct = |field: fn(&EventRow) -> String| {
        views
            .iter()
            .map(|r| field(r))
            .collect::<std::collections::BTreeSet<_>>()
            .len()
    };
    format!(
        "{day} {link} {} {} {} {effective} {}",
        views.len(),
        distinct(|r| r.unique_identity.to_string()),
        distinct(|r| r.client_ip.to_string()),
        batch.len() - effective
    )
}

/// The statistics, once they are shown to hold `batch`'s day row (all of `link` on `day`) as
/// the test itself counts it.
pub(crate) async fn assert_day_counted(
    db: &DatabaseConnection,
    day: NaiveDate,
    link: i64,
    batch: &[EventRow],
) -> Vec<String> {
    let counted = statistics(db).await;
    let row = expected_day(day, link, batch);
    assert!(counted.contains(&row), "{row} not in {counted:#?}");
    counted
}

/// Recounts `day` from its events and asserts that it gives the rows `counted` again.
pub(crate) async fn assert_recount_gives_the_same_rows(
    db: &DatabaseConnection,
    day: NaiveDate,
    counted: &[String],
) {
    inklink::stats::recount::rebuild(db, chrono_tz::UTC, day, day)
        .await
        .unwrap();
    assert_eq!(
        statistics(db).await,
        counted,
        "a recount gives the same rows"
    );
}

#[actix_web::test]
async fn a_batch_written_twice_is_counted_once() {
    use inklink::stats::tally;
    let db = TestDb::create().await;
    let (core, link) = core_with_link(&db, "https://example.com/twice").await;
    let day = NaiveDate::from_ymd_opt(2026, 5, 1).unwrap();
    let batch = rows(1234, day.and_hms_opt(10, 0, 0).unwrap(), link);
    let utc = chrono_tz::UTC;
    // Counted between writes, as the server's schedule would, while batches are retried.
    insert_rows(&core.db, &batch[..600]).await.unwrap();
    assert_eq!(tally::drain(&core.db, utc).await.unwrap(), 600);
    insert_rows(&core.db, &batch).await.unwrap();
    insert_rows(&core.db, &batch).await.unwrap();
    assert_eq!(tally::drain(&core.db, utc).await.unwrap(), 634);
    insert_rows(&core.db, &batch[1200..]).await.unwrap();
    assert_eq!(
        tally::drain(&core.db, utc).await.unwrap(),
        0,
        "nothing new to count"
    );

    let counted = assert_day_counted(&core.db, day, link, &batch).await;
    assert_recount_gives_the_same_rows(&core.db, day, &counted).await;
}

/// Stores `rows` as the click writer does: a failed batch (a deadlock, a lock wait) is
/// written again.
pub(crate) async fn store_until_written(db: &DatabaseConnection, rows: &[EventRow]) {
    let store = inklink::clickstore::insert::ClickStore::new();
    for attempt in 0.. {
        match store.insert(db, rows).await {
            Ok(()) => return,
            Err(err) if attempt < 20 => {
                eprintln!("writing again after: {err}");
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            Err(err) => panic!("cannot store the batch: {err}"),
        }
    }
}

#[actix_web::test]
async fn clicks_written_by_several_writers_at_once_while_counting_and_a_rebuild_run_are_counted_once()
 {
    use inklink::stats::tally;
    let db = TestDb::create().await;
    let (core, link) = core_with_link(&db, "https://example.com/at-once").await;
    let day = NaiveDate::from_ymd_opt(2026, 5, 2).unwrap();
    let batch = rows(2000, day.and_hms_opt(9, 0, 0).unwrap(), link);
    let utc = chrono_tz::UTC;
    // Some of the clicks are stored and counted before, some stored and waiting.
    insert_rows(&core.db, &batch[..300]).await.unwrap();
    tally::drain(&core.db, utc).await.unwrap();
    insert_rows(&core.db, &batch[300..600]).await.unwrap();
    let mut tasks = tokio::task::JoinSet::new();
    // Four writers with overlapping parts of the batch, each part in batches of 250.
    for writer in 0..4 {
        let db = core.db.clone();
        let part = batch[writer * 400..(writer * 400 + 800).min(batch.len())].to_vec();
        tasks.spawn(async move {
            for chunk in part.chunks(250) {
                store_until_written(&db, chunk).await;
            }
        });
    }
    for _ in 0..2 {
        let db = core.db.clone();
        tasks.spawn(async move {
            for _ in 0..5 {
                tally::tally(&db, utc, 300).await.unwrap();
            }
        });
    }
    let db2 = core.db.clone();
    tasks.spawn(async move {
        inklink::stats::recount::forget_day(&db2, utc, day)
            .await
            .unwrap();
    });
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
    // The last writer's part ends at 2,000, the first starts at 0: every click is stored.
    tally::drain(&core.db, utc).await.unwrap();
    assert_eq!(
        inklink::clickstore::stored::count(&core.db).await.unwrap(),
        2000
    );
    assert_day_counted(&core.db, day, link, &batch).await;
    assert_eq!(rows_in(&core.db, "click_waiting").await, 0);
}

#[actix_web::test]
async fn clicks_of_the_old_table_move_into_the_lean_store_once_with_their_counted_flags() {
    use migration::{Migrator, MigratorTrait, SchemaManager};
    let db = TestDb::create().await;
    let conn = sea_orm::Database::connect(&db.url).await.unwrap();
    // The schema before the lean store, with clicks as versions before it stored them.
    Migrator::up(&conn, Some(19)).await.unwrap();
    let backend = conn.get_database_backend();
    let insert = "INSERT INTO transform_event_record (event_key, record_time, compression_code, \
                  url_map_id, host, client_ip, unique_identity, user_agent, referer, referer_host, \
                  query_string, country, province, city, browser, browser_version, os, os_version, \
                  device, is_bot, transform_status, failure_reason, target_rule, counted) \
                  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
    let at = NaiveDate::from_ymd_opt(2026, 4, 2)
        .unwrap()
        .and_hms_micro_opt(8, 30, 0, 123_456)
        .unwrap();
    let ua = "Mozilla/5.0 (Linux; Android 12; Vodafone España) AppleWebKit/537.36";
    // Event key, address, visitor identity, referrer, counted.
    type Old<'a> = (Option<&'a str>, &'a str, &'a str, Option<&'a str>, bool);
    let old: [Old; 3] = [
        (
            Some("923fb3064ca90bab0000000000000001"),
            "115.82.82.248",
            "ed783e0706e44eefeadbab4c35856280",
            Some("https://www.baidu.com/s?wd=短链接"),
            true,
        ),
        // Before event keys; an IPv6 address; not yet counted.
        (
            None,
            "2001:db8::7",
            "0123456789abcdef0123456789abcdef",
            None,
            false,
        ),
        // An address and identity that are not what they should be: kept as they were.
        (
            Some("923fb3064ca90bab0000000000000003"),
            "unknown",
            "legacy-visitor",
            None,
            true,
        ),
    ];
    for (i, (key, ip, visitor, referer, counted)) in old.iter().enumerate() {
        let values: Vec<Value> = vec![
            key.map(str::to_owned).into(),
            (at + chrono::Duration::seconds(i as i64)).into(),
            "OldCode".into(),
            Some(42i64).into(),
            Some("s.example.com".to_owned()).into(),
            ip.to_string().into(),
            visitor.to_string().into(),
            Some(ua.to_owned()).into(),
            referer.map(str::to_owned).into(),
            referer.map(|_| "www.baidu.com".to_owned()).into(),
            Some("utm_source=sms".to_owned()).into(),
            Some("中国".to_owned()).into(),
            Some("浙江".to_owned()).into(),
            None::<String>.into(),
            Some("Chrome".to_owned()).into(),
            None::<String>.into(),
            Some("Android".to_owned()).into(),
            Some("12".to_owned()).into(),
            Some("mobile".to_owned()).into(),
            false.into(),
            "success".into(),
            None::<String>.into(),
            Some("android".to_owned()).into(),
            (*counted).into(),
        ];
        conn.execute_raw(inklink::db::sql::statement(backend, insert, values))
            .await
            .unwrap();
    }

    // Instances upgraded together each find the old table; every one of them starts, and
    // each click is moved once.
    let config = settings(&db, "127.0.0.1:0", &[]);
    let opened =
        futures_util::future::join_all((0..4).map(|_| inklink::startup::open(config.clone())))
            .await;
    let core = opened
        .into_iter()
        .map(Result::unwrap)
        .next()
        .expect("four instances");
    let moved = inklink::clickstore::stored::read(&core.db, "1 = 1", vec![], None)
        .await
        .unwrap();
    assert_eq!(moved.len(), 3);
    let keys: Vec<String> = moved.iter().map(|m| m.row.event_key.to_string()).collect();
    assert_eq!(
        keys,
        [
            "923fb3064ca90bab0000000000000001",
            // Made of the old id (the second row).
            "00000000000000000000000000000002",
            "923fb3064ca90bab0000000000000003"
        ]
    );
    for (stored, (_, ip, visitor, referer, counted)) in moved.iter().zip(&old) {
        let row = &stored.row;
        assert_eq!(stored.counted, *counted);
        assert_eq!(row.client_ip.to_string(), *ip);
        assert_eq!(row.unique_identity.to_string(), *visitor);
        assert_eq!(row.referer.as_deref(), *referer);
        assert_eq!(row.user_agent.as_deref(), Some(ua));
        assert_eq!(row.compression_code.as_ref(), "OldCode");
        assert_eq!(row.url_map_id, Some(42));
        assert_eq!(
            (row.country.as_deref(), row.city.as_deref()),
            (Some("中国"), None)
        );
        assert_eq!(
            row.outcome.target_rule().map(|rule| rule.as_str()),
            Some("android")
        );
        assert_eq!(row.query_string.as_deref(), Some("utm_source=sms"));
    }
    assert_eq!(moved[0].row.record_time, at);
    assert!(
        !SchemaManager::new(&core.db)
            .has_table("transform_event_record")
            .await
            .unwrap(),
        "the old table is dropped once empty"
    );
    // Only the click that was not counted is counted now.
    assert_eq!(
        inklink::stats::tally::drain(&core.db, chrono_tz::UTC)
            .await
            .unwrap(),
        1
    );
    // A second start finds nothing to move.
    drop(core);
    let again = inklink::startup::open(settings(&db, "127.0.0.1:0", &[]))
        .await
        .unwrap();
    assert_eq!(
        inklink::clickstore::stored::count(&again.db).await.unwrap(),
        3
    );
}

#[actix_web::test]
async fn a_purge_deletes_the_stored_texts_only_purged_clicks_used() {
    let db = TestDb::create().await;
    let (core, link) = core_with_link(&db, "https://example.com/texts").await;
    let now = inklink::db::now();
    let old = rows(30, now - chrono::Duration::days(30), link);
    insert_rows(&core.db, &old).await.unwrap();
    // As if those texts were last used by a writer a month ago.
    for table in [
        "click_agent",
        "click_place",
        "click_referer",
        "click_outcome",
        "click_text",
    ] {
        core.db
            .execute_unprepared(&format!("UPDATE {table} SET seen = seen - 30"))
            .await
            .unwrap();
    }
    // Today's click uses the first user agent and the code again (and a host of its own).
    let mut new = rows(1, now, link);
    new[0].host = Some("today.example.com".into());
    new[0].query_string = None;
    new[0].referer = None;
    new[0].referer_host = None;
    insert_rows(&core.db, &new).await.unwrap();
    assert_eq!(rows_in(&core.db, "click_agent").await, 3);
    // An old click listed as waiting after the purge's count, as a stats rebuild racing the
    // purge would (here without its click, so that no count takes it off the list).
    core.db
        .execute_raw(inklink::db::sql::statement(
            core.db.get_database_backend(),
            "INSERT INTO click_waiting (at, event_key) VALUES (?, ?)",
            vec![
                micros(now - chrono::Duration::days(30)).into(),
                vec![7u8; 16].into(),
            ],
        ))
        .await
        .unwrap();

    let before = (now - chrono::Duration::days(10)).date();
    let purged = inklink::stats::retention::purge(&core.db, chrono_tz::UTC, before)
        .await
        .unwrap();
    assert_eq!(purged.events, 30);
    assert!(purged.values > 0);
    // Left: what today's click uses, nothing else.
    assert_eq!(rows_in(&core.db, "click_agent").await, 1);
    assert_eq!(rows_in(&core.db, "click_referer").await, 0);
    assert_eq!(
        rows_in(&core.db, "click_text").await,
        2,
        "the code and today's host"
    );
    assert_eq!(rows_in(&core.db, "click_outcome").await, 1);
    assert_eq!(
        stored(&core.db).await,
        new.iter().map(as_stored).collect::<Vec<_>>()
    );
    assert_eq!(
        rows_in(&core.db, "click_waiting").await,
        0,
        "nothing of a purged day waits"
    );
}

#[actix_web::test]
async fn writers_storing_the_same_new_texts_at_once_share_one_row_each() {
    let db = TestDb::create().await;
    let (core, link) = core_with_link(&db, "https://example.com/together").await;
    let start = inklink::db::now();
    let agents = [
        "Mozilla/5.0 Together",
        // Differing only in case or a trailing space: other user agents (MySQL's default
        // collations would call them equal).
        "mozilla/5.0 together",
        "Mozilla/5.0 Together ",
    ];
    // Four writers (instances), each with its own store, the same values, their own clicks.
    let batches: Vec<Vec<EventRow>> = (0..4u8)
        .map(|writer| {
            let mut batch = rows(60, start, link);
            for (i, row) in batch.iter_mut().enumerate() {
                row.event_key = format!("{:02x}{:030x}", writer + 1, i).into();
                row.user_agent = Some(agents[i % agents.len()].into());
            }
            batch
        })
        .collect();
    let writes = batches.iter().map(|batch| {
        let db = core.db.clone();
        async move {
            inklink::clickstore::insert::ClickStore::new()
                .insert(&db, batch)
                .await
        }
    });
    for written in futures_util::future::join_all(writes).await {
        written.unwrap();
    }
    let mut expected: Vec<EventRow> = batches.iter().flatten().map(as_stored).collect();
    let mut got = stored(&core.db).await;
    let key = |row: &EventRow| (row.record_time, row.event_key.to_string());
    expected.sort_by_key(key);
    got.sort_by_key(key);
    assert_eq!(got, expected);
    // Three user agents (each as parsed) and the rows' queries, each stored once.
    let parsed: std::collections::HashSet<_> = expected
        .iter()
        .map(|r| {
            (
                r.user_agent.clone(),
                r.agent.browser.clone(),
                r.agent.os.clone(),
                r.agent.device.clone(),
            )
        })
        .collect();
    assert_eq!(rows_in(&core.db, "click_agent").await, parsed.len() as i64);
    let queries: std::collections::HashSet<_> = expected
        .iter()
        .filter_map(|r| r.query_string.clone())
        .collect();
    assert_eq!(
        rows_in(&core.db, "click_text").await,
        2 + queries.len() as i64
    );
}

#[actix_web::test]
async fn a_counting_turn_reads_the_waiting_clicks_page_after_page_each_once() {
    use inklink::stats::tally;
    let db = TestDb::create().await;
    let (core, link) = core_with_link(&db, "https://example.com/pages").await;
    let day = NaiveDate::from_ymd_opt(2026, 5, 3).unwrap();
    // More than a page (10,000) of waiting clicks, with ties in time: two clicks a second
    // but the first, so that a page ends between two clicks of the same time.
    let mut batch = rows(5300, day.and_hms_opt(8, 0, 0).unwrap(), link);
    let twins = rows(5300, day.and_hms_opt(8, 0, 0).unwrap(), link);
    batch.extend(twins.into_iter().enumerate().skip(1).map(|(i, mut row)| {
        row.event_key = format!("ee{i:030x}").into();
        row
    }));
    insert_rows(&core.db, &batch).await.unwrap();
    let utc = chrono_tz::UTC;
    assert_eq!(
        tally::tally(&core.db, utc, 50_000).await.unwrap(),
        batch.len() as u64
    );
    assert_eq!(tally::tally(&core.db, utc, 50_000).await.unwrap(), 0);
    assert_day_counted(&core.db, day, link, &batch).await;
}

/// A turn tells how many links' days its clicks fell on: the schedule sizes a burst's next
/// turn by it (clicks spread over many links are counted in smaller turns).
#[actix_web::test]
async fn a_counting_turn_tells_the_links_days_it_touched() {
    use inklink::stats::tally;
    let db = TestDb::create().await;
    let (core, link) = core_with_link(&db, "https://example.com/days").await;
    let target = inklink::services::links::parse_target(&core, "https://example.com/other")
        .await
        .unwrap();
    let other = inklink::services::links::create(
        &core,
        inklink::services::links::NewLink::to(target),
        &inklink::services::Actor::Cli,
    )
    .await
    .unwrap()
    .link
    .id;
    let utc = chrono_tz::UTC;
    let evening = NaiveDate::from_ymd_opt(2026, 5, 3)
        .unwrap()
        .and_hms_opt(23, 59, 0)
        .unwrap();
    // 100 clicks a second apart from 23:59: on the 3rd and the 4th, for each of two links.
    let mut batch = rows(100, evening, link);
    batch.extend(
        rows(100, evening, other)
            .into_iter()
            .enumerate()
            .map(|(i, mut row)| {
                row.event_key = format!("ff{i:030x}").into();
                row
            }),
    );
    insert_rows(&core.db, &batch).await.unwrap();
    let counted = tally::tally_counted(&core.db, utc, 50_000).await.unwrap();
    assert_eq!((counted.clicks, counted.link_days), (200, 4));
    assert!(counted.held > std::time::Duration::ZERO);
    let none = tally::tally_counted(&core.db, utc, 50_000).await.unwrap();
    assert_eq!((none.clicks, none.link_days), (0, 0));
}

/// A counting turn that fails after taking its clicks off the waiting list (on PostgreSQL
/// it reads and deletes them in one statement) leaves them all waiting, and the next turn
/// counts each once.
#[actix_web::test]
async fn a_counting_turn_that_fails_leaves_its_clicks_waiting_for_the_next() {
    use inklink::stats::tally;
    let db = TestDb::create().await;
    let (core, link) = core_with_link(&db, "https://example.com/fails").await;
    let day = NaiveDate::from_ymd_opt(2026, 5, 5).unwrap();
    // More than a page of 10,000: the failure comes after the second page was taken.
    let batch = rows(12_000, day.and_hms_opt(6, 0, 0).unwrap(), link);
    insert_rows(&core.db, &batch).await.unwrap();
    let rename = |from: &str, to: &str| {
        let sql = format!("ALTER TABLE {from} RENAME TO {to}");
        let db = &core.db;
        async move { db.execute_unprepared(&sql).await.unwrap() }
    };
    // Counting reads the links' days' breakdown values after it has taken the clicks.
    rename("visit_day_values", "parked_values").await;
    let utc = chrono_tz::UTC;
    assert!(tally::tally(&core.db, utc, 50_000).await.is_err());
    rename("parked_values", "visit_day_values").await;
    assert_eq!(rows_in(&core.db, "click_waiting").await, 12_000);
    assert!(statistics(&core.db).await.is_empty());

    assert_eq!(tally::tally(&core.db, utc, 50_000).await.unwrap(), 12_000);
    assert_eq!(rows_in(&core.db, "click_waiting").await, 0);
    assert_day_counted(&core.db, day, link, &batch).await;
}

/// An entry of the waiting list whose click is gone (a crash between a purge's two deletes)
/// does not stop the clicks behind it from being counted, and a turn that finds nothing else
/// takes it off the list, so that counting does not take a turn every second for ever.
#[actix_web::test]
async fn a_waiting_entry_without_its_click_is_dropped_and_the_clicks_behind_it_are_counted() {
    use inklink::stats::tally;
    let db = TestDb::create().await;
    let (core, link) = core_with_link(&db, "https://example.com/orphan").await;
    let day = NaiveDate::from_ymd_opt(2026, 5, 6).unwrap();
    let start = day.and_hms_opt(9, 0, 0).unwrap();
    // Older than every click: first in the list.
    let orphan = micros(start) - 1;
    core.db
        .execute_raw(inklink::db::sql::statement(
            core.db.get_database_backend(),
            "INSERT INTO click_waiting (at, event_key) VALUES (?, ?)",
            vec![orphan.into(), vec![7u8; 16].into()],
        ))
        .await
        .unwrap();
    let batch = rows(300, start, link);
    insert_rows(&core.db, &batch).await.unwrap();
    let utc = chrono_tz::UTC;
    assert_eq!(tally::drain(&core.db, utc).await.unwrap(), 300);
    assert_eq!(tally::tally(&core.db, utc, 50_000).await.unwrap(), 0);
    assert_eq!(
        rows_in(&core.db, "click_waiting").await,
        0,
        "the orphan is gone"
    );
    assert_day_counted(&core.db, day, link, &batch).await;
}

#[actix_web::test]
async fn clicks_stored_with_a_counted_flag_keep_every_value_and_only_the_uncounted_wait() {
    use migration::{Migrator, MigratorTrait};
    let db = TestDb::create().await;
    let conn = sea_orm::Database::connect(&db.url).await.unwrap();
    // The first lean store: clicks marked counted in a column of their own.
    Migrator::up(&conn, Some(20)).await.unwrap();
    let backend = conn.get_database_backend();
    let run = |sql: &'static str, values: Vec<Value>| {
        let conn = &conn;
        async move {
            conn.execute_raw(inklink::db::sql::statement(backend, sql, values))
                .await
                .unwrap();
        }
    };
    run(
        "INSERT INTO click_text (id, digest, seen, value) VALUES (1, 11, 0, 'abc234')",
        vec![],
    )
    .await;
    run(
        "INSERT INTO click_outcome (id, digest, seen, transform_status) VALUES (1, 12, 0, 'success')",
        vec![],
    )
    .await;
    let at = micros(
        NaiveDate::from_ymd_opt(2026, 5, 4)
            .unwrap()
            .and_hms_opt(12, 0, 0)
            .unwrap(),
    );
    for i in 0..3u8 {
        run(
            "INSERT INTO click (at, link, code, host, agent, referer, query, place, outcome, bot, \
             counted, event_key, ip, visitor) \
             VALUES (?, NULL, 1, NULL, NULL, NULL, NULL, NULL, 1, ?, ?, ?, ?, ?)",
            vec![
                (at + i64::from(i)).into(),
                (i == 2).into(),
                (i == 1).into(),
                vec![i; 16].into(),
                vec![10, 0, 0, i].into(),
                vec![0xa0 + i; 16].into(),
            ],
        )
        .await;
    }
    drop(conn);

    let core = inklink::startup::open(settings(&db, "127.0.0.1:0", &[]))
        .await
        .unwrap();
    let stored = inklink::clickstore::stored::read(&core.db, "1 = 1", vec![], None)
        .await
        .unwrap();
    assert_eq!(stored.len(), 3);
    for (i, click) in stored.iter().enumerate() {
        let i = i as u8;
        assert_eq!(click.at, at + i64::from(i));
        assert_eq!(click.key, vec![i; 16]);
        assert_eq!(click.row.client_ip.to_string(), format!("10.0.0.{i}"));
        assert_eq!(
            click.row.unique_identity.to_string(),
            Digest::stored(&[0xa0 + i; 16]).to_string()
        );
        assert_eq!(&*click.row.compression_code, "abc234");
        assert_eq!(click.row.agent.is_bot, i == 2);
        assert_eq!(click.counted, i == 1, "click {i}");
    }
    assert_eq!(rows_in(&core.db, "click_waiting").await, 2);
    let waiting = inklink::stats::tally::drain(&core.db, chrono_tz::UTC)
        .await
        .unwrap();
    assert_eq!(
        waiting, 2,
        "the two clicks not counted before, and only them"
    );
}

#[actix_web::test]
async fn migrating_down_from_the_waiting_list_puts_the_counted_flags_back() {
    use migration::{Migrator, MigratorTrait};
    let db = TestDb::create().await;
    let (core, link) = core_with_link(&db, "https://example.com/down").await;
    let day = NaiveDate::from_ymd_opt(2026, 5, 5).unwrap();
    let batch = rows(50, day.and_hms_opt(7, 0, 0).unwrap(), link);
    insert_rows(&core.db, &batch[..30]).await.unwrap();
    inklink::stats::tally::drain(&core.db, chrono_tz::UTC)
        .await
        .unwrap();
    insert_rows(&core.db, &batch[30..]).await.unwrap();
    // What `inklink migrate down` does, down to before the waiting list: back to the counted
    // flag (later migrations are undone first).
    let steps = Migrator::migrations()
        .iter()
        .rev()
        .position(|m| m.name().contains("click_waiting"))
        .unwrap()
        + 1;
    Migrator::down(&core.db, Some(steps as u32)).await.unwrap();
    let flagged = |counted: bool| {
        let db = &core.db;
        async move {
            let sql = "SELECT COUNT(*) FROM click WHERE counted = ?";
            let row = db
                .query_one_raw(inklink::db::sql::statement(
                    db.get_database_backend(),
                    sql,
                    vec![counted.into()],
                ))
                .await
                .unwrap()
                .unwrap();
            row.try_get_by_index::<i64>(0).unwrap()
        }
    };
    assert_eq!(flagged(true).await, 30);
    assert_eq!(flagged(false).await, 20);
    // And up again: the same 20 wait.
    Migrator::up(&core.db, None).await.unwrap();
    assert_eq!(rows_in(&core.db, "click_waiting").await, 20);
    assert_eq!(
        inklink::clickstore::stored::count(&core.db).await.unwrap(),
        50
    );
}

#[actix_web::test]
async fn the_daily_rows_keep_every_count_across_the_migration_that_keys_them_by_day() {
    use inklink::stats::tally;
    use migration::{Migrator, MigratorTrait};
    let db = TestDb::create().await;
    let (core, link) = core_with_link(&db, "https://example.com/keyed").await;
    let day = NaiveDate::from_ymd_opt(2026, 5, 6).unwrap();
    let batch = rows(900, day.and_hms_opt(9, 0, 0).unwrap(), link);
    let utc = chrono_tz::UTC;
    let steps = |name: &str| {
        Migrator::migrations()
            .iter()
            .rev()
            .position(|m| m.name().contains(name))
            .unwrap() as u32
            + 1
    };
    // Counted before, while down and after: each form of the tables adds to the rows the
    // other kept.
    insert_rows(&core.db, &batch[..300]).await.unwrap();
    assert_eq!(tally::drain(&core.db, utc).await.unwrap(), 300);
    let before = statistics(&core.db).await;
    Migrator::down(&core.db, Some(steps("day_rows_keyed_by_day")))
        .await
        .unwrap();
    assert_eq!(
        statistics(&core.db).await,
        before,
        "kept when the tables go back"
    );
    // The later tables this version counts into, without the keyed daily rows.
    let migrations = Migrator::migrations();
    let later = &migrations[migrations.len() + 1 - steps("day_rows_keyed_by_day") as usize..];
    for migration in later {
        crate::support::migrate_one(&core.db, migration.as_ref(), true).await;
    }
    insert_rows(&core.db, &batch[300..600]).await.unwrap();
    assert_eq!(tally::drain(&core.db, utc).await.unwrap(), 300);
    for migration in later.iter().rev() {
        crate::support::migrate_one(&core.db, migration.as_ref(), false).await;
    }
    Migrator::up(&core.db, None).await.unwrap();
    insert_rows(&core.db, &batch[600..]).await.unwrap();
    assert_eq!(tally::drain(&core.db, utc).await.unwrap(), 300);

    let counted = assert_day_counted(&core.db, day, link, &batch).await;
    assert!(
        counted.iter().any(|row| row.contains(" browser ")),
        "breakdown rows are kept: {counted:#?}"
    );
    assert_recount_gives_the_same_rows(&core.db, day, &counted).await;
}

#[actix_web::test]
async fn a_links_breakdown_keeps_every_count_packed_by_day_and_unpacked_again() {
    use inklink::stats::report::{Scope, breakdowns};
    use inklink::stats::tally;
    use migration::{Migrator, MigratorTrait};
    let db = TestDb::create().await;
    let (core, link) = core_with_link(&db, "https://example.com/packed").await;
    let day = NaiveDate::from_ymd_opt(2026, 5, 7).unwrap();
    let mut batch = rows(900, day.and_hms_opt(10, 0, 0).unwrap(), link);
    // Text beyond ASCII, an emoji among it, goes down and up as it was.
    for row in &mut batch[..300] {
        row.query_string = Some("utm_source=%E5%BE%AE%E4%BF%A1%F0%9F%98%80".into());
    }
    let utc = chrono_tz::UTC;
    let steps = Migrator::migrations()
        .iter()
        .rev()
        .position(|m| m.name().contains("day_values_packed"))
        .unwrap() as u32
        + 1;
    let links_rows = || {
        let db = &core.db;
        async move {
            let sql = "SELECT COUNT(*) FROM visit_statistics_breakdown WHERE url_map_id = ?";
            let backend = db.get_database_backend();
            let row =
                (db.query_one_raw(inklink::db::sql::statement(backend, sql, vec![link.into()])))
                    .await
                    .unwrap()
                    .unwrap();
            row.try_get_by_index::<i64>(0).unwrap()
        }
    };
    insert_rows(&core.db, &batch[..300]).await.unwrap();
    assert_eq!(tally::drain(&core.db, utc).await.unwrap(), 300);
    let counted = statistics(&core.db).await;
    assert!(
        counted
            .iter()
            .any(|row| row.starts_with(&format!("{day} {link} browser "))),
        "{counted:#?}"
    );
    let typed = format!("{day} {link} utm_source 微信😀 ");
    assert!(
        counted.iter().any(|row| row.starts_with(&typed)),
        "{counted:#?}"
    );
    assert_eq!(
        links_rows().await,
        0,
        "a link's values are packed by its day"
    );
    let shown = breakdowns(&core.db, Scope::Link(link), day, day, 100)
        .await
        .unwrap();
    assert!(shown.iter().any(|(_, shares)| !shares.is_empty()));

    // Down: a row per value again, as the version before keeps them; and up: packed again.
    Migrator::down(&core.db, Some(steps)).await.unwrap();
    assert_eq!(statistics(&core.db).await, counted, "unpacked going down");
    assert!(links_rows().await > 0);
    Migrator::up(&core.db, None).await.unwrap();
    assert_eq!(statistics(&core.db).await, counted, "packed going up");
    assert_eq!(links_rows().await, 0);
    let again = breakdowns(&core.db, Scope::Link(link), day, day, 100).await;
    assert_eq!(again.unwrap(), shown);

    // Counting adds to the packed rows; a recount gives them again.
    insert_rows(&core.db, &batch[300..]).await.unwrap();
    assert_eq!(tally::drain(&core.db, utc).await.unwrap(), 600);
    let counted = assert_day_counted(&core.db, day, link, &batch).await;
    assert_recount_gives_the_same_rows(&core.db, day, &counted).await;
}

/// Values that the packed rows' JSON escapes (quotes, backslashes, text beyond ASCII) come
/// back as they were typed, turn after turn.
#[actix_web::test]
async fn values_json_escapes_keep_their_text_in_a_links_packed_day() {
    use inklink::stats::dimension::Dimension;
    use inklink::stats::report::{Scope, breakdown};
    use inklink::stats::tally;
    let db = TestDb::create().await;
    let (core, link) = core_with_link(&db, "https://example.com/escaped").await;
    let day = NaiveDate::from_ymd_opt(2026, 5, 8).unwrap();
    let sources = [
        ("%22quoted%22", "\"quoted\""),
        ("back%5Cslash", "back\\slash"),
        ("%E5%BE%AE%E4%BF%A1", "微信"),
        ("%F0%9F%98%80+x", "😀 x"),
        ("%5B%22a%22%2C1%5D", "[\"a\",1]"),
    ];
    for hour in [9, 10] {
        let mut rows = hourly_batch(day, hour, sources.len(), link);
        for (row, (typed, _)) in rows.iter_mut().zip(sources) {
            row.outcome = Outcome::Redirected;
            row.agent.is_bot = false;
            row.query_string = Some(format!("utm_source={typed}").into());
        }
        insert_rows(&core.db, &rows).await.unwrap();
        let utc = chrono_tz::UTC;
        assert_eq!(tally::tally(&core.db, utc, 10_000).await.unwrap(), 5);
    }
    let shares = breakdown(
        &core.db,
        Scope::Link(link),
        Dimension::UtmSource,
        day,
        day,
        10,
    )
    .await
    .unwrap();
    let mut got: Vec<(&str, i64)> = shares.iter().map(|s| (s.value.as_str(), s.pv)).collect();
    got.sort_unstable();
    let mut expected: Vec<(&str, i64)> = sources.iter().map(|(_, text)| (*text, 2)).collect();
    expected.sort_unstable();
    assert_eq!(got, expected);
}

#[actix_web::test]
async fn a_turn_worked_out_before_it_is_taken_is_used_only_if_its_clicks_still_wait_and_nothing_else_it_read_changed()
 {
    use inklink::stats::tally;
    let db = TestDb::create().await;
    let (core, link) = core_with_link(&db, "https://example.com/ahead").await;
    let day = NaiveDate::from_ymd_opt(2026, 5, 4).unwrap();
    let batch = rows(1600, day.and_hms_opt(8, 0, 0).unwrap(), link);
    let utc = chrono_tz::UTC;
    let mut counted = 0;

    // Clicks earlier than those read are stored before the turn is taken (a spool written
    // late): the list's front is no longer what was read, but the clicks read still wait.
    // The work stands, and the earlier clicks wait for the next turn.
    insert_rows(&core.db, &batch[400..800]).await.unwrap();
    let ahead = tally::work_out_ahead(&core.db, utc, 300).await.unwrap();
    assert!(ahead.is_some());
    insert_rows(&core.db, &batch[..400]).await.unwrap();
    counted += tally::tally_worked_out(&core.db, utc, 300, ahead)
        .await
        .unwrap()
        .clicks;
    let waiting = inklink::clickstore::waiting::peek_waiting(&core.db, 1000)
        .await
        .unwrap();
    let waiting: Vec<_> = waiting
        .iter()
        .map(|w| inklink::clickstore::insert::from_micros(w.at))
        .collect();
    let expected: Vec<_> = (batch[..400].iter().chain(&batch[700..800]))
        .map(|row| row.record_time)
        .collect();
    assert_eq!(waiting, expected, "the clicks left waiting");

    // Another turn is taken between: both read the same front, which only the first counts.
    let first = tally::work_out_ahead(&core.db, utc, 300).await.unwrap();
    let second = tally::work_out_ahead(&core.db, utc, 300).await.unwrap();
    counted += tally::tally_worked_out(&core.db, utc, 300, first)
        .await
        .unwrap()
        .clicks;
    counted += tally::tally_worked_out(&core.db, utc, 300, second)
        .await
        .unwrap()
        .clicks;
    counted += tally::drain(&core.db, utc).await.unwrap();
    assert_eq!(counted, 800);
    assert_day_counted(&core.db, day, link, &batch[..800]).await;

    // A recount of the day is taken between (it forgets the day and lists its clicks again).
    insert_rows(&core.db, &batch[800..]).await.unwrap();
    let ahead = tally::work_out_ahead(&core.db, utc, 300).await.unwrap();
    inklink::stats::recount::forget_day(&core.db, utc, day)
        .await
        .unwrap();
    counted += tally::tally_worked_out(&core.db, utc, 300, ahead)
        .await
        .unwrap()
        .clicks;

    // Nothing changed: the work stands.
    let ahead = tally::work_out_ahead(&core.db, utc, 300).await.unwrap();
    let stood = tally::tally_worked_out(&core.db, utc, 300, ahead)
        .await
        .unwrap()
        .clicks;
    assert_eq!(stood, 300);
    counted += stood + tally::drain(&core.db, utc).await.unwrap();
    // The recount listed the day's first 800 again.
    assert_eq!(counted, 800 + 1600);
    assert_eq!(rows_in(&core.db, "click_waiting").await, 0);
    let counted = assert_day_counted(&core.db, day, link, &batch).await;
    assert_recount_gives_the_same_rows(&core.db, day, &counted).await;
}

/// On SQLite a turn worked out ahead reads its clicks first, on a connection's own handle, and
/// the rest of what it reads afterwards: a turn taken between the two took those clicks, and
/// the work must count the ones that wait now instead (on the other databases both are one
/// read, and the test counts as plainly).
#[actix_web::test]
async fn a_turn_taken_between_a_turn_read_ahead_reading_its_clicks_and_the_rest_counts_each_click_once()
 {
    use inklink::stats::tally;
    let db = TestDb::create().await;
    let (core, link) = core_with_link(&db, "https://example.com/read-first").await;
    let day = NaiveDate::from_ymd_opt(2026, 5, 4).unwrap();
    let batch = rows(900, day.and_hms_opt(8, 0, 0).unwrap(), link);
    let utc = chrono_tz::UTC;
    insert_rows(&core.db, &batch).await.unwrap();

    // Nothing between: what was read first is counted.
    let first = tally::read_first(&core.db, 300, None).await.unwrap();
    let ahead = tally::work_out_ahead_after(&core.db, utc, 300, first)
        .await
        .unwrap();
    let mut counted = tally::tally_worked_out(&core.db, utc, 300, ahead)
        .await
        .unwrap()
        .clicks;
    assert_eq!(counted, 300);

    // A turn between takes the clicks read first.
    let first = tally::read_first(&core.db, 300, None).await.unwrap();
    let between = tally::tally_worked_out(&core.db, utc, 300, None)
        .await
        .unwrap()
        .clicks;
    assert_eq!(between, 300);
    counted += between;
    let ahead = tally::work_out_ahead_after(&core.db, utc, 300, first)
        .await
        .unwrap();
    let after = tally::tally_worked_out(&core.db, utc, 300, ahead)
        .await
        .unwrap()
        .clicks;
    assert_eq!(after, 300, "the turn counts the clicks that still wait");
    counted += after + tally::drain(&core.db, utc).await.unwrap();
    assert_eq!(counted, 900);
    assert_eq!(rows_in(&core.db, "click_waiting").await, 0);
    let counted = assert_day_counted(&core.db, day, link, &batch).await;
    assert_recount_gives_the_same_rows(&core.db, day, &counted).await;
}

/// Only counting hands out visitors' and addresses' numbers, one turn at a time, and a turn
/// worked out ahead stands only when no turn came between: every number it stores is new.
/// Should one be stored already (where new numbers go: see `new_numbers_table`), the turn fails
/// whole and its clicks wait, rather than give a visitor a second number (SQLite adds the
/// numbers with `OR IGNORE`, and the turn counts what each statement added).
#[actix_web::test]
async fn a_turn_that_would_number_an_address_numbered_already_fails_and_its_clicks_wait() {
    use inklink::stats::daysets::numbers::{ADDRESSES, Who};
    use inklink::stats::tally;
    let db = TestDb::create().await;
    let (core, link) = core_with_link(&db, "https://example.com/numbered").await;
    let day = NaiveDate::from_ymd_opt(2026, 5, 4).unwrap();
    let batch = rows(300, day.and_hms_opt(8, 0, 0).unwrap(), link);
    let utc = chrono_tz::UTC;
    insert_rows(&core.db, &batch).await.unwrap();
    let ahead = tally::work_out_ahead(&core.db, utc, 300).await.unwrap();
    // The tenth click is a page view from 1.0.0.9 (see `rows`).
    let numbered = Who::of(ADDRESSES, "1.0.0.9").unwrap();
    let backend = core.db.get_database_backend();
    let table = inklink::stats::daysets::numbers::new_numbers_table(backend);
    core.db
        .execute_raw(inklink::db::sql::statement(
            backend,
            &format!("INSERT INTO {table} (hash, id) VALUES (?, ?)"),
            vec![Value::from(numbered.hash), Value::from(1_000_000i64)],
        ))
        .await
        .unwrap();
    let turn = tally::tally_worked_out(&core.db, utc, 300, ahead).await;
    assert!(
        turn.is_err(),
        "the turn numbered an address twice: {turn:?}"
    );
    assert_eq!(rows_in(&core.db, "click_waiting").await, 300);
    assert_eq!(rows_in(&core.db, table).await, 1);
    assert_eq!(rows_in(&core.db, "visit_statistics").await, 0);
    // The next turn reads afresh, finds the address's number and counts the clicks.
    assert_eq!(tally::drain(&core.db, utc).await.unwrap(), 300);
    assert_day_counted(&core.db, day, link, &batch).await;
}

/// On SQLite new numbers wait in `visit_key_recent`, and every turn moves one stretch of the
/// hash range from there into `visit_key`: visitors seen again are found in either table, none
/// is in both, every stretch has moved once as many turns have passed as there are stretches,
/// going a migration down puts every number back into `visit_key`, and a day counted over many
/// turns gives the rows an independent count gives. Elsewhere they go straight into
/// `visit_key`.
#[actix_web::test]
async fn numbers_move_from_the_recent_table_into_visit_key_and_are_found_in_either() {
    use inklink::stats::daysets::numbers::SLICES;
    use inklink::stats::tally;
    use migration::{Migrator, MigratorTrait};
    let db = TestDb::create().await;
    let (core, link) = core_with_link(&db, "https://example.com/recent").await;
    let apart = core.db.get_database_backend() == sea_orm::DbBackend::Sqlite;
    let steps = |name: &str| {
        let mut newest_first = Migrator::migrations().into_iter().rev();
        newest_first.position(|m| m.name().contains(name)).unwrap() as u32 + 1
    };
    let day = NaiveDate::from_ymd_opt(2026, 5, 6).unwrap();
    // 600 visitors and addresses, none seen twice in the morning.
    let morning = rows(600, day.and_hms_opt(8, 0, 0).unwrap(), link);
    // The same visitors and addresses again in the afternoon.
    let afternoon = rows(600, day.and_hms_opt(15, 0, 0).unwrap(), link);
    let utc = chrono_tz::UTC;
    let numbered = async || {
        let sql = "SELECT next_visitor + next_address AS n FROM stats_tally WHERE id = 1";
        let backend = core.db.get_database_backend();
        let row = core.db.query_one_raw(Statement::from_string(backend, sql));
        row.await.unwrap().unwrap().try_get::<i64>("", "n").unwrap()
    };
    let count_in_turns_of_20 = async |most: usize| {
        let mut turns = 0;
        while turns < most && tally::tally(&core.db, utc, 20).await.unwrap() > 0 {
            turns += 1;
        }
        turns
    };
    insert_rows(&core.db, &morning).await.unwrap();
    assert_eq!(count_in_turns_of_20(10).await, 10);
    // Down and up again after ten turns: every number back in `visit_key`, none lost.
    let so_far = numbered().await;
    assert_eq!(rows_in(&core.db, "visit_key_recent").await > 0, apart);
    Migrator::down(&core.db, Some(steps("recent_visitor_numbers")))
        .await
        .unwrap();
    assert_eq!(rows_in(&core.db, "visit_key").await, so_far);
    Migrator::up(&core.db, None).await.unwrap();
    assert_eq!(rows_in(&core.db, "visit_key_recent").await, 0);
    assert_eq!(count_in_turns_of_20(usize::MAX).await, 20);
    let after_morning = numbered().await;
    assert!(after_morning > so_far);
    // The afternoon starts with numbers in both tables.
    assert!(rows_in(&core.db, "visit_key").await > 0);
    assert_eq!(rows_in(&core.db, "visit_key_recent").await > 0, apart);
    insert_rows(&core.db, &afternoon).await.unwrap();
    let turns = count_in_turns_of_20(usize::MAX).await;
    assert!(turns > SLICES as usize, "{turns} turns");
    assert_eq!(
        numbered().await,
        after_morning,
        "the afternoon's were all found"
    );
    // No turn since the last new number left a stretch unmoved.
    assert_eq!(rows_in(&core.db, "visit_key_recent").await, 0);
    assert_eq!(rows_in(&core.db, "visit_key").await, after_morning);
    let both = [morning, afternoon].concat();
    let counted = assert_day_counted(&core.db, day, link, &both).await;
    assert_recount_gives_the_same_rows(&core.db, day, &counted).await;
}

/// Moving a stretch into `visit_key` (on SQLite) finds a number already there (which only a
/// fault outside counting could put in both tables) and fails the turn's transaction rather
/// than keep two numbers for one visitor; the other stretches move as before.
#[actix_web::test]
async fn a_recent_number_already_in_visit_key_fails_the_move() {
    use inklink::stats::daysets::numbers::{SLICES, VISITORS, Who, move_slice};
    let db = TestDb::create().await;
    let (core, _) = core_with_link(&db, "https://example.com/moved").await;
    let backend = core.db.get_database_backend();
    let width = (1i128 << 64) / i128::from(SLICES);
    let slice = |hash: i64| ((i128::from(hash) - i128::from(i64::MIN)) / width) as i64;
    // A hash put in both tables, another in a stretch of its own, and one at each end of the
    // range (stretches 0 and SLICES - 1).
    let hashes = (0..).map(|n: u32| Who::of(VISITORS, n).unwrap().hash);
    let inner = 1..SLICES - 1;
    let twice = hashes.clone().find(|h| inner.contains(&slice(*h))).unwrap();
    let other = hashes
        .filter(|h| inner.contains(&slice(*h)))
        .find(|h| slice(*h) != slice(twice))
        .unwrap();
    for (table, hash, id) in [
        ("visit_key", twice, 1i64),
        ("visit_key_recent", twice, 2),
        ("visit_key_recent", other, 3),
        ("visit_key_recent", i64::MIN, 4),
        ("visit_key_recent", i64::MAX, 5),
    ] {
        let sql = format!("INSERT INTO {table} (hash, id) VALUES (?, ?)");
        let values = vec![Value::from(hash), Value::from(id)];
        let insert = inklink::db::sql::statement(backend, &sql, values);
        core.db.execute_raw(insert).await.unwrap();
    }
    let txn = inklink::db::begin_write(&core.db).await.unwrap();
    let moved = move_slice(&txn, slice(twice) + 3 * SLICES).await;
    if backend != sea_orm::DbBackend::Sqlite {
        // Only SQLite keeps recent numbers apart: elsewhere the table stays empty, and a turn
        // moves nothing.
        moved.unwrap();
        txn.commit().await.unwrap();
        assert_eq!(rows_in(&core.db, "visit_key_recent").await, 4);
        assert_eq!(rows_in(&core.db, "visit_key").await, 1);
        return;
    }
    let err = moved.expect_err("a number in both tables was moved");
    assert!(err.to_string().contains("in visit_key already"), "{err}");
    txn.rollback().await.unwrap();
    assert_eq!(rows_in(&core.db, "visit_key_recent").await, 4);
    for turn in [slice(other), 0, SLICES - 1] {
        let txn = inklink::db::begin_write(&core.db).await.unwrap();
        move_slice(&txn, turn).await.unwrap();
        txn.commit().await.unwrap();
    }
    assert_eq!(rows_in(&core.db, "visit_key_recent").await, 1);
    assert_eq!(rows_in(&core.db, "visit_key").await, 4);
}

/// A turn worked out ahead knows its clicks still wait by how many are listed up to its last
/// one, when nothing can have taken any of them off. A purge can: it takes off the late clicks
/// of the days it froze, and clicks stored meanwhile among those read would then make up the
/// count, and be taken off uncounted.
#[actix_web::test]
async fn a_turn_worked_out_ahead_over_a_purged_days_late_clicks_counts_the_clicks_stored_meanwhile()
{
    use inklink::stats::tally;
    let db = TestDb::create().await;
    let (core, link) = core_with_link(&db, "https://example.com/purged").await;
    let utc = chrono_tz::UTC;
    let frozen = NaiveDate::from_ymd_opt(2026, 5, 4).unwrap();
    let after = frozen.succ_opt().unwrap();
    inklink::stats::retention::purge(&core.db, utc, frozen)
        .await
        .unwrap();
    // Late clicks of a purged day, and clicks of the day after, all waiting.
    let late = rows(
        200,
        frozen.pred_opt().unwrap().and_hms_opt(8, 0, 0).unwrap(),
        link,
    );
    let counted_day = rows(300, after.and_hms_opt(8, 0, 0).unwrap(), link);
    insert_rows(&core.db, &late).await.unwrap();
    insert_rows(&core.db, &counted_day).await.unwrap();
    let ahead = tally::work_out_ahead(&core.db, utc, 300).await.unwrap();
    // The purge's deletes (they follow its counting; the writers go on storing meanwhile)
    // take the late clicks off the list, and as many clicks of the day after, earlier than
    // those read, are stored.
    let spooled = rows(200, after.and_hms_opt(7, 0, 0).unwrap(), link);
    inklink::clickstore::purge::before(&core.db, frozen.and_hms_opt(0, 0, 0).unwrap())
        .await
        .unwrap();
    insert_rows(&core.db, &spooled).await.unwrap();
    tally::tally_worked_out(&core.db, utc, 300, ahead)
        .await
        .unwrap();
    tally::drain(&core.db, utc).await.unwrap();
    assert_eq!(rows_in(&core.db, "click_waiting").await, 0);
    let all: Vec<EventRow> = spooled.iter().chain(&counted_day).cloned().collect();
    assert_day_counted(&core.db, after, link, &all).await;
}

/// SQLite has one write lock, and a connection that finds it taken polls for it with sleeps of
/// up to 100 ms: a click writer that begins its next batch microseconds after the last could
/// keep an operator's change waiting out the whole busy timeout. Each change here waits for no
/// more than the writer's batch in flight at each of its writes.
#[actix_web::test]
async fn an_operators_change_is_not_kept_waiting_by_a_click_writer_writing_back_to_back() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
    let db = TestDb::create().await;
    let (core, link) = core_with_link(&db, "https://example.com/busy").await;
    let day = NaiveDate::from_ymd_opt(2026, 5, 3).unwrap();
    // Prepared beforehand (texts resolved), so that the writer's batches follow each other as
    // closely as in a release build under load, where the preparing is microseconds.
    let store = inklink::clickstore::insert::ClickStore::new();
    let mut batches = Vec::new();
    for chunk in rows(30_000, day.and_hms_opt(0, 0, 0).unwrap(), link).chunks(500) {
        batches.push(store.prepare(&core.db, chunk, &[]).await.unwrap());
    }
    let stored = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, stored, stop) = (core.db.clone(), stored.clone(), stop.clone());
        tokio::spawn(async move {
            // Back to back, as the writer under load; after the first round every batch is
            // stored already, and still takes the write lock to find that out.
            for batch in batches.iter().cycle() {
                if stop.load(SeqCst) {
                    break;
                }
                inklink::clickstore::insert::write(&db, batch)
                    .await
                    .expect("the writer stores its batch");
                stored.fetch_add(1, SeqCst);
            }
        })
    };
    while stored.load(SeqCst) < 3 {
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    let mut passed = Vec::new();
    for round in 0..12u32 {
        tokio::time::sleep(std::time::Duration::from_micros(700 * u64::from(round))).await;
        // An operator's change to the link, as the services make it.
        let before = stored.load(SeqCst);
        let txn = inklink::db::begin_write(&core.db).await.unwrap();
        passed.push(stored.load(SeqCst) - before);
        let change = inklink::db::sql::statement(
            txn.get_database_backend(),
            "UPDATE url_map SET description = ? WHERE id = ?",
            vec![Value::from(format!("round {round}")), Value::from(link)],
        );
        txn.execute_raw(change).await.unwrap();
        txn.commit().await.unwrap();
    }
    // And a whole link, through the service.
    create_link_in(&core, "https://example.com/during").await;
    // Every click stored once: the writer stops after its first round at the earliest.
    while stored.load(SeqCst) < 60 {
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    stop.store(true, SeqCst);
    writer.await.unwrap();
    eprintln!("batches stored while each change waited: {passed:?}");
    if db.backend == crate::support::Backend::Sqlite {
        // The batch in flight, and one the writer had committed but not yet counted. Without
        // turns a change waited for up to 636 batches here.
        assert!(
            passed.iter().all(|&n| n <= 2),
            "batches stored while each change waited: {passed:?}"
        );
    }
    assert_eq!(
        inklink::clickstore::stored::count(&core.db).await.unwrap(),
        30_000
    );
}

/// `n` clicks of `link` at `hour` of `day`, numbered from 0 (the same number in two batches:
/// the same address and user agent, so the same visitor), keyed by hour and number.
fn hourly_batch(day: NaiveDate, hour: u32, n: usize, link: i64) -> Vec<EventRow> {
    rows(n, day.and_hms_opt(hour, 0, 0).unwrap(), link)
        .into_iter()
        .enumerate()
        .map(|(i, mut row)| {
            row.event_key = format!("{hour:02x}{i:030x}").into();
            row
        })
        .collect()
}

/// A counting thread keeps the day sets its last turn left for its next turn, and uses them
/// only while no other turn came between: after another instance's turn, or a recount, it
/// reads them again, and each visitor is still counted once a day.
#[actix_web::test]
async fn the_day_sets_a_turn_left_are_used_by_the_next_only_when_no_other_turn_came_between() {
    use inklink::stats::tally;
    let db = TestDb::create().await;
    let (core, link) = core_with_link(&db, "https://example.com/remembered").await;
    let utc = chrono_tz::UTC;
    let day = NaiveDate::from_ymd_opt(2026, 5, 3).unwrap();
    // Each batch an hour later: those below the last batch's length come back, the others
    // are new.
    let batch = |hour: u32, n: usize| hourly_batch(day, hour, n, link);
    let mut all: Vec<EventRow> = Vec::new();
    let mut counter = tally::Counter::default();
    let store = async |rows: Vec<EventRow>, all: &mut Vec<EventRow>| {
        insert_rows(&core.db, &rows).await.unwrap();
        all.extend(rows);
    };
    // Counted by this thread, which keeps the sets.
    store(batch(8, 300), &mut all).await;
    counter.turn(&core.db, utc, 50_000).await.unwrap();
    assert_day_counted(&core.db, day, link, &all).await;
    // Another instance's turn adds visitors 300..600 to the stored sets.
    store(batch(9, 600), &mut all).await;
    tally::tally_counted(&core.db, utc, 50_000).await.unwrap();
    assert_day_counted(&core.db, day, link, &all).await;
    // This thread's sets lack them: it must read the stored ones.
    store(batch(10, 900), &mut all).await;
    counter.turn(&core.db, utc, 50_000).await.unwrap();
    assert_day_counted(&core.db, day, link, &all).await;
    // No turn between: its own sets, kept, are the stored ones.
    store(batch(11, 1200), &mut all).await;
    counter.turn(&core.db, utc, 50_000).await.unwrap();
    assert_day_counted(&core.db, day, link, &all).await;
    // A recount takes turns and rewrites the sets.
    inklink::stats::recount::rebuild(&core.db, utc, day, day)
        .await
        .unwrap();
    assert_day_counted(&core.db, day, link, &all).await;
    store(batch(12, 1500), &mut all).await;
    counter.turn(&core.db, utc, 50_000).await.unwrap();
    let counted = assert_day_counted(&core.db, day, link, &all).await;
    assert_recount_gives_the_same_rows(&core.db, day, &counted).await;
}

/// On SQLite a counting thread works out its next turn while a full one writes and commits
/// (before the database holds what it writes): the numbers it hands out, the capped values it
/// adds and the day sets it leaves are carried to the next. Across such turns each visitor
/// is counted once a day, a campaign value beyond the day's first `MAX_VALUES` counts as
/// `(other)`, clicks stored meanwhile with earlier keys are counted once, and a turn worked
/// out ahead is refused after another instance's turn: the rows are the test's own count and
/// a recount's, in one turn.
#[actix_web::test]
async fn turns_worked_out_while_the_one_before_commits_count_each_visitor_and_value_once() {
    use inklink::stats::tally::{self, Counter, MAX_VALUES, OTHER};
    let db = TestDb::create().await;
    let (core, link) = core_with_link(&db, "https://example.com/pipelined").await;
    let utc = chrono_tz::UTC;
    let day = NaiveDate::from_ymd_opt(2026, 5, 4).unwrap();
    // Each click of a batch brings a campaign value of its own.
    let batch = |hour: u32, n: usize| -> Vec<EventRow> {
        let mut rows = hourly_batch(day, hour, n, link);
        for (i, row) in rows.iter_mut().enumerate() {
            row.query_string = Some(format!("utm_source=s{hour}-{i}").into());
        }
        rows
    };
    let mut all: Vec<EventRow> = Vec::new();
    let store = async |rows: Vec<EventRow>, all: &mut Vec<EventRow>| {
        insert_rows(&core.db, &rows).await.unwrap();
        all.extend(rows);
    };
    const TURN: u64 = 120;
    let mut counter = Counter::default();
    // A backlog of turns whose visitors come back in the next ones.
    store(batch(9, 500), &mut all).await;
    store(batch(10, 300), &mut all).await;
    for _ in 0..3 {
        assert_eq!(
            counter.turn(&core.db, utc, TURN).await.unwrap().clicks,
            TURN
        );
    }
    // Clicks stored meanwhile, earlier than every one waiting: the turn worked out ahead is
    // not the list's front any more.
    store(batch(8, 90), &mut all).await;
    assert_eq!(
        counter.turn(&core.db, utc, TURN).await.unwrap().clicks,
        TURN
    );
    // Another instance's turn: the next one this thread worked out is refused.
    tally::tally_counted(&core.db, utc, 100).await.unwrap();
    let mut counted = 0;
    loop {
        let turn = counter.turn(&core.db, utc, TURN).await.unwrap().clicks;
        counted += turn;
        if turn == 0 {
            break;
        }
    }
    assert_eq!(counted, all.len() as u64 - 4 * TURN - 100);
    assert!(
        !inklink::clickstore::waiting::any_waiting(&core.db)
            .await
            .unwrap()
    );
    let rows = assert_day_counted(&core.db, day, link, &all).await;
    // The first MAX_VALUES campaign values, and the others as one.
    let sources: Vec<&String> = (rows.iter())
        .filter(|row| row.starts_with(&format!("{day} {link} utm_source ")))
        .collect();
    assert_eq!(sources.len(), MAX_VALUES + 1, "{sources:#?}");
    assert!(
        sources
            .iter()
            .any(|row| row.starts_with(&format!("{day} {link} utm_source {OTHER} ")))
    );
    assert_recount_gives_the_same_rows(&core.db, day, &rows).await;
}

/// A link's day keeps its first `MAX_VALUES` values of a capped dimension, and later ones
/// count as `(other)`. Turns that read what the day has back from the database (none carried
/// by a turn under way) keep a value the day has under its own name, and send one it does not
/// have to `(other)`, whether that value went there before or is new; another link's day
/// under the cap, counted in the same turns, keeps all of its values. The rows are a recount's.
#[actix_web::test]
async fn values_past_a_days_cap_go_to_other_in_later_turns_that_read_the_day_back() {
    use inklink::stats::tally::{self, MAX_VALUES, OTHER};
    let db = TestDb::create().await;
    let (core, full) = core_with_link(&db, "https://example.com/capped").await;
    let few = create_link_in(&core, "https://example.com/uncapped")
        .await
        .link
        .id;
    let utc = chrono_tz::UTC;
    let day = NaiveDate::from_ymd_opt(2026, 5, 5).unwrap();
    // Page views, each bringing its own `utm_source`; each batch an hour of its own, so that
    // their keys differ.
    let batch = |hour: u32, link: i64, sources: &[String]| -> Vec<EventRow> {
        let mut rows = hourly_batch(day, hour, sources.len(), link);
        for (row, source) in rows.iter_mut().zip(sources) {
            row.outcome = Outcome::Redirected;
            row.agent.is_bot = false;
            row.query_string = Some(format!("utm_source={source}").into());
        }
        rows
    };
    let names = |prefix: &str, range: std::ops::Range<usize>| -> Vec<String> {
        range.map(|i| format!("{prefix}{i}")).collect()
    };
    let beyond = MAX_VALUES + 50;
    insert_rows(&core.db, &batch(9, full, &names("s", 0..beyond)))
        .await
        .unwrap();
    insert_rows(&core.db, &batch(10, few, &names("f", 0..20)))
        .await
        .unwrap();
    assert_eq!(
        tally::tally(&core.db, utc, 10_000).await.unwrap(),
        beyond as u64 + 20
    );
    // Values the day has, values that went to `(other)`, and new ones.
    let again = [
        names("s", 0..10),
        names("s", beyond - 10..beyond),
        names("n", 0..10),
    ];
    insert_rows(&core.db, &batch(11, full, &again.concat()))
        .await
        .unwrap();
    let again = [names("f", 0..5), names("g", 0..5)];
    insert_rows(&core.db, &batch(12, few, &again.concat()))
        .await
        .unwrap();
    assert_eq!(tally::tally(&core.db, utc, 10_000).await.unwrap(), 40);

    let rows = statistics(&core.db).await;
    let sources = |link: i64| -> Vec<&String> {
        (rows.iter())
            .filter(|row| row.starts_with(&format!("{day} {link} utm_source ")))
            .collect()
    };
    let has = |link: i64, value: &str, pv: u32| {
        let row = format!("{day} {link} utm_source {value} {pv} ");
        assert!(
            rows.iter().any(|r| r.starts_with(&row)),
            "{row} not in {:#?}",
            sources(link)
        );
    };
    assert_eq!(sources(full).len(), MAX_VALUES + 1, "{:#?}", sources(full));
    has(full, "s0", 2);
    has(full, "s9", 2);
    has(full, "s10", 1);
    has(full, &format!("s{}", MAX_VALUES - 1), 1);
    has(full, OTHER, 50 + 20);
    assert_eq!(sources(few).len(), 25, "{:#?}", sources(few));
    has(few, "f0", 2);
    has(few, "f5", 1);
    has(few, "g4", 1);
    assert_recount_gives_the_same_rows(&core.db, day, &rows).await;
}

/// A turn that adds a few visitors to a large day set writes them as a row of additions
/// instead of the whole set again; readers take the set with its additions, and once these
/// have grown past a share of the set, it is written whole and they are dropped. Through many
/// small turns, some by a counting thread that keeps its sets and some that read them back,
/// over two days with visitors coming back, each visitor is counted once a day and once over
/// the range, and a recount gives the same rows.
#[actix_web::test]
async fn a_day_sets_additions_count_with_it_until_they_are_folded_into_it() {
    use inklink::stats::report::{self, Scope};
    use inklink::stats::tally;
    let db = TestDb::create().await;
    let (core, one) = core_with_link(&db, "https://example.com/added-1").await;
    let two = create_link_in(&core, "https://example.com/added-2")
        .await
        .link
        .id;
    let utc = chrono_tz::UTC;
    let first = NaiveDate::from_ymd_opt(2026, 5, 5).unwrap();
    let second = first.succ_opt().unwrap();
    // Clicks `from..to` of the test's visitors on `day`, keyed by `batch`, their visitors
    // taking turns between the two links: each link's set is every other number, a set that
    // does not shrink to a few runs.
    let clicks = |day: NaiveDate, batch: usize, from: usize, to: usize| -> Vec<EventRow> {
        rows(to, day.and_hms_opt(9, 0, 0).unwrap(), one)
            .into_iter()
            .enumerate()
            .skip(from)
            .map(|(i, mut row)| {
                row.event_key = Digest::parse(&format!("{:02x}{i:030x}", 0x40 + batch));
                row.url_map_id = Some([one, two][i % 2]);
                row
            })
            .collect()
    };
    let mut all = clicks(first, 0, 0, 800);
    insert_rows(&core.db, &all).await.unwrap();
    tally::tally(&core.db, utc, 50_000).await.unwrap();
    assert_eq!(rows_in(&core.db, "visit_day_added").await, 0);
    let mut counter = tally::Counter::default();
    let (mut most, mut folded) = (0, false);
    for batch in 1..=40 {
        // Four new visitors and four who came before; the last ten turns on the next day.
        let day = if batch <= 30 { first } else { second };
        let new = 800 + 4 * batch;
        let mut rows = clicks(day, batch, new - 8, new);
        rows.extend(clicks(day, batch + 100, 10 * batch, 10 * batch + 2));
        insert_rows(&core.db, &rows).await.unwrap();
        all.extend(rows);
        match batch % 3 {
            0 => tally::tally(&core.db, utc, 50_000).await.unwrap(),
            _ => counter.turn(&core.db, utc, 50_000).await.unwrap().clicks,
        };
        let added = rows_in(&core.db, "visit_day_added").await;
        folded |= added < most;
        most = most.max(added);
    }
    assert!(most > 0, "no turn wrote additions");
    assert!(folded, "no set was written whole again with its additions");
    for link in [one, two] {
        let of_link: Vec<EventRow> = all
            .iter()
            .filter(|row| row.url_map_id == Some(link))
            .cloned()
            .collect();
        for day in [first, second] {
            let on_day: Vec<EventRow> = (of_link.iter())
                .filter(|row| row.record_time.date() == day)
                .cloned()
                .collect();
            assert_day_counted(&core.db, day, link, &on_day).await;
        }
        let views =
            (of_link.iter()).filter(|row| row.outcome.status() == "success" && !row.agent.is_bot);
        let visitors: std::collections::BTreeSet<String> = views
            .clone()
            .map(|r| r.unique_identity.to_string())
            .collect();
        let addresses: std::collections::BTreeSet<String> =
            views.map(|r| r.client_ip.to_string()).collect();
        let range = report::range_totals(&core.db, &core.kept, Scope::Link(link), first, second)
            .await
            .unwrap();
        assert_eq!(
            (range.uv, range.ip),
            (visitors.len() as i64, addresses.len() as i64),
            "link {link}"
        );
    }
    let counted = statistics(&core.db).await;
    assert_recount_gives_the_same_rows(&core.db, first, &counted).await;
    assert_recount_gives_the_same_rows(&core.db, second, &counted).await;
}

/// A day set of a few visitors (a campaign of one link per recipient has nearly only such sets)
/// is written whole by every turn that adds to it, never as rows of additions: those cost a
/// row each as much as the set, and one more to read and to delete. Its visitors are still
/// each counted once.
#[actix_web::test]
async fn a_small_day_set_is_written_whole_by_every_turn_that_adds_to_it() {
    use inklink::stats::tally;
    let db = TestDb::create().await;
    let (core, link) = core_with_link(&db, "https://example.com/small-sets").await;
    let day = NaiveDate::from_ymd_opt(2026, 5, 7).unwrap();
    let all = rows(60, day.and_hms_opt(9, 0, 0).unwrap(), link);
    let mut counter = tally::Counter::default();
    let mut counted = 0;
    // Three clicks a turn, some by visitors seen before (the rows' agents and addresses repeat).
    for (turn, three) in all.chunks(3).enumerate() {
        insert_rows(&core.db, three).await.unwrap();
        counted += match turn % 2 {
            0 => tally::tally(&core.db, chrono_tz::UTC, 50_000)
                .await
                .unwrap(),
            _ => {
                counter
                    .turn(&core.db, chrono_tz::UTC, 50_000)
                    .await
                    .unwrap()
                    .clicks
            }
        };
    }
    assert_eq!(counted, all.len() as u64);
    assert_eq!(rows_in(&core.db, "visit_day_added").await, 0);
    let rows = assert_day_counted(&core.db, day, link, &all).await;
    assert_recount_gives_the_same_rows(&core.db, day, &rows).await;
}

/// Campaign values that differ only in letter case are two values, each with its own visitors,
/// also when their day sets are read back by key in later turns (MySQL's default collations
/// would take `sms` for `SMS`; the sets' values compare byte for byte). Some visitors come with
/// both values, and turns alternate between reading the sets from the database and the ones
/// the counting thread kept.
#[actix_web::test]
async fn values_differing_only_in_case_keep_their_own_visitors_across_turns() {
    use inklink::stats::tally;
    use std::collections::{BTreeMap, BTreeSet};
    let db = TestDb::create().await;
    let (core, link) = core_with_link(&db, "https://example.com/case").await;
    let day = NaiveDate::from_ymd_opt(2026, 5, 8).unwrap();
    // Page views are every third row (the rows' agents take turns); the values take turns
    // among those, and the first 40 rows come again, by the same visitors, with the next value.
    let sources = ["sms", "SMS", "Sms"];
    let with_source = |mut row: EventRow, at: usize| {
        row.query_string = Some(format!("utm_source={}", sources[at % 3]).into());
        row
    };
    let first = rows(240, day.and_hms_opt(9, 0, 0).unwrap(), link);
    let mut all: Vec<EventRow> = (first.iter().cloned().enumerate())
        .map(|(i, row)| with_source(row, i / 3))
        .collect();
    all.extend(first.into_iter().take(40).enumerate().map(|(i, mut row)| {
        row.event_key = format!("cc{i:030x}").into();
        with_source(row, i / 3 + 1)
    }));
    let mut counter = tally::Counter::default();
    for (turn, part) in all.chunks(20).enumerate() {
        insert_rows(&core.db, part).await.unwrap();
        match turn % 2 {
            0 => tally::tally(&core.db, chrono_tz::UTC, 50_000)
                .await
                .unwrap(),
            _ => {
                counter
                    .turn(&core.db, chrono_tz::UTC, 50_000)
                    .await
                    .unwrap()
                    .clicks
            }
        };
    }
    let mut expected: BTreeMap<String, (i64, BTreeSet<String>)> = BTreeMap::new();
    let views = all
        .iter()
        .filter(|row| row.outcome.status() == "success" && !row.agent.is_bot);
    for row in views {
        let query = row.query_string.as_deref().unwrap();
        let source = query.trim_start_matches("utm_source=").to_owned();
        let (pv, visitors) = expected.entry(source).or_default();
        *pv += 1;
        visitors.insert(row.unique_identity.to_string());
    }
    assert_eq!(expected.len(), 3, "the test's views carry each value");
    let counted = statistics(&core.db).await;
    for (source, (pv, visitors)) in &expected {
        let row = format!("{day} {link} utm_source {source} {pv} {}", visitors.len());
        assert!(counted.contains(&row), "{row} not in {counted:#?}");
    }
    assert_day_counted(&core.db, day, link, &all).await;
    assert_recount_gives_the_same_rows(&core.db, day, &counted).await;
}

/// On SQLite, a counting thread works out its next turn while the last writes and commits, so
/// a reader is on the state before every commit and SQLite cannot start its log over there;
/// the log is checkpointed once that read has ended, and each turn's writer starts it over. A
/// backlog counted in many turns leaves a log of about one turn's writes, not of all of them
/// (a burst's grew to 3 GB without the checkpoint: bench/README.md).
#[actix_web::test]
async fn counting_a_backlog_turn_after_turn_keeps_sqlites_log_to_about_a_turns_writes() {
    use inklink::stats::tally::Counter;
    let db = TestDb::create().await;
    if db.backend != crate::support::Backend::Sqlite {
        return;
    }
    let (core, link) = core_with_link(&db, "https://example.com/log").await;
    let file = db.url.trim_start_matches("sqlite://");
    let log = format!("{}-wal", file.split('?').next().unwrap());
    let day = NaiveDate::from_ymd_opt(2026, 5, 7).unwrap();
    // Every click another visitor: each turn hands out numbers and grows the day's sets.
    let all = rows(60_000, day.and_hms_opt(0, 0, 0).unwrap(), link);
    insert_rows(&core.db, &all).await.unwrap();
    // The log empty before counting: its size is then what counting wrote into it.
    core.db
        .execute_unprepared("PRAGMA wal_checkpoint(TRUNCATE)")
        .await
        .unwrap();
    assert_eq!(std::fs::metadata(&log).unwrap().len(), 0);
    let mut counter = Counter::default();
    let mut sizes = Vec::new();
    loop {
        let counted = counter.turn(&core.db, chrono_tz::UTC, 5_000).await.unwrap();
        if counted.clicks == 0 {
            break;
        }
        sizes.push(std::fs::metadata(&log).unwrap().len());
    }
    assert_eq!(sizes.len(), 12, "{sizes:?}");
    // The log file keeps the most it ever held. A turn writes more as the day's sets grow
    // (the last about four times the first); the twelve turns together wrote over thirty
    // times what the first did.
    assert!(
        sizes[11] < 8 * sizes[0],
        "the log grew by every turn's writes: {sizes:?}"
    );
    assert_day_counted(&core.db, day, link, &all).await;
}
