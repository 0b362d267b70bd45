//! How a batch of enriched events reaches the database, as cheaply as each backend allows. At
//! benchmark load this runs tens of thousands of times a second beside the redirects on the
//! same cores, so what matters is the work per row, on both sides of the connection:
//!
//! - SQLite: a single-row `INSERT` stepped once per row through the connection's own handle,
//!   with every value bound in place (see [`sqlite`]).
//! - MySQL: multi-row `INSERT … VALUES` statements whose text is built once per size and
//!   prepared once per connection.
//! - PostgreSQL: `COPY … FROM STDIN`, PostgreSQL's bulk path, which costs the server about a
//!   quarter less CPU per row than the `INSERT … SELECT FROM UNNEST(…)` it replaced. `COPY`
//!   cannot skip a row that is already stored, so a batch that meets a stored click (rare:
//!   only a retry does) is written again through that `INSERT … ON CONFLICT DO NOTHING`.
//!
//! A click whose time and event key are already stored is skipped, so a batch written twice
//! (a retry after a commit whose answer was lost, a spool replayed after a crash) is stored
//! once. Each click the batch adds is listed in [`WAITING`] in the same transaction, for
//! counting; a skipped one is not (it was listed, and maybe counted, when it was stored).
//!
//! A stored click is lean (see the migration `lean_clicks`): its texts are ids in the
//! [`dictionary`] tables, its time is microseconds, its key, address and visitor are bytes.
//! What it stores is defined once, in [`COLUMNS`] (name, type, value); each backend's module
//! (`sqlite`, `mysql`, `postgres`) writes those columns its own way.

use super::dictionary::{Dictionaries, Ids, Slot};
use super::row::{EventRow, Packed};
use chrono::NaiveDateTime;
use sea_orm::sqlx;
use sea_orm::{DatabaseConnection, DbBackend, DbErr, RuntimeErr};
use std::sync::Arc;

mod mysql;
mod postgres;
mod sqlite;

/// Rows per batch: 1,000 rows of 13 values stays under every backend's parameter limit
/// (SQLite's 32,766 is the lowest).
pub const BATCH: usize = 1000;

/// The click table.
pub const TABLE: &str = "click";

/// The clicks waiting to be counted, by their key in [`TABLE`] (`at`, `event_key`): added
/// with the click, deleted once it is counted.
pub const WAITING: &str = "click_waiting";

/// The clicks waiting to be handed to webhook subscriptions of `link.clicked`, listed with the
/// click while a subscription wants clicks (see [`super::outgoing`]).
pub const OUTGOING: &str = "click_outgoing";

/// Whether an enabled subscription wants clicks: a row when one does. Its one parameter is
/// [`WANTED_PATTERN`].
pub const WANTED: &str = "SELECT id FROM webhook WHERE enabled = TRUE AND events LIKE ? LIMIT 1";

/// [`WANTED`]'s parameter.
pub const WANTED_PATTERN: &str = "%link.clicked%";

/// A click as it is stored: numbers and bytes only.
#[derive(Clone, Debug)]
pub struct Click {
    /// Microseconds since 1970, UTC.
    pub at: i64,
    pub link: Option<i64>,
    pub ids: Ids,
    pub bot: bool,
    /// Counted already, so not waiting (only clicks moved over from the old table are).
    pub counted: bool,
    pub key: Packed,
    pub ip: Packed,
    pub visitor: Option<Packed>,
}

/// A time as stored: microseconds since 1970, UTC.
pub fn micros(at: NaiveDateTime) -> i64 {
    at.and_utc().timestamp_micros()
}

/// A stored time.
pub fn from_micros(at: i64) -> NaiveDateTime {
    chrono::DateTime::from_timestamp_micros(at)
        .map(|at| at.naive_utc())
        .unwrap_or_default()
}

impl Click {
    fn id(&self, slot: Slot) -> Field<'_> {
        Field::Int(self.ids[slot as usize].map(i64::from))
    }

    fn of(row: &EventRow, ids: Ids) -> Self {
        Self {
            at: micros(row.record_time),
            link: row.url_map_id,
            ids,
            bot: row.agent.is_bot,
            counted: false,
            key: row.event_key.packed(),
            ip: row.client_ip.packed(),
            visitor: (!row.unique_identity.is_empty()).then(|| row.unique_identity.packed()),
        }
    }
}

/// One value of a stored click, as the backends bind it.
pub enum Field<'r> {
    Int(Option<i64>),
    Bool(bool),
    Bytes(Option<&'r [u8]>),
}

/// A stored column of `click`: its name, its PostgreSQL type (for the arrays of `UNNEST`)
/// and its value in a row.
pub struct Column {
    pub name: &'static str,
    pub pg_type: &'static str,
    pub value: for<'r> fn(&'r Click) -> Field<'r>,
}

