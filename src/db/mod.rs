//! Persistence: connecting, migrating, the entities, and the id allocator.

pub mod allocator;
pub mod entities;
pub mod sql;
pub mod sqlite_handle;
pub mod turns;
pub mod values;

use chrono::{DateTime, NaiveDateTime, SubsecRound, Utc};
use migration::{Migrator, MigratorTrait};
use sea_orm::sqlx::sqlite::{SqliteJournalMode, SqliteSynchronous};
use sea_orm::{
    ConnectOptions, ConnectionTrait, Database, DatabaseConnection, DatabaseTransaction, DbErr,
    ExecResult, RuntimeErr, SqliteTransactionMode, Statement, TransactionOptions, TransactionTrait,
};
use std::time::Duration;

pub use sea_orm::DatabaseConnection as Db;
pub use turns::{WriteTurn, write_turn};

/// How long a SQLite connection waits for another's write lock before it fails.
const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// The file of a SQLite database URL (`sqlite://inklink.db?mode=rwc` → `inklink.db`); `None`
/// for other databases and in-memory ones.
pub fn sqlite_file(url: &str) -> Option<std::path::PathBuf> {
    let rest = url.strip_prefix("sqlite:")?;
    let rest = rest.strip_prefix("//").unwrap_or(rest);
    let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
    if path.is_empty() || path == ":memory:" || query.contains("mode=memory") {
        return None;
    }
    Some(std::path::PathBuf::from(path))
}

/// Whether `url` names an in-memory SQLite database, which exists only inside the one pool
/// that opened it: nothing else may open a connection of its own to it.
pub fn sqlite_in_memory(url: &str) -> bool {
    url.starts_with("sqlite:") && sqlite_file(url).is_none()
}

/// A pool of at most `max` connections of the calling thread's own, made on its runtime
/// (whose sockets and timers they then use, and whose priority SQLite's connection threads
/// inherit); an in-memory SQLite database exists only in `shared`, which is then used.
pub async fn own_connection(
    shared: &DatabaseConnection,
    url: &str,
    max: u32,
) -> Result<DatabaseConnection, DbErr> {
    match sqlite_in_memory(url) {
        true => Ok(shared.clone()),
        false => connect(url, max).await,
    }
}

/// Makes a new SQLite file readable by its owner only (SQLite gives its -wal and -shm files
/// the same permissions): it holds password hashes, keys and visitors' addresses.
fn create_private(path: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Err(err) if err.kind() != std::io::ErrorKind::AlreadyExists => Err(err),
        _ => Ok(()),
    }
}

/// Asks the database server's address first: the pool, on a refused connection, only says
/// "pool timed out" after its whole timeout, while the reason is known at once.
async fn reach_server(url: &str) -> Result<(), DbErr> {
    let Ok(parsed) = url::Url::parse(url) else {
        return Ok(());
    };
    let default_port = match parsed.scheme() {
        "postgres" | "postgresql" => 5432,
        "mysql" | "mariadb" => 3306,
        _ => return Ok(()),
    };
    // A socket path (`?host=/run/postgresql`, or no host) is the driver's to find.
    let Some(host) = parsed.host_str().filter(|host| !host.is_empty()) else {
        return Ok(());
    };
    if parsed
        .query_pairs()
        .any(|(key, _)| key == "host" || key == "socket")
    {
        return Ok(());
    }
    let port = parsed.port().unwrap_or(default_port);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let reached = tokio::time::timeout(
        Duration::from_secs(10),
        tokio::net::TcpStream::connect((host, port)),
    )
    .await;
    match reached {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(err)) => Err(DbErr::Conn(RuntimeErr::Internal(format!(
            "cannot reach {host}:{port}: {err}"
        )))),
        Err(_) => Err(DbErr::Conn(RuntimeErr::Internal(format!(
            "cannot reach {host}:{port}: no answer within 10 seconds"
        )))),
    }
}

