//! Daily statistics from raw events. A day (in the stats time zone) is recomputed as a whole
//! inside one transaction: delete its rows, count its events, insert the counts. Recomputing
//! is therefore idempotent, and late events only need their day recomputed again.
//!
//! Days before the last purge of raw events (`retention`) are final: they are not recounted.
//!
//! Definitions: a page view (PV) is a successful redirect of a visitor that is not a bot; UV
//! counts distinct visitor identities and IP distinct client addresses among page views;
//! effective counts every successful redirect (bots included), ineffective every failure.

pub use super::days::{DirtyDays, day_range, day_start, local_day, today};
use super::visits::Visits;
use chrono::{Days, NaiveDate, NaiveDateTime};
use chrono_tz::Tz;
use sea_orm::sea_query::{Query, Value};
use sea_orm::{ConnectionTrait, DatabaseConnection, DbBackend, DbErr, Statement, TransactionTrait};
use std::collections::BTreeSet;
use std::time::Duration;

/// `url_map_id` of the rows that count every link together (and unknown codes).
pub const ALL_LINKS: i64 = -1;
/// `url_map_id` of the visits to codes that match no link.
pub const UNKNOWN_LINK: i64 = 0;

/// Breakdown dimensions: the name stored in `visit_statistics_breakdown.dimension` and the
/// event column it groups by.
pub const DIMENSIONS: [(&str, &str); 7] = [
    ("country", "country"),
    ("province", "province"),
    ("city", "city"),
    ("browser", "browser"),
    ("os", "os"),
    ("device", "device"),
    ("referrer", "referer_host"),
];

/// The breakdown of page views by hour of the day (`00` to `23`), kept beside [`DIMENSIONS`]
/// and drawn as its own chart.
pub const HOUR: &str = "hour";

/// SQL written with `?` placeholders, numbered for PostgreSQL.
pub fn statement(backend: DbBackend, sql: &str, values: Vec<Value>) -> Statement {
    if backend != DbBackend::Postgres {
        return Statement::from_sql_and_values(backend, sql, values);
    }
    let mut numbered = String::with_capacity(sql.len() + 8);
    let mut n = 0;
    for ch in sql.chars() {
        if ch == '?' {
            n += 1;
            numbered.push_str(&format!("${n}"));
        } else {
            numbered.push(ch);
        }
    }
    Statement::from_sql_and_values(backend, numbered, values)
}

/// The sets of a day in `visit_day_set`: kind, and the event column whose distinct values
/// it holds.
pub const DAY_SETS: [(&str, &str); 2] = [("v", "unique_identity"), ("i", "client_ip")];

