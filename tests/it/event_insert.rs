//! The click writer's batch insert, called directly: every value arrives as it was enriched,
//! a batch written twice is stored once, and stored times compare with the ranges that
//! statistics query them with.

use crate::analytics::GEOIP;
use crate::support::{TestDb, create_link_in, settings};
use chrono::{NaiveDate, NaiveDateTime};
use inklink::analytics::enrich::Enricher;
use inklink::analytics::event::EventRow;
use inklink::analytics::geoip::GeoIp;
use inklink::analytics::insert::{insert_rows, sqlite_time};
use inklink::analytics::{ClickEvent, Outcome};
use sea_orm::sea_query::Value;
use sea_orm::{ConnectionTrait, DatabaseConnection, Statement};
use std::net::IpAddr;

#[test]
fn sqlite_times_are_written_as_sqlx_writes_them() {
    let day = NaiveDate::from_ymd_opt(2026, 3, 9).unwrap();
    for nanos in [
        0,
        1_000_000,
        120_000_000,
        999_000_000,
        1_000,
        123_456_000,
        999_999_000,
        1,
        123_456_789,
        999_999_999,
    ] {
        let at = day.and_hms_nano_opt(7, 5, 3, nanos).unwrap();
        assert_eq!(
            &*sqlite_time(at),
            at.format("%F %T%.f").to_string(),
            "{nanos} ns"
        );
    }
    for at in [
        NaiveDate::from_ymd_opt(1, 1, 1)
            .unwrap()
            .and_hms_opt(0, 0, 0),
        NaiveDate::from_ymd_opt(9999, 12, 31)
            .unwrap()
            .and_hms_micro_opt(23, 59, 59, 999_999),
        // Beyond four digits, and a leap second: the general path.
        NaiveDate::from_ymd_opt(12345, 6, 7)
            .unwrap()
            .and_hms_opt(8, 9, 10),
        day.and_hms_milli_opt(23, 59, 59, 1_500),
    ] {
        let at = at.unwrap();
        assert_eq!(&*sqlite_time(at), at.format("%F %T%.f").to_string());
    }
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

async fn count_between(db: &DatabaseConnection, from: NaiveDateTime, to: NaiveDateTime) -> i64 {
    let backend = db.get_database_backend();
    let sql =
        "SELECT COUNT(*) FROM transform_event_record WHERE record_time >= ? AND record_time < ?";
    let row = db
        .query_one_raw(inklink::analytics::aggregate::statement(
            backend,
            sql,
            vec![Value::from(from), Value::from(to)],
        ))
        .await
        .unwrap()
        .unwrap();
    row.try_get_by_index(0).unwrap()
}

/// Every stored row, as the writer enriched it, ordered by time.
async fn stored(db: &DatabaseConnection) -> Vec<EventRow> {
    let sql = "SELECT event_key, record_time, compression_code, url_map_id, host, client_ip, \
               unique_identity, user_agent, referer, referer_host, query_string, country, \
               province, city, browser, browser_version, os, os_version, device, is_bot, \
               transform_status, failure_reason, target_rule FROM transform_event_record \
               ORDER BY record_time";
    let text = |row: &sea_orm::QueryResult, i: usize| -> Option<std::sync::Arc<str>> {
        row.try_get_by_index::<Option<String>>(i)
            .unwrap()
            .map(Into::into)
    };
    db.query_all_raw(Statement::from_string(db.get_database_backend(), sql))
        .await
        .unwrap()
        .iter()
        .map(|row| EventRow {
            event_key: text(row, 0).unwrap(),
            record_time: row.try_get_by_index(1).unwrap(),
            compression_code: text(row, 2).unwrap(),
            url_map_id: row.try_get_by_index(3).unwrap(),
            host: text(row, 4),
            client_ip: text(row, 5).unwrap(),
            unique_identity: text(row, 6).unwrap(),
            user_agent: text(row, 7),
            referer: text(row, 8),
            referer_host: text(row, 9),
            query_string: text(row, 10),
            country: text(row, 11),
            province: text(row, 12),
            city: text(row, 13),
            browser: text(row, 14),
            browser_version: text(row, 15),
            os: text(row, 16),
            os_version: text(row, 17),
            device: text(row, 18),
            is_bot: row.try_get_by_index(19).unwrap(),
            transform_status: text(row, 20).unwrap(),
            failure_reason: text(row, 21),
            target_rule: text(row, 22),
            generation: 0,
        })
        .collect()
}

#[actix_web::test]
async fn a_batch_is_stored_exactly_as_enriched_and_only_once_when_written_twice() {
    let db = TestDb::create().await;
    let core = inklink::startup::open(settings(&db, "127.0.0.1:0", &[]))
        .await
        .unwrap();
    let link = create_link_in(&core, "https://example.com/insert")
        .await
        .link
        .id;
    let start = NaiveDate::from_ymd_opt(2026, 5, 1)
        .unwrap()
        .and_hms_micro_opt(10, 0, 0, 250_000)
        .unwrap();
    // 1,234 rows in one transaction: on MySQL statements of 1,000, 100, 10 and 1 rows, on
    // SQLite one stepped insert per row, on PostgreSQL one COPY.
    let batch = rows(1234, start, link);
    insert_rows(&core.db, batch[..600].into()).await.unwrap();
    // A batch of which some rows are stored (a spool replayed after a partial write), a retry
    // of a batch whose commit was not acknowledged, and one that overlaps it.
    insert_rows(&core.db, batch.as_slice().into())
        .await
        .unwrap();
    insert_rows(&core.db, batch.as_slice().into())
        .await
        .unwrap();
    insert_rows(&core.db, batch[1200..].into()).await.unwrap();

    let got = stored(&core.db).await;
    assert_eq!(got.len(), 1234, "each event once");
    assert_eq!(got, batch);
    assert!(got.iter().any(|row| row.is_bot) && got.iter().any(|row| row.failure_reason.is_some()));
    assert!(
        got.iter()
            .any(|row| row.target_rule.as_deref() == Some("android"))
    );

    // Times compare with bound times as statistics compare them: half-open ranges split
    // the batch exactly, including at a fractional boundary.
    let end = start + chrono::Duration::hours(2);
    assert_eq!(count_between(&core.db, start, end).await, 1234);
    let split = batch[600].record_time;
    assert_eq!(count_between(&core.db, start, split).await, 600);
    assert_eq!(count_between(&core.db, split, end).await, 634);
}

/// Every daily row, as text, to compare before and after.
async fn statistics(db: &DatabaseConnection) -> Vec<String> {
    let mut out = Vec::new();
    for sql in [
        "SELECT stat_date, url_map_id, pv, uv, ip_count, effective, ineffective FROM visit_statistics",
        "SELECT stat_date, url_map_id, dimension, value, pv, uv FROM visit_statistics_breakdown",
    ] {
        let rows = db
            .query_all_raw(Statement::from_string(db.get_database_backend(), sql))
            .await
            .unwrap();
        for row in rows {
            let day: NaiveDate = row.try_get_by_index(0).unwrap();
            let link: i64 = row.try_get_by_index(1).unwrap();
            let rest: Vec<String> = if sql.contains("dimension") {
                vec![
                    row.try_get_by_index::<String>(2).unwrap(),
                    row.try_get_by_index::<String>(3).unwrap(),
                    row.try_get_by_index::<i64>(4).unwrap().to_string(),
                    row.try_get_by_index::<i64>(5).unwrap().to_string(),
                ]
            } else {
                (2..7)
                    .map(|i| row.try_get_by_index::<i64>(i).unwrap().to_string())
                    .collect()
            };
            out.push(format!("{day} {link} {}", rest.join(" ")));
        }
    }
    out.sort();
    out
}

#[actix_web::test]
async fn a_batch_written_twice_is_counted_once() {
    use inklink::analytics::tally;
    let db = TestDb::create().await;
    let core = inklink::startup::open(settings(&db, "127.0.0.1:0", &[]))
        .await
        .unwrap();
    let link = create_link_in(&core, "https://example.com/twice")
        .await
        .link
        .id;
    let day = NaiveDate::from_ymd_opt(2026, 5, 1).unwrap();
    let batch = rows(1234, day.and_hms_opt(10, 0, 0).unwrap(), link);
    let utc = chrono_tz::UTC;
    // Counted between writes, as the server's schedule would, while batches are retried.
    insert_rows(&core.db, batch[..600].into()).await.unwrap();
    assert_eq!(tally::drain(&core.db, utc).await.unwrap(), 600);
    insert_rows(&core.db, batch.as_slice().into())
        .await
        .unwrap();
    insert_rows(&core.db, batch.as_slice().into())
        .await
        .unwrap();
    assert_eq!(tally::drain(&core.db, utc).await.unwrap(), 634);
    insert_rows(&core.db, batch[1200..].into()).await.unwrap();
    assert_eq!(
        tally::drain(&core.db, utc).await.unwrap(),
        0,
        "nothing new to count"
    );

    let success = batch.iter().filter(|r| &*r.transform_status == "success");
    let views = success.clone().filter(|r| !r.is_bot).count();
    let effective = success.count();
    let counted = statistics(&core.db).await;
    let row = format!(
        "{day} {link} {views} {} {} {effective} {}",
        // Visitors and addresses among the views: distinct, counted by the test itself.
        batch
            .iter()
            .filter(|r| &*r.transform_status == "success" && !r.is_bot)
            .map(|r| r.unique_identity.clone())
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        batch
            .iter()
            .filter(|r| &*r.transform_status == "success" && !r.is_bot)
            .map(|r| r.client_ip.clone())
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        1234 - effective
    );
    assert!(counted.contains(&row), "{row} not in {counted:#?}");
    tally::rebuild(&core.db, utc, day, day).await.unwrap();
    assert_eq!(
        statistics(&core.db).await,
        counted,
        "a recount gives the same rows"
    );
}