pub async fn connect(url: &str, max_connections: u32) -> Result<DatabaseConnection, DbErr> {
    reach_server(url).await?;
    if let Some(path) = sqlite_file(url).filter(|path| !path.exists())
        && url.contains("mode=rwc")
        && let Err(err) = create_private(&path)
    {
        tracing::debug!(error = %err, path = %path.display(), "could not create the SQLite file");
    }
    let mut options = ConnectOptions::new(url);
    options
        .max_connections(max_connections)
        .min_connections(0)
        .connect_timeout(Duration::from_secs(10))
        .acquire_timeout(Duration::from_secs(10))
        .sqlx_logging(false)
        .map_sqlx_sqlite_opts(|o| {
            // WAL lets readers (the redirect path) run beside a writer; NORMAL is durable
            // across application crashes, which is what WAL mode promises.
            o.journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Normal)
                .busy_timeout(SQLITE_BUSY_TIMEOUT)
                .foreign_keys(true)
                // Counting a busy day's distinct visitors sorts a million rows; in temporary
                // files (the OS caches them) that costs no heap, which the allocator would
                // keep long after the query.
                .pragma("temp_store", "FILE")
                // Each connection keeps its prepared statements, and the statements that list
                // hundreds of values (`IN (…)` over a chunk of links, a chunk of rows inserted)
                // come in as many texts as chunk lengths: at sqlx's 100 a connection, eight
                // connections held about 15 MB of SQLite's programs under the redirect
                // benchmark (bench/README.md). The few statements used all the time stay.
                .statement_cache_capacity(32)
                // A page cache of 1 MB a connection instead of SQLite's 2: the pool's connections
                // each filled theirs under the redirect benchmark (about 13 MB of the peak);
                // pages beyond it come from the kernel's cache. Counting's CPU a click was the
                // same within noise (bench/README.md), the peak RSS 10–15 MB lower.
                .pragma("cache_size", "-1024")
        });
    // Two processes opening one new SQLite file at once both switch it to WAL; SQLite answers
    // the loser "database is locked" at once, without waiting (waiting could deadlock). The
    // winner finishes within milliseconds, so the loser opens again.
    let give_up = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        match Database::connect(options.clone()).await {
            Err(err) if is_sqlite_busy(&err) && std::time::Instant::now() < give_up => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            connected => return connected,
        }
    }
}

/// SQLITE_BUSY or SQLITE_LOCKED, in any of their extended forms.
fn is_sqlite_busy(err: &DbErr) -> bool {
    database_error(err)
        .filter(|db| {
            db.try_downcast_ref::<sea_orm::sqlx::sqlite::SqliteError>()
                .is_some()
        })
        .and_then(|db| db.code())
        .and_then(|code| code.parse::<i32>().ok())
        .is_some_and(|code| matches!(code & 0xff, 5 | 6))
}

/// Applies pending migrations. Several instances may start at once on one database: the
/// loser of that race fails on a table the winner just made, so it waits and looks again
/// until the winner has finished (or gives up after about 30 seconds).
/// Refuses a database that a newer inklink migrated: this binary would not know its schema
/// (and sea-orm would only say that "a migration file is missing", once per retry).
pub async fn check_not_newer(db: &DatabaseConnection) -> Result<(), DbErr> {
    use sea_orm::{ConnectionTrait, Statement};
    let known: Vec<String> = Migrator::migrations()
        .iter()
        .map(|m| m.name().to_owned())
        .collect();
    let select = Statement::from_string(
        db.get_database_backend(),
        "SELECT version FROM seaql_migrations",
    );
    // No table yet: a new database.
    let Ok(rows) = db.query_all_raw(select).await else {
        return Ok(());
    };
    let mut unknown: Vec<String> = rows
        .iter()
        .filter_map(|row| row.try_get::<String>("", "version").ok())
        .filter(|version| !known.contains(version))
        .collect();
    unknown.sort();
    match unknown.last() {
        None => Ok(()),
        Some(newest) => Err(DbErr::Custom(format!(
            "the database was migrated by a newer inklink: its schema goes up to {newest}, this \
             binary knows up to {}. Run the newer inklink, or restore the backup taken before \
             the upgrade",
            known.last().map_or("nothing", String::as_str)
        ))),
    }
}

