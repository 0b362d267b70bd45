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

use super::event::{EventRow, Text};
use chrono::{Datelike, NaiveDateTime, Timelike};
use sea_orm::sqlx::{self, MySqlPool, PgPool};
use sea_orm::{DatabaseConnection, DbBackend, DbErr, RuntimeErr};
use sqlx::mysql::MySqlArguments;
use std::io::Write;
use std::sync::{Arc, LazyLock};

mod sqlite;

/// Rows per batch: 1,000 rows of 23 values stays under every backend's parameter limit
/// (SQLite's 32,766 is the lowest).
pub const BATCH: usize = 1000;

const COLUMNS: [&str; 23] = [
    "event_key",
    "record_time",
    "compression_code",
    "url_map_id",
    "host",
    "client_ip",
    "unique_identity",
    "user_agent",
    "referer",
    "referer_host",
    "query_string",
    "country",
    "province",
    "city",
    "browser",
    "browser_version",
    "os",
    "os_version",
    "device",
    "is_bot",
    "transform_status",
    "failure_reason",
    "target_rule",
];

/// Statement sizes for the `VALUES` backends: a batch is split into statements of these many
/// rows, so that each connection prepares at most four distinct statements and reuses them.
const STATEMENT_ROWS: [usize; 4] = [BATCH, 100, 10, 1];

/// Inserts `rows` in one transaction; rows whose event key is already stored are skipped.
pub async fn insert_rows(db: &DatabaseConnection, rows: Arc<[EventRow]>) -> Result<(), DbErr> {
    if rows.is_empty() {
        return Ok(());
    }
    let inserted = match db.get_database_backend() {
        DbBackend::Sqlite => return sqlite::insert(db.get_sqlite_connection_pool(), rows).await,
        DbBackend::MySql => insert_mysql(db.get_mysql_connection_pool(), &rows).await,
        DbBackend::Postgres => copy_postgres(db.get_postgres_connection_pool(), &rows).await,
        other => return Err(DbErr::Custom(format!("no event writer for {other:?}"))),
    };
    inserted.map_err(from_sqlx)
}

fn from_sqlx(err: sqlx::Error) -> DbErr {
    DbErr::Exec(RuntimeErr::SqlxError(Arc::new(err)))
}

/// `INSERT … VALUES (?, …), …` for `rows` rows, with the backend's way of skipping a row whose
/// event key is stored.
fn values_sql(rows: usize, on_conflict: &str) -> String {
    let row = format!("({})", vec!["?"; COLUMNS.len()].join(", "));
    format!(
        "INSERT INTO transform_event_record ({}) VALUES {} {on_conflict}",
        COLUMNS.join(", "),
        vec![row.as_str(); rows].join(", "),
    )
}

/// The statement for each of [`STATEMENT_ROWS`], made once per process.
fn statements(on_conflict: &'static str) -> [String; STATEMENT_ROWS.len()] {
    STATEMENT_ROWS.map(|rows| values_sql(rows, on_conflict))
}

// MySQL has no DO NOTHING; a no-op update of the key is its spelling.
static MYSQL_SQL: LazyLock<[String; 4]> =
    LazyLock::new(|| statements("ON DUPLICATE KEY UPDATE event_key = event_key"));

/// Splits `rows` into runs of [`STATEMENT_ROWS`] sizes, each with its statement.
fn chunks<'r>(
    sql: &'static [String; 4],
    mut rows: &'r [EventRow],
) -> impl Iterator<Item = (&'static str, &'r [EventRow])> {
    std::iter::from_fn(move || {
        let (slot, size) = STATEMENT_ROWS
            .iter()
            .enumerate()
            .find(|(_, size)| **size <= rows.len())?;
        let (now, later) = rows.split_at(*size);
        rows = later;
        Some((sql[slot].as_str(), now))
    })
}

type MySqlQuery<'q> = sqlx::query::Query<'q, sqlx::MySql, MySqlArguments>;

