//! Click events into SQLite through the connection's own handle ([`crate::db::sqlite_handle`]):
//! sqlx would copy every text bound and build an argument list of 22,000 values per batch.

use super::{COLUMNS, Click, Field, OUTGOING, TABLE, WAITING, WANTED, WANTED_PATTERN, column_list};
use crate::db::sqlite_handle::{Connection, Statement, on_connection};
use sea_orm::DbErr;
use sea_orm::sqlx::SqlitePool;
use std::ffi::CString;
use std::sync::{Arc, LazyLock};

/// One row, stepped once per event: SQLite runs a single-row insert as fast as a multi-row
/// one, and its text is short enough to prepare for every batch.
static INSERT_ONE: LazyLock<CString> = LazyLock::new(|| {
    let placeholders = vec!["?"; COLUMNS.len()].join(", ");
    CString::new(format!(
        "INSERT INTO {TABLE} ({}) VALUES ({placeholders}) ON CONFLICT (at, event_key) DO NOTHING",
        column_list()
    ))
    .expect("no NUL in the statement")
});

/// A click the batch added, listed as waiting to be counted.
static INSERT_WAITING: LazyLock<CString> = LazyLock::new(|| {
    CString::new(format!(
        "INSERT INTO {WAITING} (at, event_key) VALUES (?, ?) ON CONFLICT (at, event_key) DO NOTHING"
    ))
    .expect("no NUL in the statement")
});

/// A click the batch added, listed to be handed to webhooks, while a subscription wants clicks.
static INSERT_OUTGOING: LazyLock<CString> = LazyLock::new(|| {
    CString::new(format!(
        "INSERT INTO {OUTGOING} (at, event_key) VALUES (?, ?) ON CONFLICT (at, event_key) DO NOTHING"
    ))
    .expect("no NUL in the statement")
});

/// Whether a subscription wants clicks, with its pattern written in.
static WANTED_NOW: LazyLock<CString> = LazyLock::new(|| {
    let sql = WANTED.replace('?', &format!("'{WANTED_PATTERN}'"));
    CString::new(sql).expect("no NUL in the statement")
});

/// Inserts `rows` in one transaction; rows whose event key is stored are skipped.
pub async fn insert(pool: &SqlitePool, rows: Arc<[Click]>) -> Result<(), DbErr> {
    // Kept until the transaction ends: the writer's next batch queues behind anyone who came
    // to write meanwhile, instead of taking the lock again before their busy handler looks.
    let turn = crate::db::turns::sqlite_turn(pool).await;
    on_connection(pool, move |connection| {
        let _turn = turn;
        // IMMEDIATE takes the write lock at once, waiting out other writers with the busy
        // timeout, rather than failing on the first insert.
        connection.transaction(c"BEGIN IMMEDIATE", |connection| {
            insert_all(connection, &rows)
        })
    })
    .await
}

fn insert_all(connection: &Connection, rows: &[Click]) -> Result<(), String> {
    // Declared before the statements, so that they outlive them.
    let mut click = connection.prepare(&INSERT_ONE, "the click insert")?;
    let mut waiting = connection.prepare(&INSERT_WAITING, "the waiting list's insert")?;
    // Asked inside the write transaction, so that no subscription starts between the answer
    // and the commit.
    let mut outgoing = match connection
        .prepare(&WANTED_NOW, "the look for subscriptions")?
        .next_row("looking for subscriptions of clicks")?
    {
        Some(_) => Some(connection.prepare(&INSERT_OUTGOING, "the webhooks' list insert")?),
        None => None,
    };
    for row in rows {
        bind_row(&mut click, row);
        click.step_once("inserting a click event")?;
        // A click already stored changes nothing, and was listed when it was stored.
        if !row.counted && connection.changes() == 1 {
            waiting.bind_int(0, Some(row.at));
            waiting.bind_blob(1, Some(row.key.as_bytes()));
            waiting.step_once("listing a click to count")?;
            if let Some(outgoing) = &mut outgoing {
                outgoing.bind_int(0, Some(row.at));
                outgoing.bind_blob(1, Some(row.key.as_bytes()));
                outgoing.step_once("listing a click for webhooks")?;
            }
        }
    }
    Ok(())
}

/// Binds `row` in [`COLUMNS`] order. Every parameter is bound again for every row, so none
/// still points into the row before.
fn bind_row<'text>(statement: &mut Statement<'_, 'text>, row: &'text Click) {
    for (index, column) in COLUMNS.iter().enumerate() {
        match (column.value)(row) {
            Field::Int(number) => statement.bind_int(index, number),
            Field::Bool(flag) => statement.bind_int(index, Some(i64::from(flag))),
            Field::Bytes(bytes) => statement.bind_blob(index, bytes),
        }
    }
}