const fn column(
    name: &'static str,
    pg_type: &'static str,
    value: for<'r> fn(&'r Click) -> Field<'r>,
) -> Column {
    Column {
        name,
        pg_type,
        value,
    }
}

/// The one definition of what a click stores, in the order every backend writes it.
pub const COLUMNS: [Column; 13] = [
    column("at", "int8", |c| Field::Int(Some(c.at))),
    column("link", "int8", |c| Field::Int(c.link)),
    column("code", "int4", |c| c.id(Slot::Code)),
    column("host", "int4", |c| c.id(Slot::Host)),
    column("agent", "int4", |c| c.id(Slot::Agent)),
    column("referer", "int4", |c| c.id(Slot::Referer)),
    column("query", "int4", |c| c.id(Slot::Query)),
    column("place", "int4", |c| c.id(Slot::Place)),
    column("outcome", "int4", |c| c.id(Slot::Outcome)),
    column("bot", "bool", |c| Field::Bool(c.bot)),
    column("event_key", "bytea", |c| {
        Field::Bytes(Some(c.key.as_bytes()))
    }),
    column("ip", "bytea", |c| Field::Bytes(Some(c.ip.as_bytes()))),
    column("visitor", "bytea", |c| {
        Field::Bytes(c.visitor.as_ref().map(Packed::as_bytes))
    }),
];

/// The column names, comma-separated, for the statements.
fn column_list() -> String {
    COLUMNS.map(|c| c.name).join(", ")
}

/// Writes clicks, keeping the dictionaries' ids of the values it has met.
#[derive(Default)]
pub struct ClickStore {
    dictionaries: tokio::sync::Mutex<Dictionaries>,
}

impl ClickStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// Stores `rows` in one transaction; clicks already stored are skipped. Their texts are
    /// looked up in (or added to) the dictionaries first.
    pub async fn insert(&self, db: &DatabaseConnection, rows: &[EventRow]) -> Result<(), DbErr> {
        self.insert_counted(db, rows, &[]).await
    }

    /// [`Self::insert`], storing the rows at the same index in `counted` that are `true` as
    /// counted already.
    pub async fn insert_counted(
        &self,
        db: &DatabaseConnection,
        rows: &[EventRow],
        counted: &[bool],
    ) -> Result<(), DbErr> {
        if rows.is_empty() {
            return Ok(());
        }
        let batch = self.prepare(db, rows, counted).await?;
        write(db, &batch).await
    }

    /// `rows` as they are stored, their texts looked up in (or added to) the dictionaries, and
    /// those at the same index in `counted` that are `true` marked counted: what [`write`]
    /// stores.
    pub async fn prepare(
        &self,
        db: &DatabaseConnection,
        rows: &[EventRow],
        counted: &[bool],
    ) -> Result<Prepared, DbErr> {
        let ids = self.dictionaries.lock().await.ids(db, rows).await?;
        Ok(Prepared(
            rows.iter()
                .zip(ids)
                .enumerate()
                .map(|(i, (row, ids))| Click {
                    counted: counted.get(i).copied().unwrap_or(false),
                    ..Click::of(row, ids)
                })
                .collect(),
        ))
    }
}

/// A batch of clicks ready to store (see [`ClickStore::prepare`]).
#[derive(Clone)]
pub struct Prepared(Arc<[Click]>);

/// Stores `batch` in one transaction; clicks already stored are skipped.
pub async fn write(db: &DatabaseConnection, batch: &Prepared) -> Result<(), DbErr> {
    let clicks = &batch.0;
    if clicks.is_empty() {
        return Ok(());
    }
    let inserted = match db.get_database_backend() {
        DbBackend::Sqlite => {
            return sqlite::insert(db.get_sqlite_connection_pool(), Arc::clone(clicks)).await;
        }
        DbBackend::MySql => mysql::insert(db.get_mysql_connection_pool(), clicks).await,
        DbBackend::Postgres => postgres::copy(db.get_postgres_connection_pool(), clicks).await,
        other => return Err(DbErr::Custom(format!("no click writer for {other:?}"))),
    };
    inserted.map_err(from_sqlx)
}

/// Stores `rows` with a store of its own (for one-off writes; a writer keeps its
/// [`ClickStore`]).
pub async fn insert_rows(db: &DatabaseConnection, rows: &[EventRow]) -> Result<(), DbErr> {
    ClickStore::new().insert(db, rows).await
}

fn from_sqlx(err: sqlx::Error) -> DbErr {
    DbErr::Exec(RuntimeErr::SqlxError(Arc::new(err)))
}