pub async fn migrate_up(db: &DatabaseConnection) -> Result<(), DbErr> {
    check_not_newer(db).await?;
    const ATTEMPTS: u32 = 60;
    let mut attempt = 0;
    loop {
        match Migrator::up(db, None).await {
            Ok(()) => return Ok(()),
            Err(err) => {
                attempt += 1;
                if attempt == ATTEMPTS {
                    return Err(err);
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
                if Migrator::get_pending_migrations(db)
                    .await
                    .is_ok_and(|p| p.is_empty())
                {
                    return Ok(());
                }
                tracing::info!(error = %err, "migration did not apply; another instance may be migrating, retrying");
            }
        }
    }
}

/// Now, as stored: UTC, whole microseconds (the finest all three backends keep, so that a
/// value reads back equal to what was written).
pub fn now() -> NaiveDateTime {
    Utc::now().naive_utc().trunc_subsecs(6)
}

pub fn to_stored(at: DateTime<Utc>) -> NaiveDateTime {
    at.naive_utc().trunc_subsecs(6)
}

/// What [`code_held`] answers when a campaign recipient holds a code: taken, as by a link.
pub const HELD_BY_RECIPIENT: &str = "the code is a campaign recipient's";

pub fn is_unique_violation(err: &DbErr) -> bool {
    matches!(
        err.sql_err(),
        Some(sea_orm::SqlErr::UniqueConstraintViolation(_))
    ) || matches!(err, DbErr::Custom(message) if message == HELD_BY_RECIPIENT)
}

/// Fails like a unique index when `code` is a campaign recipient's own code (those live in
/// `batch_recipient`, not in `url_map`, whose unique index cannot see them).
pub async fn code_held(db: &impl sea_orm::ConnectionTrait, code: &str) -> Result<(), DbErr> {
    let backend = db.get_database_backend();
    let sql = "SELECT r.batch_id AS batch_id FROM batch_recipient r \
               JOIN campaign_batch b ON b.id = r.batch_id WHERE r.token = ? AND b.mode = 'code'";
    let held = db
        .query_one_raw(sql::statement(backend, sql, vec![code.into()]))
        .await?;
    match held {
        Some(_) => Err(DbErr::Custom(HELD_BY_RECIPIENT.into())),
        None => Ok(()),
    }
}

/// A failure the database asks us to retry: a deadlock or serialization failure (SQLSTATE
/// 40001, MySQL 1213; PostgreSQL 40P01), in which the whole transaction was rolled back.
pub fn is_retryable(err: &DbErr) -> bool {
    database_error(err)
        .and_then(|db| db.code())
        .is_some_and(|code| code == "40001" || code == "40P01")
}

/// Runs a whole write transaction (`attempt`: begin, work, finish) again while the database
/// rolls it back as a deadlock's victim or a serialization failure ([`is_retryable`]), up to
/// ten more times, a little later each time: the database asks for exactly this.
/// `retryable` says which of the caller's errors is such a failure.
pub async fn retry_rolled_back<T, E>(
    mut attempt: impl AsyncFnMut() -> Result<T, E>,
    retryable: impl Fn(&E) -> bool,
) -> Result<T, E> {
    let mut tries = 0;
    loop {
        match attempt().await {
            Err(err) if retryable(&err) && tries < RETRIES => {
                tries += 1;
                tokio::time::sleep(std::time::Duration::from_millis(5 * tries)).await;
            }
            done => return done,
        }
    }
}

/// Runs one statement on its own (its own transaction) again while the database rolls it
/// back ([`retry_rolled_back`]): for a statement that changes many rows in no particular
/// order (resending, replaying, pruning the webhook outbox), which can meet a writer that locks
/// the same rows in another order.
pub async fn execute_retried(
    db: &impl ConnectionTrait,
    stmt: Statement,
) -> Result<ExecResult, DbErr> {
    retry_rolled_back(async || db.execute_raw(stmt.clone()).await, is_retryable).await
}

/// How many times [`retry_rolled_back`] runs a transaction again.
const RETRIES: u64 = 10;

/// A refusal of the values themselves (too long for a column, out of range, against a
/// constraint): the same row sent again is refused again. SQLSTATE classes 22 (data
/// exception) and 23 (integrity constraint violation), and MySQL's strict-mode refusals that
/// carry the general HY000 (an incorrect string or date value, data truncated). A server
/// that is away, shutting down, out of disk or read-only is none of these.
pub fn is_refused_value(err: &DbErr) -> bool {
    let Some(db) = database_error(err) else {
        return false;
    };
    if db
        .code()
        .is_some_and(|code| code.starts_with("22") || code.starts_with("23"))
    {
        return true;
    }
    db.try_downcast_ref::<sea_orm::sqlx::mysql::MySqlDatabaseError>()
        .is_some_and(|mysql| matches!(mysql.number(), 1048 | 1264 | 1265 | 1292 | 1366 | 1406))
}

/// Why connecting failed, in words for the person who set `INKLINK_DATABASE_URL`: the server's
/// own message (without PostgreSQL's "at line N", a line of the server's source code), and
/// what to do about the usual first-day mistakes.
pub fn connect_failure(err: &DbErr) -> String {
    let Some(answered) = database_error(err) else {
        return match err {
            DbErr::Conn(RuntimeErr::Internal(text)) => text.clone(),
            DbErr::Conn(RuntimeErr::SqlxError(sqlx)) => sqlx.to_string(),
            other => other.to_string(),
        };
    };
    use sea_orm::sqlx::{mysql::MySqlDatabaseError, postgres::PgDatabaseError};
    let message = answered.message().to_owned();
    let postgres = answered.try_downcast_ref::<PgDatabaseError>();
    let mysql = answered.try_downcast_ref::<MySqlDatabaseError>();
    let hint = match (
        postgres.map(PgDatabaseError::code),
        mysql.map(|my| my.number()),
    ) {
        // No such role, or a wrong password.
        (Some("28000" | "28P01"), _) => {
            "; create the role first (as the postgres user: createuser --pwprompt inklink), \
             or name one that exists in the URL (postgres://USER:PASSWORD@HOST/DB)"
        }
        (Some("3D000"), _) => "; create it first (as the postgres user: createdb -O OWNER NAME)",
        (_, Some(1045)) => {
            "; check the user and password in the URL (mysql://USER:PASSWORD@HOST/DB)"
        }
        (_, Some(1049)) => "; create it first: CREATE DATABASE name CHARACTER SET utf8mb4",
        _ => "",
    };
    format!("the database answered: {message}{hint}")
}

/// The error the database server (or SQLite) answered, when that is what `err` carries.
fn database_error(err: &DbErr) -> Option<&dyn sea_orm::sqlx::error::DatabaseError> {
    match err {
        DbErr::Exec(RuntimeErr::SqlxError(sqlx))
        | DbErr::Query(RuntimeErr::SqlxError(sqlx))
        | DbErr::Conn(RuntimeErr::SqlxError(sqlx)) => sqlx.as_database_error(),
        _ => None,
    }
}

/// Begins a transaction that will write. On SQLite it takes the write lock at once (`BEGIN
/// IMMEDIATE`), waiting up to the busy timeout for another writer: a transaction that reads
/// first and writes later cannot wait, since a writer that committed in between makes its
/// reads stale, and SQLite answers it "database is locked" at once. Clicks are written all the
/// time, so an operator's change would fail at random. It waits its turn among this process's
/// writers first ([`turns`]), so that the click writer cannot starve it. Other databases begin
/// as usual.
pub async fn begin_write(db: &DatabaseConnection) -> Result<DatabaseTransaction, DbErr> {
    let _turn = write_turn(db).await;
    db.begin_with_options(TransactionOptions {
        sqlite_transaction_mode: Some(SqliteTransactionMode::Immediate),
        ..TransactionOptions::default()
    })
    .await
}

/// Runs `read` (which only reads) in a transaction that looks rows up by index on PostgreSQL
/// (see [`sql::by_index`]). On SQLite the transaction holds no lock a writer waits for.
pub async fn read_by_index<T>(
    db: &DatabaseConnection,
    read: impl AsyncFnOnce(&DatabaseTransaction) -> Result<T, DbErr>,
) -> Result<T, DbErr> {
    #[expect(clippy::disallowed_methods, reason = "it only reads")]
    let txn = db.begin().await?;
    let result = async {
        sql::by_index(&txn).await?;
        read(&txn).await
    }
    .await;
    finish(txn, result).await
}

/// Ends `txn` by `result`: commit on success, rollback on failure, both at once. A transaction
/// that is merely dropped stays open on the server until its pooled connection is next used,
/// holding locks that block other sessions (MySQL's metadata locks block DDL, for instance).
pub async fn finish<T, E: From<DbErr>>(
    txn: DatabaseTransaction,
    result: Result<T, E>,
) -> Result<T, E> {
    match result {
        Ok(value) => {
            txn.commit().await?;
            Ok(value)
        }
        Err(err) => {
            if let Err(rollback) = txn.rollback().await {
                tracing::warn!(error = %rollback, "rollback failed");
            }
            Err(err)
        }
    }
}

/// A stored UTC time as people read it, in time zone `tz`, with its offset (`2026-11-26 09:30
/// UTC+8`): zone abbreviations are ambiguous (`CST` is China's, Cuba's and the US Central's).
pub fn local_time(at: chrono::NaiveDateTime, tz: chrono_tz::Tz) -> String {
    use chrono::{Offset, TimeZone};
    let local = tz.from_utc_datetime(&at);
    let seconds = local.offset().fix().local_minus_utc();
    let (sign, minutes) = (if seconds < 0 { '-' } else { '+' }, seconds.abs() / 60);
    let offset = match (minutes / 60, minutes % 60) {
        (0, 0) => String::new(),
        (hours, 0) => format!("{sign}{hours}"),
        (hours, minutes) => format!("{sign}{hours}:{minutes:02}"),
    };
    format!("{} UTC{offset}", local.format("%Y-%m-%d %H:%M"))
}
