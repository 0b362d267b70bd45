//! A turn worked out ahead on SQLite reads its waiting clicks first, on a connection's own
//! handle, with what tells whether they still stand when the turn's own read begins.

use super::TAKEN;
use crate::clickstore::waiting::Waiting;
use crate::db::sqlite_handle::{Column, Connection};
use chrono::NaiveDate;
use sea_orm::{DatabaseConnection, DbBackend, DbErr};

/// The waiting clicks a turn worked out ahead counts, read on SQLite before the rest of what
/// it reads ([`read_first`]).
pub struct ReadFirst(pub(super) Option<(Marks, Vec<Waiting>)>);

/// On SQLite, up to `limit` waiting clicks (after `after`), read on a connection's own handle
/// in a read of their own, with the last turn and the purge's boundary: the turn's read that
/// follows sees at least as much (every dictionary row and link they point to), and when it
/// sees the same turn and boundary, the same list. Elsewhere nothing: the turn's read reads
/// them.
pub async fn read_first(
    db: &DatabaseConnection,
    limit: u64,
    after: Option<(i64, &[u8])>,
) -> Result<ReadFirst, DbErr> {
    if db.get_database_backend() != DbBackend::Sqlite {
        return Ok(ReadFirst(None));
    }
    let pool = db.get_sqlite_connection_pool();
    let read = crate::clickstore::waiting::peek_waiting_sqlite(pool, limit, after, marks);
    Ok(ReadFirst(Some(read.await?)))
}

/// The last turn taken and the purge's boundary, as SQLite holds them: while both are
/// unchanged, no turn or purge has taken a click off the waiting list.
#[derive(PartialEq, Eq)]
pub struct Marks {
    taken: Option<i64>,
    purged_before: Option<Vec<u8>>,
}

impl Marks {
    pub(super) fn of(taken: i64, purged_before: Option<NaiveDate>) -> Self {
        Self {
            taken: Some(taken),
            purged_before: purged_before.map(|day| crate::db::sql::day_text(day).into_bytes()),
        }
    }
}

/// [`Marks`] read on a connection's own handle, for [`read_first`].
fn marks(connection: &Connection) -> Result<Marks, String> {
    let sql = format!(
        "SELECT ({TAKEN}), ({})",
        crate::stats::frozen::PURGED_BEFORE
    );
    let sql = std::ffi::CString::new(sql).expect("no NUL in the statement");
    let mut read = connection.prepare(&sql, "the read of the last turn")?;
    let Some(row) = read.next_row("reading the last turn")? else {
        return Err("reading the last turn: no row".to_owned());
    };
    Ok(Marks {
        taken: match row.column(0) {
            Column::Int(taken) => Some(taken),
            _ => None,
        },
        purged_before: match row.column(1) {
            Column::Text(day) => Some(day.to_vec()),
            _ => None,
        },
    })
}
