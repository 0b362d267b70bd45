//! How a batch of enriched events reaches the database, as cheaply as each backend allows. At
//! benchmark load this runs tens of thousands of times a second beside the redirects on the
//! same cores, so what matters is the work per row, on both sides of the connection:
//!
//! - SQLite: a single-row `INSERT` stepped once per row through the connection's own handle,
//!   with every value bound in place (see [`sqlite`]).
//! - MySQL: multi-row `INSERT … VALUES` statements whose text is built once per size and
//!   prepared once per connection. Rows bind their shared `Arc<str>` texts, which sqlx
//!   passes on without copying (a `String` or `&str` would be copied per value).
//! - PostgreSQL: `COPY … FROM STDIN`, PostgreSQL's bulk path, which costs the server about a
//!   quarter less CPU per row than the `INSERT … SELECT FROM UNNEST(…)` it replaced. `COPY`
//!   cannot skip a row that is already stored, so a batch that meets a stored event key (rare:
//!   only a retry does) is written again through that `INSERT … ON CONFLICT DO NOTHING`.
//!
//! A row whose event key is already stored is skipped, so a batch written twice (a retry
//! after a commit whose answer was lost, a spool replayed after a crash) is stored once.
//!
//! What an event stores is defined once, in [`COLUMNS`] (name, type, value); each backend's
//! module (`sqlite`, `mysql`, `postgres`) writes those columns its own way.

use super::event::{EventRow, Text};
use chrono::{Datelike, NaiveDateTime, Timelike};
use sea_orm::sqlx;
use sea_orm::{DatabaseConnection, DbBackend, DbErr, RuntimeErr};
use std::sync::Arc;

mod mysql;
mod postgres;
mod sqlite;

/// Rows per batch: 1,000 rows of 23 values stays under every backend's parameter limit
/// (SQLite's 32,766 is the lowest).
pub const BATCH: usize = 1000;

/// One value of a stored event, borrowed from its row, as the backends bind it.
pub enum Field<'r> {
    Text(Option<&'r Text>),
    Int(Option<i64>),
    Bool(bool),
    Time(NaiveDateTime),
}

/// A stored column of `transform_event_record`: its name, its PostgreSQL type (for the arrays
/// of `UNNEST`) and its value in a row.
pub struct Column {
    pub name: &'static str,
    pub pg_type: &'static str,
    pub value: for<'r> fn(&'r EventRow) -> Field<'r>,
}

const fn column(
    name: &'static str,
    pg_type: &'static str,
    value: for<'r> fn(&'r EventRow) -> Field<'r>,
) -> Column {
    Column {
        name,
        pg_type,
        value,
    }
}

/// The one definition of what an event stores, in the order every backend writes it.
pub const COLUMNS: [Column; 23] = [
    column("event_key", "varchar", |r| Field::Text(Some(&r.event_key))),
    column("record_time", "timestamp", |r| Field::Time(r.record_time)),
    column("compression_code", "varchar", |r| {
        Field::Text(Some(&r.compression_code))
    }),
    column("url_map_id", "int8", |r| Field::Int(r.url_map_id)),
    column("host", "varchar", |r| Field::Text(r.host.as_ref())),
    column("client_ip", "varchar", |r| Field::Text(Some(&r.client_ip))),
    column("unique_identity", "varchar", |r| {
        Field::Text(Some(&r.unique_identity))
    }),
    column("user_agent", "text", |r| Field::Text(r.user_agent.as_ref())),
    column("referer", "text", |r| Field::Text(r.referer.as_ref())),
    column("referer_host", "varchar", |r| {
        Field::Text(r.referer_host.as_ref())
    }),
    column("query_string", "text", |r| {
        Field::Text(r.query_string.as_ref())
    }),
    column("country", "varchar", |r| Field::Text(r.country.as_ref())),
    column("province", "varchar", |r| Field::Text(r.province.as_ref())),
    column("city", "varchar", |r| Field::Text(r.city.as_ref())),
    column("browser", "varchar", |r| Field::Text(r.browser.as_ref())),
    column("browser_version", "varchar", |r| {
        Field::Text(r.browser_version.as_ref())
    }),
    column("os", "varchar", |r| Field::Text(r.os.as_ref())),
    column("os_version", "varchar", |r| {
        Field::Text(r.os_version.as_ref())
    }),
    column("device", "varchar", |r| Field::Text(r.device.as_ref())),
    column("is_bot", "bool", |r| Field::Bool(r.is_bot)),
    column("transform_status", "varchar", |r| {
        Field::Text(Some(&r.transform_status))
    }),
    column("failure_reason", "varchar", |r| {
        Field::Text(r.failure_reason.as_ref())
    }),
    column("target_rule", "varchar", |r| {
        Field::Text(r.target_rule.as_ref())
    }),
];

