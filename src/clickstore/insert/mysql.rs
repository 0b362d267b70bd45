//! Click events into MySQL/MariaDB: multi-row `INSERT … VALUES` statements whose text is built
//! once per size and prepared once per connection.
//!
//! `INSERT IGNORE` skips a click already stored and says how many rows it added, which is
//! how a batch knows that all of its clicks are new and to be listed as waiting. When fewer
//! were added (a batch written again), the multi-row statements cannot say which, so the
//! batch is written again a row at a time, each row's answer telling.

use super::{COLUMNS, Click, Field, OUTGOING, TABLE, WAITING, WANTED, WANTED_PATTERN, column_list};
use sea_orm::sqlx::{self, MySqlPool, mysql::MySqlArguments};
use std::sync::LazyLock;

/// Statement sizes: a batch is split into statements of these many rows, so that each
/// connection prepares at most four distinct statements per table and reuses them.
const STATEMENT_ROWS: [usize; 4] = [super::BATCH, 100, 10, 1];

/// The statements inserting 1,000, 100, 10 and 1 rows of `columns` into `table`.
fn statements(table: &str, columns: &str, count: usize) -> [String; 4] {
    STATEMENT_ROWS.map(|rows| {
        let row = format!("({})", vec!["?"; count].join(", "));
        format!(
            "INSERT IGNORE INTO {table} ({columns}) VALUES {}",
            vec![row.as_str(); rows].join(", "),
        )
    })
}

static CLICKS: LazyLock<[String; 4]> =
    LazyLock::new(|| statements(TABLE, &column_list(), COLUMNS.len()));
static WAITING_CLICKS: LazyLock<[String; 4]> =
    LazyLock::new(|| statements(WAITING, "at, event_key", 2));
static OUTGOING_CLICKS: LazyLock<[String; 4]> =
    LazyLock::new(|| statements(OUTGOING, "at, event_key", 2));

/// Splits `rows` into runs of [`STATEMENT_ROWS`] sizes, each with its statement of `sql`.
fn chunks<'r, T>(
    sql: &'static [String; 4],
    mut rows: &'r [T],
) -> impl Iterator<Item = (&'static str, &'r [T])> {
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

type Query<'q> = sqlx::query::Query<'q, sqlx::MySql, MySqlArguments>;
type Transaction = sqlx::Transaction<'static, sqlx::MySql>;

/// Binds one row's values in [`COLUMNS`] order.
fn bind_row<'q>(mut query: Query<'q>, row: &Click) -> Query<'q> {
    for column in &COLUMNS {
        query = match (column.value)(row) {
            Field::Int(number) => query.bind(number),
            Field::Bool(flag) => query.bind(flag),
            Field::Bytes(bytes) => query.bind(bytes.map(<[u8]>::to_vec)),
        };
    }
    query
}

/// Inserts `rows` in one transaction; clicks already stored are skipped.
pub async fn insert(pool: &MySqlPool, rows: &[Click]) -> Result<(), sqlx::Error> {
    let mut txn = pool.begin().await?;
    let mut added = 0;
    for (sql, chunk) in chunks(&CLICKS, rows) {
        let mut query = sqlx::query(sql);
        for row in chunk {
            query = bind_row(query, row);
        }
        added += query.execute(&mut *txn).await?.rows_affected();
    }
    if added == rows.len() as u64 {
        let waiting: Vec<&Click> = rows.iter().filter(|row| !row.counted).collect();
        list_waiting(&mut txn, &waiting).await?;
        return txn.commit().await;
    }
    txn.rollback().await?;
    let mut txn = pool.begin().await?;
    let mut waiting = Vec::new();
    for row in rows {
        let query = bind_row(sqlx::query(CLICKS[STATEMENT_ROWS.len() - 1].as_str()), row);
        if query.execute(&mut *txn).await?.rows_affected() == 1 && !row.counted {
            waiting.push(row);
        }
    }
    list_waiting(&mut txn, &waiting).await?;
    txn.commit().await
}

/// Lists `rows`, clicks just added, as waiting to be counted, and to be handed to webhooks
/// while a subscription wants clicks (asked in the transaction that stores them).
async fn list_waiting(txn: &mut Transaction, rows: &[&Click]) -> Result<(), sqlx::Error> {
    list(txn, &WAITING_CLICKS, rows).await?;
    let wanted = sqlx::query(WANTED)
        .bind(WANTED_PATTERN)
        .fetch_optional(&mut **txn)
        .await?;
    if wanted.is_some() {
        list(txn, &OUTGOING_CLICKS, rows).await?;
    }
    Ok(())
}

async fn list(
    txn: &mut Transaction,
    sql: &'static [String; 4],
    rows: &[&Click],
) -> Result<(), sqlx::Error> {
    for (sql, chunk) in chunks(sql, rows) {
        let mut query = sqlx::query(sql);
        for row in chunk {
            query = query.bind(row.at).bind(row.key.as_bytes().to_vec());
        }
        query.execute(&mut **txn).await?;
    }
    Ok(())
}
