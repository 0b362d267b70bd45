//! Statements run on a SQLite connection's own handle, below sqlx: the click writer's inserts
//! and counting's read of the waiting clicks. The one module with `unsafe` code for SQLite
//! (Cargo.toml lists the modules and denies it everywhere else); its invariants are carried by
//! types:
//! - [`Connection`] borrows the handle from sqlx's [`LockedSqliteHandle`], which keeps sqlx's
//!   own worker thread off the connection, so it cannot outlive that lock;
//! - a [`Statement`] borrows its connection, and the bytes bound to it (which SQLite reads in
//!   place, without copying) are borrowed for as long as the statement lives, from values the
//!   caller holds: nothing bound points into a value that can move;
//! - a [`Row`] borrows its statement mutably, so that the columns it lends (which SQLite frees
//!   at the next step) are gone before the statement can step again, and it reads only the
//!   columns the statement has;
//! - [`on_connection`] leaves the connection outside a transaction, as sqlx believes it is; one
//!   that cannot be is closed instead of going back to the pool.
//!
//! Why below sqlx: sqlx hands every text to SQLite with `SQLITE_TRANSIENT`, which makes SQLite
//! copy it into a fresh allocation, and builds and frees an argument list of 22,000 values per
//! batch; at benchmark load that was half of the CPU the database thread spent. Reading, sqlx
//! gives no way to read a few columns of many rows without a value and a column map per row,
//! which is why the waiting clicks were read as one JSON text of a page, their blobs in hex:
//! half of what reading them cost (bench/README.md).
//!
//! The work blocks (SQLite waits out another connection's write lock for up to its busy
//! timeout), so it runs on a blocking thread that owns everything it touches: if the caller
//! stops waiting, the work still ends cleanly.
//!
//! [`LockedSqliteHandle`]: sqlx::sqlite::LockedSqliteHandle
#![allow(unsafe_code)]

use libsqlite3_sys as ffi;
use sea_orm::sqlx::pool::PoolConnection;
use sea_orm::sqlx::sqlite::LockedSqliteHandle;
use sea_orm::sqlx::{Sqlite, SqlitePool};
use sea_orm::{DbErr, RuntimeErr};
use std::ffi::{CStr, c_int};
use std::marker::PhantomData;
use std::ptr::{self, NonNull};
use std::sync::Arc;

/// Runs `work` on a connection of `pool`, on a blocking thread, and hands the connection back
/// outside any transaction (rolling back one `work` left open, or closing the connection when
/// that fails). `work`'s error is SQLite's account of what failed ([`Connection::error`]).
pub async fn on_connection<T: Send + 'static>(
    pool: &SqlitePool,
    work: impl FnOnce(&Connection) -> Result<T, String> + Send + 'static,
) -> Result<T, DbErr> {
    let mut conn = pool.acquire().await.map_err(from_sqlx)?;
    let runtime = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        // Waits only for sqlx's worker thread to let go of the handle: no I/O, no timers.
        let done = match runtime.block_on(conn.lock_handle()) {
            Ok(mut locked) => run_locked(&mut locked, work),
            Err(err) => return Err(from_sqlx(err)),
        };
        end(&mut conn, done)
    })
    .await
    .map_err(|err| DbErr::Custom(format!("the SQLite thread failed: {err}")))?
}

/// [`on_connection`] on the calling thread, which `work` blocks: for counting, whose thread and
/// look-ahead thread would only wait for it. What `work` makes is allocated on the thread that
/// goes on to use it and free it (made on a blocking thread, a turn's clicks were freed into
/// another thread's heap). The retention's purge (at start and hourly, when a retention is set)
/// counts what waits first, from a task of the server's runtime: there each read holds one of
/// its workers for its 5–55 ms.
pub async fn on_connection_here<T>(
    pool: &SqlitePool,
    work: impl FnOnce(&Connection) -> Result<T, String>,
) -> Result<T, DbErr> {
    let mut conn = pool.acquire().await.map_err(from_sqlx)?;
    let done = match conn.lock_handle().await {
        Ok(mut locked) => run_locked(&mut locked, work),
        Err(err) => return Err(from_sqlx(err)),
    };
    end(&mut conn, done)
}

