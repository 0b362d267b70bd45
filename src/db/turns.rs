//! Turns at SQLite's write lock, for the writers of this process.
//!
//! SQLite lets one connection write at a time. A connection that finds the lock taken polls for
//! it, sleeping between polls (up to 100 ms), until its busy timeout. The click writer begins
//! its next transaction microseconds after committing the last, so under load a poller can miss
//! every gap for the whole timeout and fail with "database is locked": an operator's change, a
//! webhook hand-over or delivery. Writers of this process therefore queue here first, served in
//! the order they came: the click writer keeps its turn for its whole transaction (it writes
//! back to back), other writers until SQLite has given them the lock. A writer of another
//! process on the same file still meets SQLite's polling.

use sea_orm::sqlx::SqlitePool;
use sea_orm::{DatabaseConnection, DbBackend};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, LazyLock, Mutex};
use tokio::sync::{Mutex as Queue, OwnedMutexGuard};

/// A turn at one SQLite file's write lock; the next writer's begins when it is dropped.
pub struct WriteTurn {
    _turn: OwnedMutexGuard<()>,
}

/// One queue per database file (tests open many in one process; pools on one file share it).
static QUEUES: LazyLock<Mutex<HashMap<PathBuf, Arc<Queue<()>>>>> = LazyLock::new(Mutex::default);

/// Waits for this process's turn to write to `db`. `None` on PostgreSQL and MySQL (their locks
/// are rows, and waiters queue on the server), and when the turn has not come within the busy
/// timeout: the writer then meets SQLite's polling as before rather than wait twice as long.
pub async fn write_turn(db: &DatabaseConnection) -> Option<WriteTurn> {
    match db.get_database_backend() {
        DbBackend::Sqlite => sqlite_turn(db.get_sqlite_connection_pool()).await,
        _ => None,
    }
}

/// [`write_turn`] for a pool known to be SQLite's.
pub async fn sqlite_turn(pool: &SqlitePool) -> Option<WriteTurn> {
    let file = pool.connect_options().get_filename().to_path_buf();
    let queue = {
        let mut queues = QUEUES
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        Arc::clone(queues.entry(file).or_default())
    };
    tokio::time::timeout(super::SQLITE_BUSY_TIMEOUT, queue.lock_owned())
        .await
        .ok()
        .map(|turn| WriteTurn { _turn: turn })
}