/// Binds one row's values in [`COLUMNS`] order.
fn bind_row<'q>(query: MySqlQuery<'q>, row: &EventRow) -> MySqlQuery<'q> {
    query
        .bind(row.event_key.clone())
        .bind(row.record_time)
        .bind(row.compression_code.clone())
        .bind(row.url_map_id)
        .bind(row.host.clone())
        .bind(row.client_ip.clone())
        .bind(row.unique_identity.clone())
        .bind(row.user_agent.clone())
        .bind(row.referer.clone())
        .bind(row.referer_host.clone())
        .bind(row.query_string.clone())
        .bind(row.country.clone())
        .bind(row.province.clone())
        .bind(row.city.clone())
        .bind(row.browser.clone())
        .bind(row.browser_version.clone())
        .bind(row.os.clone())
        .bind(row.os_version.clone())
        .bind(row.device.clone())
        .bind(row.is_bot)
        .bind(row.transform_status.clone())
        .bind(row.failure_reason.clone())
        .bind(row.target_rule.clone())
}

async fn insert_mysql(pool: &MySqlPool, rows: &[EventRow]) -> Result<(), sqlx::Error> {
    let mut txn = pool.begin().await?;
    for (sql, chunk) in chunks(&MYSQL_SQL, rows) {
        let mut query = sqlx::query(sql);
        for row in chunk {
            query = bind_row(query, row);
        }
        query.execute(&mut *txn).await?;
    }
    txn.commit().await
}

static POSTGRES_SQL: LazyLock<String> = LazyLock::new(|| {
    let types = [
        "varchar",
        "timestamp",
        "varchar",
        "int8",
        "varchar",
        "varchar",
        "varchar",
        "text",
        "text",
        "varchar",
        "text",
        "varchar",
        "varchar",
        "varchar",
        "varchar",
        "varchar",
        "varchar",
        "varchar",
        "varchar",
        "bool",
        "varchar",
        "varchar",
        "varchar",
    ];
    let arrays: Vec<String> = types
        .iter()
        .enumerate()
        .map(|(i, ty)| format!("${}::{ty}[]", i + 1))
        .collect();
    format!(
        "INSERT INTO transform_event_record ({}) SELECT * FROM UNNEST({}) \
         ON CONFLICT (event_key) DO NOTHING",
        COLUMNS.join(", "),
        arrays.join(", ")
    )
});

async fn insert_postgres(pool: &PgPool, rows: &[EventRow]) -> Result<(), sqlx::Error> {
    let text = |field: fn(&EventRow) -> &Text| -> Vec<&str> {
        rows.iter().map(|row| &**field(row)).collect()
    };
    let optional = |field: fn(&EventRow) -> &Option<Text>| -> Vec<Option<&str>> {
        rows.iter().map(|row| field(row).as_deref()).collect()
    };
    sqlx::query(POSTGRES_SQL.as_str())
        .bind(text(|r| &r.event_key))
        .bind(rows.iter().map(|r| r.record_time).collect::<Vec<_>>())
        .bind(text(|r| &r.compression_code))
        .bind(rows.iter().map(|r| r.url_map_id).collect::<Vec<_>>())
        .bind(optional(|r| &r.host))
        .bind(text(|r| &r.client_ip))
        .bind(text(|r| &r.unique_identity))
        .bind(optional(|r| &r.user_agent))
        .bind(optional(|r| &r.referer))
        .bind(optional(|r| &r.referer_host))
        .bind(optional(|r| &r.query_string))
        .bind(optional(|r| &r.country))
        .bind(optional(|r| &r.province))
        .bind(optional(|r| &r.city))
        .bind(optional(|r| &r.browser))
        .bind(optional(|r| &r.browser_version))
        .bind(optional(|r| &r.os))
        .bind(optional(|r| &r.os_version))
        .bind(optional(|r| &r.device))
        .bind(rows.iter().map(|r| r.is_bot).collect::<Vec<_>>())
        .bind(text(|r| &r.transform_status))
        .bind(optional(|r| &r.failure_reason))
        .bind(optional(|r| &r.target_rule))
        // One statement is atomic on its own: no transaction needed around it.
        .execute(pool)
        .await
        .map(drop)
}