/// `work` on the handle `locked` lends; whether it left a transaction open that a rollback
/// could not end.
fn run_locked<T>(
    locked: &mut LockedSqliteHandle<'_>,
    work: impl FnOnce(&Connection) -> Result<T, String>,
) -> (Result<T, String>, bool) {
    let connection = Connection::borrow(locked);
    let done = work(&connection);
    if connection.in_transaction() {
        // Only a failure inside a transaction leaves one open.
        let _ = connection.exec(c"ROLLBACK");
    }
    (done, connection.in_transaction())
}

/// What [`run_locked`] did; a connection still inside a transaction sqlx does not know of is
/// never handed out again.
fn end<T>(
    conn: &mut PoolConnection<Sqlite>,
    (done, left_open): (Result<T, String>, bool),
) -> Result<T, DbErr> {
    if left_open {
        conn.close_on_drop();
    }
    done.map_err(DbErr::Custom)
}

fn from_sqlx(err: sea_orm::sqlx::Error) -> DbErr {
    DbErr::Exec(RuntimeErr::SqlxError(Arc::new(err)))
}

/// A connection handle borrowed from the lock that keeps everything else off it.
pub struct Connection<'lock> {
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

    /// `work` in a transaction begun by `begin` (`BEGIN`, `BEGIN IMMEDIATE`), committed when
    /// it succeeds and rolled back when anything fails.
    pub fn transaction<T>(
        &self,
        begin: &CStr,
        work: impl FnOnce(&Self) -> Result<T, String>,
    ) -> Result<T, String> {
        self.exec(begin)?;
        let failed = match work(self) {
            Ok(done) => match self.exec(c"COMMIT") {
                Ok(()) => return Ok(done),
                Err(message) => message,
            },
            Err(message) => message,
        };
        // A failed statement may have ended the transaction already; otherwise end it here.
        match self.in_transaction() {
            false => Err(failed),
            true => match self.exec(c"ROLLBACK") {
                Ok(()) => Err(failed),
                Err(rollback) => Err(format!("{failed}; the rollback failed too: {rollback}")),
            },
        }
    }

    /// False in autocommit mode: no transaction is open on the connection.
    fn in_transaction(&self) -> bool {
        // SAFETY: a live handle.
        unsafe { ffi::sqlite3_get_autocommit(self.raw.as_ptr()) == 0 }
    }

    /// Rows the last insert, update or delete changed.
    pub fn changes(&self) -> i64 {
        // SAFETY: a live handle.
        unsafe { ffi::sqlite3_changes64(self.raw.as_ptr()) }
    }

    /// Runs `sql`, statements without parameters or rows.
    pub fn exec(&self, sql: &CStr) -> Result<(), String> {
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

    /// `sql` prepared; `doing` names it in an error.
    pub fn prepare<'conn, 'text>(
        &'conn self,
        sql: &CStr,
        doing: &str,
    ) -> Result<Statement<'conn, 'text>, String> {
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
                // SAFETY: a live statement.
                columns: unsafe { ffi::sqlite3_column_count(raw.as_ptr()) }.max(0) as usize,
                _connection: PhantomData,
                _texts: PhantomData,
            }),
            _ => Err(self.error(&format!("preparing {doing}"))),
        }
    }

    /// SQLite's own account of the last failure on this connection, `doing` what.
    fn error(&self, doing: &str) -> String {
        failure(self.raw, doing)
    }
}

/// SQLite's own account of the last failure on the connection `raw`, `doing` what.
fn failure(raw: NonNull<ffi::sqlite3>, doing: &str) -> String {
    // SAFETY: a live handle; SQLite returns a NUL-terminated message that stays valid until
    // the next call on the connection, and it is copied out before that.
    let (code, message) = unsafe {
        let code = ffi::sqlite3_extended_errcode(raw.as_ptr());
        let message = CStr::from_ptr(ffi::sqlite3_errmsg(raw.as_ptr()));
        (code, message.to_string_lossy().into_owned())
    };
    format!("{doing}: {message} (SQLite code {code})")
}

/// A prepared statement on `'conn`, finalized when dropped; bytes bound to it live for
/// `'text`, which the borrow checker holds to outlast the statement.
pub struct Statement<'conn, 'text> {
    raw: NonNull<ffi::sqlite3_stmt>,
    /// How many columns its rows have.
    columns: usize,
    _connection: PhantomData<&'conn ()>,
    _texts: PhantomData<&'text [u8]>,
}

