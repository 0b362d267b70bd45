//! A link's day's day sets (who visited, by value) packed in its row of values while they are
//! small, a set that grows large written as a row of its own, and the packs going down to rows
//! of their own and back up with the migration that brought them.

use crate::event_insert::{
    assert_day_counted, assert_recount_gives_the_same_rows, core_with_link, rows, statistics,
};
use crate::support::{TestDb, create_link_in};
use chrono::NaiveDate;
use inklink::clickstore::insert::insert_rows;
use inklink::clickstore::row::{Digest, EventRow};
use inklink::stats::report::{self, Scope};
use inklink::stats::tally;
use sea_orm::{ConnectionTrait, DatabaseConnection};

/// A count over the day sets' tables.
async fn count(db: &DatabaseConnection, sql: &str) -> i64 {
    let backend = db.get_database_backend();
    let row = (db.query_one_raw(inklink::db::sql::statement(backend, sql, vec![])))
        .await
        .unwrap()
        .unwrap();
    row.try_get_by_index::<i64>(0).unwrap()
}

/// The links' sets that are rows of their own (the all-links sets are always).
const OWN_ROWS: &str = "SELECT COUNT(*) FROM visit_day_bits WHERE url_map_id <> -1";

/// Asserts that each of `links`' range of days from `from` to `to` has as many visitors and
/// addresses as the clicks `all` give it, as the test counts them.
async fn assert_range_counted(
    core: &inklink::Inklink,
    all: &[EventRow],
    links: &[i64],
    (from, to): (NaiveDate, NaiveDate),
) {
    for &link in links {
        let views = (all.iter()).filter(|row| {
            row.url_map_id == Some(link) && row.outcome.status() == "success" && !row.agent.is_bot
        });
        let distinct = |field: fn(&EventRow) -> String| {
            (views.clone().map(field))
                .collect::<std::collections::BTreeSet<_>>()
                .len() as i64
        };
        let visitors = distinct(|r| r.unique_identity.to_string());
        let addresses = distinct(|r| r.client_ip.to_string());
        let range = report::range_totals(&core.db, &core.kept, Scope::Link(link), from, to)
            .await
            .unwrap();
        assert_eq!((range.uv, range.ip), (visitors, addresses), "link {link}");
    }
}

/// Page views `from..to` of the rows of `day` from `hour` on, keyed by `batch`, their visitors taking turns
/// between `links`: each link's set is every other number, a set that does not shrink to a
/// few runs, so that it grows with every turn.
fn clicks(
    (day, hour): (NaiveDate, u32),
    links: [i64; 2],
    batch: usize,
    (from, to): (usize, usize),
) -> Vec<EventRow> {
    rows(to, day.and_hms_opt(hour, 0, 0).unwrap(), links[0])
        .into_iter()
        .enumerate()
        .skip(from)
        .map(|(i, mut row)| {
            row.event_key = Digest::parse(&format!("{:02x}{i:030x}", 0x40 + batch));
            row.url_map_id = Some(links[i % 2]);
            // Every click a page view (each row has its own address and visitor).
            row.outcome = inklink::rules::Outcome::Redirected;
            row.agent.is_bot = false;
            row
        })
        .collect()
}