static POSTGRES_COPY_SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "COPY transform_event_record ({}) FROM STDIN",
        COLUMNS.join(", ")
    )
});

/// `COPY` in one go (it is atomic on its own); when the batch holds a stored event key the
/// whole copy fails, and the rows go again through the statement that skips stored keys.
async fn copy_postgres(pool: &PgPool, rows: &[EventRow]) -> Result<(), sqlx::Error> {
    use sqlx::postgres::PgPoolCopyExt;
    let mut copy = pool.copy_in_raw(POSTGRES_COPY_SQL.as_str()).await?;
    copy.send(copy_text(rows)).await?;
    match copy.finish().await {
        Ok(_) => Ok(()),
        Err(err)
            if err
                .as_database_error()
                .is_some_and(|err| err.is_unique_violation()) =>
        {
            insert_postgres(pool, rows).await
        }
        Err(err) => Err(err),
    }
}

/// `rows` in `COPY`'s text format: one line per row, columns in [`COLUMNS`] order separated
/// by tabs, `\N` for NULL, and backslash escapes for the characters the format reserves.
fn copy_text(rows: &[EventRow]) -> Vec<u8> {
    let mut out = CopyText {
        out: Vec::with_capacity(rows.len() * 400),
        line_started: false,
    };
    for row in rows {
        out.text(&row.event_key);
        out.time(row.record_time);
        out.text(&row.compression_code);
        match row.url_map_id {
            Some(id) => out.number(id),
            None => out.null(),
        }
        out.optional(&row.host);
        out.text(&row.client_ip);
        out.text(&row.unique_identity);
        for text in [
            &row.user_agent,
            &row.referer,
            &row.referer_host,
            &row.query_string,
            &row.country,
            &row.province,
            &row.city,
            &row.browser,
            &row.browser_version,
            &row.os,
            &row.os_version,
            &row.device,
        ] {
            out.optional(text);
        }
        out.field(if row.is_bot { b"t" } else { b"f" });
        out.text(&row.transform_status);
        out.optional(&row.failure_reason);
        out.optional(&row.target_rule);
        out.end_row();
    }
    out.out
}

struct CopyText {
    out: Vec<u8>,
    line_started: bool,
}

impl CopyText {
    /// Starts a field: a tab unless it is the first of its line.
    fn next(&mut self) {
        if self.line_started {
            self.out.push(b'\t');
        }
        self.line_started = true;
    }

    fn field(&mut self, raw: &[u8]) {
        self.next();
        self.out.extend_from_slice(raw);
    }

    fn number(&mut self, number: i64) {
        self.next();
        write!(self.out, "{number}").expect("a Vec takes every write");
    }

    /// Truncated to microseconds, as sqlx binds a time (PostgreSQL would round the rest).
    fn time(&mut self, at: NaiveDateTime) {
        self.next();
        let at = at
            .with_nanosecond(at.nanosecond() / 1000 * 1000)
            .unwrap_or(at);
        match time_digits(at) {
            Some((digits, len)) => self.out.extend_from_slice(&digits[..len]),
            None => {
                write!(self.out, "{}", at.format(TIME_FORMAT)).expect("a Vec takes every write")
            }
        }
    }

    fn null(&mut self) {
        self.field(br"\N");
    }

    fn text(&mut self, text: &str) {
        self.next();
        for &byte in text.as_bytes() {
            match byte {
                b'\\' => self.out.extend_from_slice(br"\\"),
                b'\t' => self.out.extend_from_slice(br"\t"),
                b'\n' => self.out.extend_from_slice(br"\n"),
                b'\r' => self.out.extend_from_slice(br"\r"),
                _ => self.out.push(byte),
            }
        }
    }

    fn optional(&mut self, text: &Option<Text>) {
        match text {
            Some(text) => self.text(text),
            None => self.null(),
        }
    }

    fn end_row(&mut self) {
        self.out.push(b'\n');
        self.line_started = false;
    }
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