impl<'text> Statement<'_, 'text> {
    /// Binds `bytes` (or NULL) to the 0-based parameter `index` without copying them.
    pub fn bind_blob(&mut self, index: usize, bytes: Option<&'text [u8]>) {
        let index = index as c_int + 1;
        // SAFETY: a live statement (SQLite refuses an index outside its parameters); the bytes
        // live for `'text`, which outlasts the statement.
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

    pub fn bind_int(&mut self, index: usize, value: Option<i64>) {
        let index = index as c_int + 1;
        // SAFETY: a live statement (SQLite refuses an index outside its parameters).
        unsafe {
            match value {
                Some(value) => ffi::sqlite3_bind_int64(self.raw.as_ptr(), index, value),
                None => ffi::sqlite3_bind_null(self.raw.as_ptr(), index),
            };
        }
    }

    /// Runs a statement that gives no rows with the values bound, then readies it for the
    /// next; `doing` names it in an error.
    pub fn step_once(&mut self, doing: &str) -> Result<(), String> {
        // SAFETY: a live statement whose every parameter is bound to memory that lives for
        // `'text`.
        if unsafe { ffi::sqlite3_step(self.raw.as_ptr()) } != ffi::SQLITE_DONE {
            return Err(self.error(doing));
        }
        // SAFETY: as above; the result code repeats the step's, already handled.
        unsafe { ffi::sqlite3_reset(self.raw.as_ptr()) };
        Ok(())
    }

    /// The next row the statement gives, `None` once it has given them all; `doing` names
    /// the statement in an error.
    pub fn next_row(&mut self, doing: &str) -> Result<Option<Row<'_>>, String> {
        // SAFETY: a live statement whose every parameter is bound to memory that lives for
        // `'text`.
        match unsafe { ffi::sqlite3_step(self.raw.as_ptr()) } {
            ffi::SQLITE_ROW => Ok(Some(Row {
                raw: self.raw,
                columns: self.columns,
                _statement: PhantomData,
            })),
            ffi::SQLITE_DONE => Ok(None),
            _ => Err(self.error(doing)),
        }
    }

    /// SQLite's account of the statement's last failure, read from its connection before
    /// anything else runs there.
    fn error(&self, doing: &str) -> String {
        // SAFETY: a live statement, whose connection outlives it.
        let connection = unsafe { ffi::sqlite3_db_handle(self.raw.as_ptr()) };
        match NonNull::new(connection) {
            Some(connection) => failure(connection, doing),
            None => format!("{doing}: failed"),
        }
    }
}

impl Drop for Statement<'_, '_> {
    fn drop(&mut self) {
        // SAFETY: the statement is live and finalized exactly once, here.
        unsafe { ffi::sqlite3_finalize(self.raw.as_ptr()) };
    }
}

/// A row a statement stepped to; its columns are SQLite's until the statement steps again.
pub struct Row<'stmt> {
    raw: NonNull<ffi::sqlite3_stmt>,
    columns: usize,
    _statement: PhantomData<&'stmt mut ()>,
}

/// A column of a [`Row`], as SQLite stored it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Column<'row> {
    Null,
    Int(i64),
    Real(f64),
    Text(&'row [u8]),
    Blob(&'row [u8]),
}

impl Row<'_> {
    /// The 0-based column `index`; NULL past the last one.
    pub fn column(&self, index: usize) -> Column<'_> {
        if index >= self.columns {
            return Column::Null;
        }
        let (stmt, index) = (self.raw.as_ptr(), index as c_int);
        // SAFETY: a statement on a row (the borrow of it keeps it from stepping) and a column
        // it has. The pointer SQLite returns for a text or blob stays valid until the
        // statement steps again or the column is read as another type; it is asked for before
        // the length, as SQLite requires, and the slice borrows the row.
        unsafe {
            let bytes = |start: *const u8| match NonNull::new(start.cast_mut()) {
                None => &[][..],
                Some(start) => {
                    let len = ffi::sqlite3_column_bytes(stmt, index).max(0) as usize;
                    std::slice::from_raw_parts(start.as_ptr(), len)
                }
            };
            match ffi::sqlite3_column_type(stmt, index) {
                ffi::SQLITE_INTEGER => Column::Int(ffi::sqlite3_column_int64(stmt, index)),
                ffi::SQLITE_FLOAT => Column::Real(ffi::sqlite3_column_double(stmt, index)),
                ffi::SQLITE_TEXT => Column::Text(bytes(ffi::sqlite3_column_text(stmt, index))),
                ffi::SQLITE_BLOB => {
                    Column::Blob(bytes(ffi::sqlite3_column_blob(stmt, index).cast()))
                }
                _ => Column::Null,
            }
        }
    }
}