#[actix_web::test]
async fn a_links_small_day_sets_share_one_row_until_one_grows_into_a_row_of_its_own() {
    let db = TestDb::create().await;
    let (core, one) = core_with_link(&db, "https://example.com/packed-1").await;
    let two = (create_link_in(&core, "https://example.com/packed-2").await)
        .link
        .id;
    let links = [one, two];
    let utc = chrono_tz::UTC;
    let first = NaiveDate::from_ymd_opt(2026, 5, 9).unwrap();
    let second = first.succ_opt().unwrap();
    let mut all = clicks((first, 9), links, 0, (0, 30));
    insert_rows(&core.db, &all).await.unwrap();
    assert_eq!(tally::tally(&core.db, utc, 50_000).await.unwrap(), 30);
    // Each link's day: one pack, no set a row of its own.
    let packs = "SELECT COUNT(*) FROM visit_day_values WHERE sets IS NOT NULL AND apart = 0";
    assert_eq!(count(&core.db, packs).await, 2);
    assert_eq!(count(&core.db, OWN_ROWS).await, 0);
    assert_range_counted(&core, &all, &links, (first, first)).await;

    // Turns of 30 new visitors, and a few who came two turns before, at the same hour: the
    // hour changes every turn, so that a turn touches some of its links' days' sets and not
    // the others, which its link's day's pack keeps. Turns that read the sets and turns that
    // take those the turn before left alternate; the last turns on the next day.
    let mut counter = tally::Counter::default();
    for batch in 1..=40 {
        let day = if batch <= 36 { first } else { second };
        let hour = 9 + (batch % 2) as u32;
        let new = 30 * batch;
        let mut rows = clicks((day, hour), links, batch, (new, new + 30));
        let again = 30 * batch.saturating_sub(2);
        rows.extend(clicks((day, hour), links, batch + 100, (again, again + 4)));
        insert_rows(&core.db, &rows).await.unwrap();
        all.extend(rows);
        match batch % 3 {
            0 => tally::tally(&core.db, utc, 50_000).await.unwrap(),
            _ => counter.turn(&core.db, utc, 50_000).await.unwrap().clicks,
        };
    }
    // The first day's sets of visitors and addresses (hundreds a link, every other number)
    // grew into rows of their own, the links' packs marked so; the second day's are packed.
    let apart = "SELECT COUNT(*) FROM visit_day_values WHERE apart = 1";
    assert_eq!(count(&core.db, apart).await, 2);
    assert!(count(&core.db, OWN_ROWS).await >= 4);
    for link in links {
        for day in [first, second] {
            let on_day: Vec<EventRow> = (all.iter())
                .filter(|row| row.url_map_id == Some(link) && row.record_time.date() == day)
                .cloned()
                .collect();
            assert_day_counted(&core.db, day, link, &on_day).await;
        }
    }
    assert_range_counted(&core, &all, &links, (first, second)).await;
    let counted = statistics(&core.db).await;
    assert_recount_gives_the_same_rows(&core.db, first, &counted).await;
    assert_recount_gives_the_same_rows(&core.db, second, &counted).await;
    assert_range_counted(&core, &all, &links, (first, second)).await;
}

#[actix_web::test]
async fn packed_day_sets_go_down_as_rows_of_their_own_and_count_on_after_coming_back_up() {
    use migration::{Migrator, MigratorTrait};
    let db = TestDb::create().await;
    let (core, one) = core_with_link(&db, "https://example.com/packed-3").await;
    let two = (create_link_in(&core, "https://example.com/packed-4").await)
        .link
        .id;
    let links = [one, two];
    let utc = chrono_tz::UTC;
    let day = NaiveDate::from_ymd_opt(2026, 5, 11).unwrap();
    let batch = clicks((day, 9), links, 0, (0, 600));
    insert_rows(&core.db, &batch[..60]).await.unwrap();
    assert_eq!(tally::drain(&core.db, utc).await.unwrap(), 60);
    assert_eq!(count(&core.db, OWN_ROWS).await, 0);
    let counted = statistics(&core.db).await;
    assert_range_counted(&core, &batch[..60], &links, (day, day)).await;
    let steps = Migrator::migrations()
        .iter()
        .rev()
        .position(|m| m.name().contains("day_sets_packed"))
        .unwrap() as u32
        + 1;

    // Down: each packed set a row of its own, as the version before keeps them.
    Migrator::down(&core.db, Some(steps)).await.unwrap();
    let own = count(&core.db, OWN_ROWS).await;
    assert!(own >= 4, "{own} sets of the links' days");
    assert_eq!(statistics(&core.db).await, counted);
    // Up: the sets stay rows of their own, each link's day marked as having some.
    Migrator::up(&core.db, None).await.unwrap();
    assert_eq!(count(&core.db, OWN_ROWS).await, own);
    let apart = "SELECT COUNT(*) FROM visit_day_values WHERE apart = 1";
    assert_eq!(count(&core.db, apart).await, 2);
    assert_range_counted(&core, &batch[..60], &links, (day, day)).await;

    // Counting goes on over them, in turns that read the sets and turns that do not.
    let mut counter = tally::Counter::default();
    for part in batch[60..].chunks(90) {
        insert_rows(&core.db, part).await.unwrap();
        counter.turn(&core.db, utc, 50_000).await.unwrap();
    }
    for link in links {
        let of_link: Vec<EventRow> = (batch.iter())
            .filter(|row| row.url_map_id == Some(link))
            .cloned()
            .collect();
        assert_day_counted(&core.db, day, link, &of_link).await;
    }
    assert_range_counted(&core, &batch, &links, (day, day)).await;
    let counted = statistics(&core.db).await;
    assert_recount_gives_the_same_rows(&core.db, day, &counted).await;
    assert_range_counted(&core, &batch, &links, (day, day)).await;
}
