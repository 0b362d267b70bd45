//! Deleting stored clicks recorded before a point in time, and the dictionary rows only they
//! used. Statistics decide when (`crate::stats::retention`); this knows the tables.

use super::dictionary;
use super::insert::{TABLE, WAITING, micros};
use chrono::NaiveDateTime;
use sea_orm::{ConnectionTrait, DbErr};

/// Clicks deleted per statement, so that neither the click writer nor the dashboards wait
/// behind one huge delete.
pub const PURGE_BATCH: i64 = 5_000;

/// What a purge deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deleted {
    pub clicks: u64,
    /// Dictionary rows (user agents, places, referrers, texts) no remaining click uses.
    pub values: u64,
}

/// Deletes every click recorded before `cutoff` (UTC), its entry in the waiting list, and the
/// dictionary rows that only such clicks used.
pub async fn before(db: &impl ConnectionTrait, cutoff: NaiveDateTime) -> Result<Deleted, DbErr> {
    let cutoff = micros(cutoff);
    let clicks = crate::db::sql::delete_in_batches(db, TABLE, "at", cutoff, PURGE_BATCH).await?;
    // Nothing waits there after the caller counted everything, unless a stats rebuild running
    // meanwhile listed a purged day's clicks again: they are gone, and so is counting them.
    crate::db::sql::delete_in_batches(db, WAITING, "at", cutoff, PURGE_BATCH).await?;
    // The dictionaries' rows that only the purged clicks used. Writers mark what they use
    // with the day (UTC) and look everything up again each day, so rows not seen since the
    // day before the purge's are no writer's any more.
    let unused_before = cutoff.div_euclid(86_400_000_000) - 1;
    let values = dictionary::purge(db, unused_before).await?;
    Ok(Deleted { clicks, values })
}