/// The column names, comma-separated, for the statements.
fn column_list() -> String {
    COLUMNS.map(|c| c.name).join(", ")
}

/// Inserts `rows` in one transaction; rows whose event key is already stored are skipped.
pub async fn insert_rows(db: &DatabaseConnection, rows: Arc<[EventRow]>) -> Result<(), DbErr> {
    if rows.is_empty() {
        return Ok(());
    }
    let inserted = match db.get_database_backend() {
        DbBackend::Sqlite => return sqlite::insert(db.get_sqlite_connection_pool(), rows).await,
        DbBackend::MySql => mysql::insert(db.get_mysql_connection_pool(), &rows).await,
        DbBackend::Postgres => postgres::copy(db.get_postgres_connection_pool(), &rows).await,
        other => return Err(DbErr::Custom(format!("no event writer for {other:?}"))),
    };
    inserted.map_err(from_sqlx)
}

fn from_sqlx(err: sqlx::Error) -> DbErr {
    DbErr::Exec(RuntimeErr::SqlxError(Arc::new(err)))
}

/// A time as SQLite stores it: exactly the text sqlx writes for a `NaiveDateTime`
/// (`%F %T%.f`: the fraction has 0, 3, 6 or 9 digits, as few as hold it), so that events
/// and the ranges they are queried with compare alike. Made without the formatting
/// machinery, which cost more than the insert itself.
pub fn sqlite_time(at: NaiveDateTime) -> Text {
    match time_digits(at) {
        Some((digits, len)) => Text::from(
            std::str::from_utf8(&digits[..len]).expect("digits and separators are ASCII"),
        ),
        None => Text::from(at.format(TIME_FORMAT).to_string()),
    }
}

const TIME_FORMAT: &str = "%F %T%.f";

/// `at` in [`TIME_FORMAT`], and its length; `None` beyond four-digit years and for leap
/// seconds, rare enough for the general formatter.
fn time_digits(at: NaiveDateTime) -> Option<([u8; 29], usize)> {
    let (year, nanos) = (at.year(), at.nanosecond());
    if !(0..=9999).contains(&year) || nanos >= 1_000_000_000 {
        return None;
    }
    let mut out = [0u8; 29];
    let mut put = |at: usize, value: u32, digits: usize| {
        let mut value = value;
        for i in (at..at + digits).rev() {
            out[i] = b'0' + (value % 10) as u8;
            value /= 10;
        }
    };
    put(0, year as u32, 4);
    put(5, at.month(), 2);
    put(8, at.day(), 2);
    put(11, at.hour(), 2);
    put(14, at.minute(), 2);
    put(17, at.second(), 2);
    let len = match nanos {
        0 => 19,
        n if n % 1_000_000 == 0 => {
            put(20, n / 1_000_000, 3);
            23
        }
        n if n % 1_000 == 0 => {
            put(20, n / 1_000, 6);
            26
        }
        n => {
            put(20, n, 9);
            29
        }
    };
    out[4] = b'-';
    out[7] = b'-';
    out[10] = b' ';
    out[13] = b':';
    out[16] = b':';
    out[19] = b'.';
    Some((out, len))
}
