//! Click events into SQLite through the connection's own handle, below sqlx.
//!
//! sqlx hands every text to SQLite with `SQLITE_TRANSIENT`, which makes SQLite copy it into a
//! fresh allocation, and builds and frees an argument list of 22,000 values per batch. At
//! benchmark load that copying and allocating was half of the CPU the database thread spent,
//! on the cores the redirects need. Here every value is bound `SQLITE_STATIC`, pointing into
//! the rows themselves, which outlive the statement.
//!
//! The handle is borrowed from sqlx ([`LockedSqliteHandle`]), which keeps its own worker
//! thread off the connection meanwhile. The writing blocks (SQLite waits out another
//! connection's write lock for up to its busy timeout), so it runs on a blocking thread that
//! owns everything it touches: if the caller stops waiting, the batch still ends cleanly.
//!
//! [`LockedSqliteHandle`]: sqlx::sqlite::LockedSqliteHandle

use super::{COLUMNS, from_sqlx, sqlite_time, time_digits};
use crate::analytics::event::{EventRow, Text};
use libsqlite3_sys as ffi;
use sea_orm::DbErr;
use sea_orm::sqlx::SqlitePool;
use std::ffi::{CStr, CString, c_int};
use std::ptr::{self, NonNull};
use std::sync::{Arc, LazyLock};

/// One row, stepped once per event: SQLite runs a single-row insert as fast as a multi-row
/// one, and its text is short enough to prepare for every batch.
static INSERT_ONE: LazyLock<CString> = LazyLock::new(|| {
    let placeholders = vec!["?"; COLUMNS.len()].join(", ");
    CString::new(format!(
        "INSERT INTO transform_event_record ({}) VALUES ({placeholders}) \
         ON CONFLICT (event_key) DO NOTHING",
        COLUMNS.join(", ")
    ))
    .expect("no NUL in the statement")
});

/// Inserts `rows` in one transaction; rows whose event key is stored are skipped.
pub async fn insert(pool: &SqlitePool, rows: Arc<[EventRow]>) -> Result<(), DbErr> {
    let mut conn = pool.acquire().await.map_err(from_sqlx)?;
    let runtime = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        // Waits only for sqlx's worker thread to let go of the handle: no I/O, no timers.
        let mut locked = runtime.block_on(conn.lock_handle()).map_err(from_sqlx)?;
        let db = Connection(locked.as_raw_handle());
        db.write(&rows).map_err(DbErr::Custom)
    })
    .await
    .map_err(|err| DbErr::Custom(format!("the click insert thread failed: {err}")))?
}

/// A connection handle that nothing else uses while this exists.
struct Connection(NonNull<ffi::sqlite3>);

impl Connection {
    /// `rows` in one write transaction, rolled back on any failure.
    fn write(&self, rows: &[EventRow]) -> Result<(), String> {
        // IMMEDIATE takes the write lock at once, waiting out other writers with the busy
        // timeout, rather than failing on the first insert.
        self.exec(c"BEGIN IMMEDIATE")?;
        let written = self.insert_all(rows).and_then(|()| self.exec(c"COMMIT"));
        if written.is_err() {
            // Fails harmlessly when the failed statement already ended the transaction.
            let _ = self.exec(c"ROLLBACK");
        }
        written
    }

    fn insert_all(&self, rows: &[EventRow]) -> Result<(), String> {
        let mut statement = self.prepare(&INSERT_ONE)?;
        for row in rows {
            statement.bind_row(row);
            // SAFETY: the statement is live and every parameter is bound, to memory in `rows`
            // or in `statement`, neither of which changes until the next `bind_row`.
            let stepped = unsafe { ffi::sqlite3_step(statement.raw.as_ptr()) };
            if stepped != ffi::SQLITE_DONE {
                return Err(self.error("inserting a click event"));
            }
            // SAFETY: as above; the result code repeats the step's, already handled.
            unsafe { ffi::sqlite3_reset(statement.raw.as_ptr()) };
        }
        Ok(())
    }