/// A visit that counts as a page view.
const VIEW: &str = "transform_status = 'success' AND is_bot = FALSE";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DayStats {
    pub url_map_id: i64,
    pub visits: Visits,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BreakdownRow {
    pub url_map_id: i64,
    pub dimension: &'static str,
    pub value: String,
    pub pv: i64,
    pub uv: i64,
}

/// Counts one day's events, per link and for all links together.
pub async fn count_day(
    db: &impl ConnectionTrait,
    start: NaiveDateTime,
    end: NaiveDateTime,
) -> Result<(Vec<DayStats>, Vec<BreakdownRow>), DbErr> {
    let backend = db.get_database_backend();
    let range = || vec![Value::from(start), Value::from(end)];
    let totals = format!(
        "COUNT(CASE WHEN {VIEW} THEN 1 END), \
         COUNT(DISTINCT CASE WHEN {VIEW} THEN unique_identity END), \
         COUNT(DISTINCT CASE WHEN {VIEW} THEN client_ip END), \
         COUNT(CASE WHEN transform_status = 'success' THEN 1 END), \
         COUNT(CASE WHEN transform_status <> 'success' THEN 1 END) \
         FROM transform_event_record WHERE record_time >= ? AND record_time < ?"
    );
    // The all-links queries select no id (a bare constant would come back as a 32-bit
    // integer from PostgreSQL): `Some(id)` is the id to use, `None` reads it from column 0.
    let id = |row: &sea_orm::QueryResult, fixed: Option<i64>| match fixed {
        Some(id) => Ok(id),
        None => row.try_get_by_index::<i64>(0),
    };
    let mut stats = Vec::new();
    for (fixed, sql) in [
        (Some(ALL_LINKS), format!("SELECT {totals}")),
        (
            None,
            format!(
                "SELECT COALESCE(url_map_id, {UNKNOWN_LINK}), {totals} \
                 GROUP BY COALESCE(url_map_id, {UNKNOWN_LINK})"
            ),
        ),
    ] {
        let at = usize::from(fixed.is_none());
        for row in db.query_all_raw(statement(backend, &sql, range())).await? {
            let stat = DayStats {
                url_map_id: id(&row, fixed)?,
                visits: Visits::read(&row, at)?,
            };
            if stat.visits.requests() > 0 {
                stats.push(stat);
            }
        }
    }
    let mut breakdown = Vec::new();
    for (dimension, column) in DIMENSIONS {
        let counts = format!(
            "COALESCE({column}, ''), COUNT(*), COUNT(DISTINCT unique_identity) \
             FROM transform_event_record \
             WHERE record_time >= ? AND record_time < ? AND {VIEW}"
        );
        for (fixed, sql) in [
            (
                Some(ALL_LINKS),
                format!("SELECT {counts} GROUP BY COALESCE({column}, '')"),
            ),
            (
                None,
                format!(
                    "SELECT COALESCE(url_map_id, {UNKNOWN_LINK}), {counts} \
                     GROUP BY COALESCE(url_map_id, {UNKNOWN_LINK}), COALESCE({column}, '')"
                ),
            ),
        ] {
            let at = usize::from(fixed.is_none());
            for row in db.query_all_raw(statement(backend, &sql, range())).await? {
                breakdown.push(BreakdownRow {
                    url_map_id: id(&row, fixed)?,
                    dimension,
                    value: row.try_get_by_index(at)?,
                    pv: row.try_get_by_index(at + 1)?,
                    uv: row.try_get_by_index(at + 2)?,
                });
            }
        }
    }
    // Hours of the day: page views and visitors by the hour since the day began (its local
    // hour; on a day the clocks change, hours after the change are counted from midnight).
    let hour = match backend {
        DbBackend::Sqlite => {
            "printf('%02d', (CAST(strftime('%s', record_time) AS INTEGER) \
             - CAST(strftime('%s', ?) AS INTEGER)) / 3600)"
        }
        DbBackend::Postgres => {
            "LPAD(CAST(CAST(FLOOR(EXTRACT(EPOCH FROM (record_time - CAST(? AS TIMESTAMP))) / 3600) \
             AS INTEGER) AS TEXT), 2, '0')"
        }
        _ => "LPAD(CAST(TIMESTAMPDIFF(HOUR, ?, record_time) AS CHAR), 2, '0')",
    };
    let counts = format!(
        "{hour}, COUNT(*), COUNT(DISTINCT unique_identity) FROM transform_event_record \
         WHERE record_time >= ? AND record_time < ? AND {VIEW}"
    );
    for (fixed, sql) in [
        (Some(ALL_LINKS), format!("SELECT {counts} GROUP BY 1")),
        (
            None,
            format!("SELECT COALESCE(url_map_id, {UNKNOWN_LINK}), {counts} GROUP BY 1, 2"),
        ),
    ] {
        let at = usize::from(fixed.is_none());
        let values = vec![Value::from(start), Value::from(start), Value::from(end)];
        for row in db.query_all_raw(statement(backend, &sql, values)).await? {
            breakdown.push(BreakdownRow {
                url_map_id: id(&row, fixed)?,
                dimension: HOUR,
                value: row.try_get_by_index(at)?,
                pv: row.try_get_by_index(at + 1)?,
                uv: row.try_get_by_index(at + 2)?,
            });
        }
    }
    Ok((stats, breakdown))
}

/// The day before which raw events were purged (see `retention`), if any purge happened:
/// the statistics of earlier days are final.
pub async fn purged_before(db: &impl ConnectionTrait) -> Result<Option<NaiveDate>, DbErr> {
    let backend = db.get_database_backend();
    let sql = "SELECT purged_before FROM event_purge WHERE id = 1";
    match db.query_one_raw(statement(backend, sql, vec![])).await? {
        Some(row) => Ok(Some(row.try_get_by_index(0)?)),
        None => Ok(None),
    }
}

/// Recomputes `day` (in `tz`): afterwards its stored rows are exactly what its events give.
/// A day whose events were purged keeps its rows.
pub async fn recompute_day(db: &DatabaseConnection, tz: Tz, day: NaiveDate) -> Result<(), DbErr> {
    if purged_before(db).await?.is_some_and(|frozen| day < frozen) {
        return Ok(());
    }
    recount_day(db, tz, day).await
}

/// [`recompute_day`] for a day known to have its events (after the purge boundary).
async fn recount_day(db: &DatabaseConnection, tz: Tz, day: NaiveDate) -> Result<(), DbErr> {
    let Some((start, end)) = day_range(day, tz) else {
        return Ok(());
    };
    // Counted outside the writing transaction: on SQLite a transaction that reads first
    // cannot start writing once the click writer has committed meanwhile. Events that land
    // between counting and replacing are counted at the next refresh (or, for a past day,
    // when the writer marks it stale after writing them).
    let (stats, breakdown) = count_day(db, start, end).await?;
    // Two instances recomputing one day at once can deadlock on the unique index; the loser
    // is rolled back and simply does it again.
    let mut attempt = 0;
    loop {
        let txn = db.begin().await?;
        let result = replace_day(&txn, day, (start, end), &stats, &breakdown).await;
        match crate::db::finish(txn, result).await {
            Err(err) if crate::db::is_retryable(&err) && attempt < 3 => attempt += 1,
            done => return done,
        }
    }
}

async fn replace_day(
    txn: &impl ConnectionTrait,
    day: NaiveDate,
    (start, end): (NaiveDateTime, NaiveDateTime),
    stats: &[DayStats],
    breakdown: &[BreakdownRow],
) -> Result<(), DbErr> {
    let backend = txn.get_database_backend();
    for table in [
        "visit_statistics",
        "visit_statistics_breakdown",
        "visit_day_set",
    ] {
        let sql = format!("DELETE FROM {table} WHERE stat_date = ?");
        txn.execute_raw(statement(backend, &sql, vec![day.into()]))
            .await?;
    }
    // The day's distinct visitors and addresses, per link and for all links: what range UV
    // and IP are counted from.
    for (kind, column) in DAY_SETS {
        for scope in [
            format!("COALESCE(url_map_id, {UNKNOWN_LINK})"),
            ALL_LINKS.to_string(),
        ] {
            let sql = format!(
                "INSERT INTO visit_day_set (url_map_id, kind, stat_date, who) \
                 SELECT DISTINCT {scope}, '{kind}', ?, {column} FROM transform_event_record \
                 WHERE record_time >= ? AND record_time < ? AND {VIEW} AND {column} IS NOT NULL"
            );
            let values = vec![day.into(), start.into(), end.into()];
            txn.execute_raw(statement(backend, &sql, values)).await?;
        }
    }
    let now = crate::db::now();
    for chunk in stats.chunks(1000) {
        let mut insert = Query::insert();
        insert.into_table("visit_statistics").columns([
            "stat_date",
            "url_map_id",
            "pv",
            "uv",
            "ip_count",
            "effective",
            "ineffective",
            "updated_at",
        ]);
        for s in chunk {
            insert.values_panic([
                day.into(),
                s.url_map_id.into(),
                s.visits.pv.into(),
                s.visits.uv.into(),
                s.visits.ip.into(),
                s.visits.effective.into(),
                s.visits.ineffective.into(),
                now.into(),
            ]);
        }
        txn.execute(&insert).await?;
    }
    for chunk in breakdown.chunks(1000) {
        let mut insert = Query::insert();
        insert.into_table("visit_statistics_breakdown").columns([
            "stat_date",
            "url_map_id",
            "dimension",
            "value",
            "pv",
            "uv",
        ]);
        for b in chunk {
            insert.values_panic([
                day.into(),
                b.url_map_id.into(),
                b.dimension.into(),
                b.value.clone().into(),
                b.pv.into(),
                b.uv.into(),
            ]);
        }
        txn.execute(&insert).await?;
    }
    Ok(())
}

/// Recomputes every day from `from` to `to` inclusive, except days whose events were purged
/// (their statistics are final); returns how many.
pub async fn rebuild(
    db: &DatabaseConnection,
    tz: Tz,
    from: NaiveDate,
    to: NaiveDate,
) -> Result<u64, DbErr> {
    let mut days = 0;
    let mut day = purged_before(db)
        .await?
        .map_or(from, |frozen| frozen.max(from));
    while day <= to {
        // The purge boundary was read once above.
        recount_day(db, tz, day).await?;
        days += 1;
        day = match day.checked_add_days(Days::new(1)) {
            Some(next) => next,
            None => break,
        };
    }
    Ok(days)
}

/// The first and last day that have events, in `tz`.
pub async fn event_span(
    db: &DatabaseConnection,
    tz: Tz,
) -> Result<Option<(NaiveDate, NaiveDate)>, DbErr> {
    let backend = db.get_database_backend();
    let sql = "SELECT MIN(record_time), MAX(record_time) FROM transform_event_record";
    let Some(row) = db.query_one_raw(statement(backend, sql, vec![])).await? else {
        return Ok(None);
    };
    let first: Option<NaiveDateTime> = row.try_get_by_index(0)?;
    let last: Option<NaiveDateTime> = row.try_get_by_index(1)?;
    Ok(first
        .zip(last)
        .map(|(f, l)| (local_day(f, tz), local_day(l, tz))))
}

/// Clicks per second above which the click writer is busy. Recounting a day reads every one
/// of its events (at a million events, about a minute of one core and a few hundred MB): during
/// a burst that would take the cores the redirects and the writer need.
pub const BUSY_CLICKS_PER_SECOND: f64 = 1000.0;
/// While busy, today's refresh waits, but at most this many intervals.
pub const BUSY_DEFER_INTERVALS: u32 = 10;

/// Whether the next refresh waits another interval: clicks have been arriving at `rate` per
/// second, and the last refresh was `since` ago.
pub fn defer_refresh(rate: f64, since: Duration, every: Duration) -> bool {
    rate > BUSY_CLICKS_PER_SECOND && since < every * BUSY_DEFER_INTERVALS
}

/// Keeps the statistics current: the current day every `every` (less often during a burst of
/// clicks, see [`defer_refresh`]), a day once more after it ends, and any day the writer
/// reports late events for. `written` counts the clicks written so far.
pub async fn run_schedule(
    db: DatabaseConnection,
    tz: Tz,
    every: Duration,
    dirty: DirtyDays,
    written: impl Fn() -> u64,
) {
    let mut last_today: Option<NaiveDate> = None;
    loop {
        let started = std::time::Instant::now();
        let today = today(tz);
        let mut days: BTreeSet<NaiveDate> = std::mem::take(&mut *dirty.lock().expect("dirty days"));
        match last_today {
            // Yesterday may have ended while no instance was running.
            None => days.extend(today.pred_opt()),
            Some(previous) if previous != today => {
                days.insert(previous);
            }
            Some(_) => {}
        }
        days.insert(today);
        for day in days {
            if let Err(err) = recompute_day(&db, tz, day).await {
                tracing::warn!(%day, error = %err, "cannot update daily statistics; will retry");
                dirty.lock().expect("dirty days").insert(day);
            }
        }
        last_today = Some(today);
        // Recounting a day costs in proportion to its clicks; on a very busy day the refresh
        // is spaced out so that it never takes more than a twentieth of the time, and the
        // redirects and the click writer keep the rest.
        let took = started.elapsed();
        if took * 20 > every {
            tracing::debug!(
                ?took,
                "daily statistics are slow to count; refreshing less often"
            );
        }
        let mut since = took;
        let mut pause = every.max(took * 20);
        loop {
            let before = written();
            tokio::time::sleep(pause).await;
            since += pause;
            let rate = written().saturating_sub(before) as f64 / pause.as_secs_f64();
            if !defer_refresh(rate, since, every) {
                break;
            }
            tracing::debug!(rate, "clicks are arriving fast; today's statistics wait");
            pause = every;
        }
    }
}
