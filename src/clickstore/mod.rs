//! The click store: the only module that names the click tables. It defines what a stored
//! click is (`row`, `insert::COLUMNS`) and the dictionaries its texts are kept in, writes
//! batches with one writer per backend, keeps the list of clicks waiting to be counted
//! (`waiting`), reads clicks back (`stored`) for the export, recounts and the tests, purges them (`purge`),
//! keeps what each stored place is called in the UI's languages (`places`), and moves the
//! clicks of the old wide table on upgrade.
//!
//! Ingest (`crate::clicks`) writes through it; statistics (`crate::stats`) read and purge
//! through it; neither knows its tables.

pub mod dictionary;
pub mod insert;
pub mod outgoing;
pub mod places;
pub mod purge;
pub mod row;
pub mod stored;
pub mod traffic;
pub mod upgrade;
pub mod waiting;

use insert::{OUTGOING, TABLE, WAITING};
use sea_orm::{ConnectionTrait, DbErr};

/// Fresh planner statistics of the click table, and the two lists (waiting to be counted,
/// on their way to webhooks) vacuumed, on PostgreSQL (see
/// [`crate::db::sql::refresh_statistics`]): counting calls it as the clicks it has counted
/// grow.
pub async fn refresh_statistics(db: &impl ConnectionTrait) -> Result<(), DbErr> {
    let upkeep = crate::db::sql::Upkeep {
        analyze: &[TABLE],
        vacuum: &[WAITING, OUTGOING],
        ..Default::default()
    };
    crate::db::sql::refresh_statistics(db, upkeep).await
}