    fn exec(&self, sql: &CStr) -> Result<(), String> {
        // SAFETY: a live handle and a NUL-terminated statement; no callback.
        let code = unsafe {
            ffi::sqlite3_exec(
                self.0.as_ptr(),
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

    fn prepare(&self, sql: &CStr) -> Result<Statement, String> {
        let mut raw = ptr::null_mut();
        // SAFETY: a live handle, a NUL-terminated statement and a place for the result.
        let code = unsafe {
            ffi::sqlite3_prepare_v2(self.0.as_ptr(), sql.as_ptr(), -1, &mut raw, ptr::null_mut())
        };
        match NonNull::new(raw) {
            Some(raw) if code == ffi::SQLITE_OK => Ok(Statement {
                raw,
                digits: [0; 29],
                formatted: None,
            }),
            _ => Err(self.error("preparing the click insert")),
        }
    }

    /// SQLite's own account of the last failure on this connection.
    fn error(&self, doing: &str) -> String {
        // SAFETY: a live handle; SQLite returns a NUL-terminated message that stays valid
        // until the next call on the connection, and it is copied out before that.
        let (code, message) = unsafe {
            let code = ffi::sqlite3_extended_errcode(self.0.as_ptr());
            let message = CStr::from_ptr(ffi::sqlite3_errmsg(self.0.as_ptr()));
            (code, message.to_string_lossy().into_owned())
        };
        format!("{doing}: {message} (SQLite code {code})")
    }
}

/// A prepared insert, finalized when dropped (always before the rows it pointed into).
struct Statement {
    raw: NonNull<ffi::sqlite3_stmt>,
    /// The record time's text, bound by reference like every other value: in `digits`, or,
    /// for the rare time `time_digits` leaves to the general formatter, in `formatted`.
    digits: [u8; 29],
    formatted: Option<Text>,
}

impl Statement {
    /// Binds `row` in [`COLUMNS`] order. Every parameter is bound again for every row, so
    /// none still points into the row before.
    fn bind_row(&mut self, row: &EventRow) {
        let record_time: &str = match time_digits(row.record_time) {
            Some((digits, len)) => {
                self.digits = digits;
                std::str::from_utf8(&self.digits[..len]).expect("digits and separators are ASCII")
            }
            None => self.formatted.insert(sqlite_time(row.record_time)),
        };
        let texts: [Option<&str>; 22] = [
            Some(&row.event_key),
            Some(record_time),
            Some(&row.compression_code),
            None, // url_map_id, bound below as an integer
            row.host.as_deref(),
            Some(&row.client_ip),
            Some(&row.unique_identity),
            row.user_agent.as_deref(),
            row.referer.as_deref(),
            row.referer_host.as_deref(),
            row.query_string.as_deref(),
            row.country.as_deref(),
            row.province.as_deref(),
            row.city.as_deref(),
            row.browser.as_deref(),
            row.browser_version.as_deref(),
            row.os.as_deref(),
            row.os_version.as_deref(),
            row.device.as_deref(),
            None, // is_bot, bound below as an integer
            Some(&row.transform_status),
            row.failure_reason.as_deref(),
        ];
        for (index, text) in texts.into_iter().enumerate() {
            bind_text(self.raw, index, text);
        }
        bind_int(self.raw, 3, row.url_map_id);
        bind_int(self.raw, 19, Some(i64::from(row.is_bot)));
    }
}

/// Binds `text` (or NULL) to the 0-based parameter `index` without copying it: the text must
/// stay where it is until the statement has stepped.
fn bind_text(statement: NonNull<ffi::sqlite3_stmt>, index: usize, text: Option<&str>) {
    let index = index as c_int + 1;
    // SAFETY: a live statement and an index within its parameters; callers keep the text in
    // place until the step that reads it (the rows and the `Statement` outlive the batch).
    unsafe {
        match text {
            Some(text) => ffi::sqlite3_bind_text64(
                statement.as_ptr(),
                index,
                text.as_ptr().cast(),
                text.len() as u64,
                ffi::SQLITE_STATIC(),
                ffi::SQLITE_UTF8 as u8,
            ),
            None => ffi::sqlite3_bind_null(statement.as_ptr(), index),
        };
    }
}

fn bind_int(statement: NonNull<ffi::sqlite3_stmt>, index: usize, value: Option<i64>) {
    let index = index as c_int + 1;
    // SAFETY: a live statement and an index within its parameters.
    unsafe {
        match value {
            Some(value) => ffi::sqlite3_bind_int64(statement.as_ptr(), index, value),
            None => ffi::sqlite3_bind_null(statement.as_ptr(), index),
        };
    }
}

impl Drop for Statement {
    fn drop(&mut self) {
        // SAFETY: the statement is live and finalized exactly once, here.
        unsafe { ffi::sqlite3_finalize(self.raw.as_ptr()) };
    }
}
