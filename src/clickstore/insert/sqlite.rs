//! Click events into SQLite through the connection's own handle, below sqlx. One of the modules
//! with `unsafe` code (Cargo.toml lists them and denies it everywhere else); its invariants are
//! carried by types:
//! - [`Connection`] borrows the handle from sqlx's [`LockedSqliteHandle`], which keeps sqlx's
//!   own worker thread off the connection, so it cannot outlive that lock;
//! - a [`Statement`] borrows its connection, and the bytes bound to it (which SQLite reads in
//!   place, without copying) are borrowed for as long as the statement lives, from the rows
//!   that the caller holds: nothing bound points into a value that can move;
//! - the connection leaves every batch outside a transaction, as sqlx believes it is; one that
//!   cannot is closed instead of going back to the pool.
//!
//! Why below sqlx: sqlx hands every text to SQLite with `SQLITE_TRANSIENT`, which makes SQLite
//! copy it into a fresh allocation, and builds and frees an argument list of 22,000 values per
//! batch. At benchmark load that copying and allocating was half of the CPU the database
//! thread spent, on the cores the redirects need.
//!
//! The writing blocks (SQLite waits out another connection's write lock for up to its busy
//! timeout), so it runs on a blocking thread that owns everything it touches: if the caller
//! stops waiting, the batch still ends cleanly.
//!
//! [`LockedSqliteHandle`]: sqlx::sqlite::LockedSqliteHandle
#![allow(unsafe_code)]

use super::{
    COLUMNS, Click, Field, OUTGOING, TABLE, WAITING, WANTED, WANTED_PATTERN, column_list, from_sqlx,
};
use libsqlite3_sys as ffi;
use sea_orm::DbErr;
use sea_orm::sqlx::SqlitePool;
use sea_orm::sqlx::sqlite::LockedSqliteHandle;
use std::ffi::{CStr, CString, c_int};
use std::marker::PhantomData;
use std::ptr::{self, NonNull};
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
    let mut conn = pool.acquire().await.map_err(from_sqlx)?;
    let runtime = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        let _turn = turn;
        let written = {
            // Waits only for sqlx's worker thread to let go of the handle: no I/O, no timers.
            let mut locked = runtime.block_on(conn.lock_handle()).map_err(from_sqlx)?;
            Connection::borrow(&mut locked).write(&rows)
        };
        written.map_err(|failure| {
            if failure.left_open {
                // Inside a transaction sqlx does not know of: never hand this one out again.
                conn.close_on_drop();
            }
            DbErr::Custom(failure.message)
        })
    })
    .await
    .map_err(|err| DbErr::Custom(format!("the click insert thread failed: {err}")))?
}

/// Why a batch was not written, and whether the connection is still inside its transaction.
struct Failure {
    message: String,
    left_open: bool,
}

/// A connection handle borrowed from the lock that keeps everything else off it.
struct Connection<'lock> {
    raw: NonNull<ffi::sqlite3>,
    _lock: PhantomData<&'lock mut ()>,
}

impl<'lock> Connection<'lock> {
    fn borrow(locked: &'lock mut LockedSqliteHandle<'_>) -> Self {
        Self {
            raw: locked.as_raw_handle(),
            _lock: PhantomData,
        }
    }

    /// `rows` in one write transaction, rolled back on any failure.
    fn write(&self, rows: &[Click]) -> Result<(), Failure> {
        // IMMEDIATE takes the write lock at once, waiting out other writers with the busy
        // timeout, rather than failing on the first insert.
        self.exec(c"BEGIN IMMEDIATE").map_err(|message| Failure {
            message,
            left_open: self.in_transaction(),
        })?;
        let Err(message) = self.insert_all(rows).and_then(|()| self.exec(c"COMMIT")) else {
            return Ok(());
        };
        // A failed statement may have ended the transaction already; otherwise end it here.
        let rolled_back = match self.in_transaction() {
            false => Ok(()),
            true => self.exec(c"ROLLBACK"),
        };
        match rolled_back {
            Ok(()) => Err(Failure {
                message,
                left_open: false,
            }),
            Err(rollback) => Err(Failure {
                message: format!("{message}; the rollback failed too: {rollback}"),
                left_open: self.in_transaction(),
            }),
        }
    }

    /// False in autocommit mode: no transaction is open on the connection.
    fn in_transaction(&self) -> bool {
        // SAFETY: a live handle.
        unsafe { ffi::sqlite3_get_autocommit(self.raw.as_ptr()) == 0 }
    }

    fn insert_all(&self, rows: &[Click]) -> Result<(), String> {
        // Declared before the statements, so that they outlive them.
        let mut click = self.prepare(&INSERT_ONE)?;
        let mut waiting = self.prepare(&INSERT_WAITING)?;
        // Asked inside the write transaction, so that no subscription starts between the
        // answer and the commit.
        let mut outgoing = match self.prepare(&WANTED_NOW)?.step_row() {
            Ok(true) => Some(self.prepare(&INSERT_OUTGOING)?),
            Ok(false) => None,
            Err(()) => return Err(self.error("looking for subscriptions of clicks")),
        };
        for row in rows {
            click.bind_row(row);
            click
                .step_once()
                .map_err(|()| self.error("inserting a click event"))?;
            // A click already stored changes nothing, and was listed when it was stored.
            if !row.counted && self.changes() == 1 {
                waiting.bind_int(0, Some(row.at));
                waiting.bind_blob(1, Some(row.key.as_bytes()));
                waiting
                    .step_once()
                    .map_err(|()| self.error("listing a click to count"))?;
                if let Some(outgoing) = &mut outgoing {
                    outgoing.bind_int(0, Some(row.at));
                    outgoing.bind_blob(1, Some(row.key.as_bytes()));
                    outgoing
                        .step_once()
                        .map_err(|()| self.error("listing a click for webhooks"))?;
                }
            }
        }
        Ok(())
    }

