//! Click events into MySQL/MariaDB: multi-row `INSERT … VALUES` statements whose text is built
//! once per size and prepared once per connection.

use super::{COLUMNS, Click, Field, TABLE, column_list};
use sea_orm::sqlx::{self, MySqlPool, mysql::MySqlArguments};
use std::sync::LazyLock;

/// Statement sizes: a batch is split into statements of these many rows, so that each
/// connection prepares at most four distinct statements and reuses them.
const STATEMENT_ROWS: [usize; 4] = [super::BATCH, 100, 10, 1];

// MySQL has no DO NOTHING; a no-op update of the key is its spelling.
static SQL: LazyLock<[String; 4]> = LazyLock::new(|| {
    STATEMENT_ROWS.map(|rows| {
        let row = format!("({})", vec!["?"; COLUMNS.len()].join(", "));
        format!(
            "INSERT INTO {TABLE} ({}) VALUES {} ON DUPLICATE KEY UPDATE event_key = event_key",
            column_list(),
            vec![row.as_str(); rows].join(", "),
        )
    })
});

/// Splits `rows` into runs of [`STATEMENT_ROWS`] sizes, each with its statement.
fn chunks(mut rows: &[Click]) -> impl Iterator<Item = (&'static str, &[Click])> {
    std::iter::from_fn(move || {
        let (slot, size) = STATEMENT_ROWS
            .iter()
            .enumerate()
            .find(|(_, size)| **size <= rows.len())?;
        let (now, later) = rows.split_at(*size);
        rows = later;
        Some((SQL[slot].as_str(), now))
    })
}

type Query<'q> = sqlx::query::Query<'q, sqlx::MySql, MySqlArguments>;

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
    for (sql, chunk) in chunks(rows) {
        let mut query = sqlx::query(sql);
        for row in chunk {
            query = bind_row(query, row);
        }
        query.execute(&mut *txn).await?;
    }
    txn.commit().await
}
