//! Daily statistics: what they hold and where they are kept (`tally` counts each stored click
//! into them once, and recounts days from their events for `stats rebuild`).
//!
//! Days before the last purge of raw events (`retention`) are final: they are not recounted.
//!
//! Definitions: a page view (PV) is a successful redirect of a visitor that is not a bot; UV
//! counts distinct visitor identities and IP distinct client addresses among page views;
//! effective counts every successful redirect (bots included), ineffective every failure.

pub use super::days::{day_range, day_start, local_day, today};
use chrono::NaiveDate;
use chrono_tz::Tz;
use sea_orm::sea_query::Value;
use sea_orm::{ConnectionTrait, DatabaseConnection, DbBackend, DbErr, Statement};

/// `url_map_id` of the rows that count every link together (and unknown codes).
pub const ALL_LINKS: i64 = -1;
/// `url_map_id` of the visits to codes that match no link.
pub const UNKNOWN_LINK: i64 = 0;

/// Breakdown dimensions, as stored in `visit_statistics_breakdown.dimension`, in the order
/// dashboards show them; `hour` is drawn as its own chart.
pub const DIMENSIONS: [&str; 11] = [
    "country",
    "province",
    "city",
    "browser",
    "os",
    "device",
    "referrer",
    "utm_source",
    "utm_medium",
    "utm_campaign",
    "channel",
];

/// The breakdown of page views by hour of the day (`00` to `23`), kept beside [`DIMENSIONS`]
/// and drawn as its own chart.
pub const HOUR: &str = "hour";

/// A SUM comes back as DECIMAL from MySQL; cast it to a 64-bit integer everywhere.
pub fn sum(backend: DbBackend, column: &str) -> String {
    let int = if backend == DbBackend::MySql {
        "SIGNED"
    } else {
        "BIGINT"
    };
    format!("CAST(SUM({column}) AS {int})")
}

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

/// Deletes the rows of `table` whose `column` (a key the table is ordered by, or indexed on)
/// is below `below`, `batch` rows a statement, so that neither the click writer nor
/// the dashboards wait behind one huge delete; returns how many.
pub async fn delete_in_batches(
    db: &impl ConnectionTrait,
    table: &str,
    column: &str,
    below: i64,
    batch: i64,
) -> Result<u64, DbErr> {
    let backend = db.get_database_backend();
    // The last key of the next batch: DELETE … LIMIT is not portable, and MySQL refuses a
    // LIMIT inside `IN (…)`.
    let last = format!(
        "SELECT MAX({column}) FROM (SELECT {column} FROM {table} WHERE {column} < ? \
         ORDER BY {column} LIMIT {batch}) batch"
    );
    let delete = format!("DELETE FROM {table} WHERE {column} <= ? AND {column} < ?");
    let mut deleted = 0;
    loop {
        let row = db
            .query_one_raw(statement(backend, &last, vec![below.into()]))
            .await?;
        // MAX of a PostgreSQL INTEGER column (the dictionaries' `seen`) is an int4.
        let last = row.map(|row| {
            row.try_get_by_index::<Option<i64>>(0).or_else(|_| {
                row.try_get_by_index::<Option<i32>>(0)
                    .map(|last| last.map(i64::from))
            })
        });
        let Some(last) = last.transpose()?.flatten() else {
            return Ok(deleted);
        };
        deleted += db
            .execute_raw(statement(backend, &delete, vec![last.into(), below.into()]))
            .await?
            .rows_affected();
    }
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

/// The first and last day that have events, in `tz`.
pub async fn event_span(
    db: &DatabaseConnection,
    tz: Tz,
) -> Result<Option<(NaiveDate, NaiveDate)>, DbErr> {
    let backend = db.get_database_backend();
    let sql = "SELECT MIN(at), MAX(at) FROM click";
    let Some(row) = db.query_one_raw(statement(backend, sql, vec![])).await? else {
        return Ok(None);
    };
    let first: Option<i64> = row.try_get_by_index(0)?;
    let last: Option<i64> = row.try_get_by_index(1)?;
    let day = |at| local_day(super::insert::from_micros(at), tz);
    Ok(first.zip(last).map(|(f, l)| (day(f), day(l))))
}
