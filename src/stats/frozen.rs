//! The day before which raw clicks were purged (see `retention`): the statistics of earlier
//! days are final, and counting and recounts leave them alone.

use crate::db::sql::statement;
use chrono::NaiveDate;
use sea_orm::{ConnectionTrait, DbBackend, DbErr};

/// The statement reading the first day that still has events (`purged_before`).
pub const PURGED_BEFORE: &str = "SELECT purged_before FROM event_purge WHERE id = 1";

/// The day before which raw events were purged (see `retention`), if any purge happened:
/// the statistics of earlier days are final.
pub async fn purged_before(db: &impl ConnectionTrait) -> Result<Option<NaiveDate>, DbErr> {
    let backend = db.get_database_backend();
    match db
        .query_one_raw(statement(backend, PURGED_BEFORE, vec![]))
        .await?
    {
        Some(row) => Ok(Some(row.try_get("", "purged_before")?)),
        None => Ok(None),
    }
}

/// Records that days before `before` have no events any more (never moving it back).
pub async fn freeze_before(db: &impl ConnectionTrait, before: NaiveDate) -> Result<(), DbErr> {
    let backend = db.get_database_backend();
    let insert = match backend {
        DbBackend::MySql => "INSERT IGNORE INTO event_purge (id, purged_before) VALUES (1, ?)",
        _ => {
            "INSERT INTO event_purge (id, purged_before) VALUES (1, ?) ON CONFLICT (id) DO NOTHING"
        }
    };
    db.execute_raw(statement(backend, insert, vec![before.into()]))
        .await?;
    let update = "UPDATE event_purge SET purged_before = ? WHERE id = 1 AND purged_before < ?";
    db.execute_raw(statement(
        backend,
        update,
        vec![before.into(), before.into()],
    ))
    .await?;
    Ok(())
}
