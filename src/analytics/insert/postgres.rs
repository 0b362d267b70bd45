//! Click events into PostgreSQL through `COPY … FROM STDIN`, PostgreSQL's bulk path, which
//! costs the server about a quarter less CPU per row than `INSERT … SELECT FROM UNNEST(…)`.
//! `COPY` cannot skip a row that is already stored, so a batch that meets a stored event key
//! (rare: only a retry does) is written again through `INSERT … ON CONFLICT DO NOTHING`.

use super::{COLUMNS, Click, Field, TABLE, column_list};
use sea_orm::sqlx::{self, PgPool};
use std::io::Write;
use std::sync::LazyLock;

static UNNEST_SQL: LazyLock<String> = LazyLock::new(|| {
    let arrays: Vec<String> = COLUMNS
        .iter()
        .enumerate()
        .map(|(i, column)| format!("${}::{}[]", i + 1, column.pg_type))
        .collect();
    format!(
        "INSERT INTO {TABLE} ({}) SELECT * FROM UNNEST({}) ON CONFLICT (at, event_key) DO NOTHING",
        column_list(),
        arrays.join(", ")
    )
});

/// One array per column, of that column's type, taken from the first row's kind of value.
async fn insert_unnest(pool: &PgPool, rows: &[Click]) -> Result<(), sqlx::Error> {
    let mut query = sqlx::query(UNNEST_SQL.as_str());
    for column in &COLUMNS {
        let values = rows.iter().map(|row| (column.value)(row));
        query = match (column.value)(&rows[0]) {
            Field::Int(_) => query.bind(
                values
                    .map(|field| match field {
                        Field::Int(number) => number,
                        _ => None,
                    })
                    .collect::<Vec<Option<i64>>>(),
            ),
            Field::Bool(_) => query.bind(
                values
                    .map(|field| matches!(field, Field::Bool(true)))
                    .collect::<Vec<bool>>(),
            ),
            Field::Bytes(_) => query.bind(
                values
                    .map(|field| match field {
                        Field::Bytes(bytes) => bytes,
                        _ => None,
                    })
                    .collect::<Vec<Option<&[u8]>>>(),
            ),
        };
    }
    // One statement is atomic on its own: no transaction needed around it.
    query.execute(pool).await.map(drop)
}

static COPY_SQL: LazyLock<String> =
    LazyLock::new(|| format!("COPY {TABLE} ({}) FROM STDIN", column_list()));

/// `COPY` in one go (it is atomic on its own); when the batch holds a stored event key the
/// whole copy fails, and the rows go again through the statement that skips stored keys.
pub async fn copy(pool: &PgPool, rows: &[Click]) -> Result<(), sqlx::Error> {
    use sqlx::postgres::PgPoolCopyExt;
    let mut copy = pool.copy_in_raw(COPY_SQL.as_str()).await?;
    copy.send(copy_text(rows)).await?;
    match copy.finish().await {
        Ok(_) => Ok(()),
        Err(err)
            if err
                .as_database_error()
                .is_some_and(|err| err.is_unique_violation()) =>
        {
            insert_unnest(pool, rows).await
        }
        Err(err) => Err(err),
    }
}

/// `rows` in `COPY`'s text format: one line per row, columns in [`COLUMNS`] order separated
/// by tabs, `\N` for NULL, and backslash escapes for the characters the format reserves.
fn copy_text(rows: &[Click]) -> Vec<u8> {
    let mut out = CopyText {
        out: Vec::with_capacity(rows.len() * 120),
        line_started: false,
    };
    for row in rows {
        for column in &COLUMNS {
            match (column.value)(row) {
                Field::Bytes(None) | Field::Int(None) => out.null(),
                Field::Int(Some(number)) => out.number(number),
                Field::Bool(flag) => out.field(if flag { b"t" } else { b"f" }),
                Field::Bytes(Some(bytes)) => out.bytes(bytes),
            }
        }
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
    fn null(&mut self) {
        self.field(br"\N");
    }

    /// `bytea` in COPY's text format: `\\x` (an escaped backslash) and hex digits.
    fn bytes(&mut self, bytes: &[u8]) {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        self.next();
        self.out.extend_from_slice(br"\\x");
        for &byte in bytes {
            self.out.push(DIGITS[usize::from(byte >> 4)]);
            self.out.push(DIGITS[usize::from(byte & 0xf)]);
        }
    }

    fn end_row(&mut self) {
        self.out.push(b'\n');
        self.line_started = false;
    }
}