    /// Rows the last insert added.
    fn changes(&self) -> i64 {
        // SAFETY: a live handle.
        unsafe { ffi::sqlite3_changes64(self.raw.as_ptr()) }
    }

    fn exec(&self, sql: &CStr) -> Result<(), String> {
        // SAFETY: a live handle and a NUL-terminated statement; no callback.
        let code = unsafe {
            ffi::sqlite3_exec(
                self.raw.as_ptr(),
                sql.as_ptr(),
                None,
                ptr::null_mut(),
                ptr::null_mut(),
            )
        };
        if code == ffi::SQLITE_OK {
            Ok(())
        } else {
            Err(self.error(&sql.to_string_lossy()))
        }
    }

    fn prepare<'conn, 'text>(&'conn self, sql: &CStr) -> Result<Statement<'conn, 'text>, String> {
        let mut raw = ptr::null_mut();
        // SAFETY: a live handle, a NUL-terminated statement and a place for the result.
        let code = unsafe {
            ffi::sqlite3_prepare_v2(
                self.raw.as_ptr(),
                sql.as_ptr(),
                -1,
                &mut raw,
                ptr::null_mut(),
            )
        };
        match NonNull::new(raw) {
            Some(raw) if code == ffi::SQLITE_OK => Ok(Statement {
                raw,
                _connection: PhantomData,
                _texts: PhantomData,
            }),
            _ => Err(self.error("preparing the click insert")),
        }
    }

    /// SQLite's own account of the last failure on this connection.
    fn error(&self, doing: &str) -> String {
        // SAFETY: a live handle; SQLite returns a NUL-terminated message that stays valid
        // until the next call on the connection, and it is copied out before that.
        let (code, message) = unsafe {
            let code = ffi::sqlite3_extended_errcode(self.raw.as_ptr());
            let message = CStr::from_ptr(ffi::sqlite3_errmsg(self.raw.as_ptr()));
            (code, message.to_string_lossy().into_owned())
        };
        format!("{doing}: {message} (SQLite code {code})")
    }
}

/// A prepared insert on `'conn`, finalized when dropped; bytes bound to it live for `'text`,
/// which the borrow checker holds to outlast the statement.
struct Statement<'conn, 'text> {
    raw: NonNull<ffi::sqlite3_stmt>,
    _connection: PhantomData<&'conn ()>,
    _texts: PhantomData<&'text [u8]>,
}

impl<'text> Statement<'_, 'text> {
    /// Binds `row` in [`COLUMNS`] order. Every parameter is bound again for every row, so
    /// none still points into the row before.
    fn bind_row(&mut self, row: &'text Click) {
        for (index, column) in COLUMNS.iter().enumerate() {
            match (column.value)(row) {
                Field::Int(number) => self.bind_int(index, number),
                Field::Bool(flag) => self.bind_int(index, Some(i64::from(flag))),
                Field::Bytes(bytes) => self.bind_blob(index, bytes),
            }
        }
    }

    /// Binds `bytes` (or NULL) to the 0-based parameter `index` without copying them.
    fn bind_blob(&mut self, index: usize, bytes: Option<&'text [u8]>) {
        let index = index as c_int + 1;
        // SAFETY: a live statement and an index within its parameters; the bytes live for
        // `'text`, which outlasts the statement.
        unsafe {
            match bytes {
                Some(bytes) => ffi::sqlite3_bind_blob64(
                    self.raw.as_ptr(),
                    index,
                    bytes.as_ptr().cast(),
                    bytes.len() as u64,
                    ffi::SQLITE_STATIC(),
                ),
                None => ffi::sqlite3_bind_null(self.raw.as_ptr(), index),
            };
        }
    }

    fn bind_int(&mut self, index: usize, value: Option<i64>) {
        let index = index as c_int + 1;
        // SAFETY: a live statement and an index within its parameters.
        unsafe {
            match value {
                Some(value) => ffi::sqlite3_bind_int64(self.raw.as_ptr(), index, value),
                None => ffi::sqlite3_bind_null(self.raw.as_ptr(), index),
            };
        }
    }

    /// Runs the insert with the values bound, then readies it for the next row. After a
    /// failure the statement is left as it is, for the connection to report the error.
    fn step_once(&mut self) -> Result<(), ()> {
        // SAFETY: a live statement whose every parameter is bound to memory that lives for
        // `'text`.
        if unsafe { ffi::sqlite3_step(self.raw.as_ptr()) } != ffi::SQLITE_DONE {
            return Err(());
        }
        // SAFETY: as above; the result code repeats the step's, already handled.
        unsafe { ffi::sqlite3_reset(self.raw.as_ptr()) };
        Ok(())
    }
}

impl Statement<'_, '_> {
    /// Runs a query without parameters once: whether it gave a row.
    fn step_row(&mut self) -> Result<bool, ()> {
        // SAFETY: a live statement with no parameters.
        match unsafe { ffi::sqlite3_step(self.raw.as_ptr()) } {
            ffi::SQLITE_ROW => Ok(true),
            ffi::SQLITE_DONE => Ok(false),
            _ => Err(()),
        }
    }
}

impl Drop for Statement<'_, '_> {
    fn drop(&mut self) {
        // SAFETY: the statement is live and finalized exactly once, here.
        unsafe { ffi::sqlite3_finalize(self.raw.as_ptr()) };
    }
}
