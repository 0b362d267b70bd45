//! Retention of raw click events. Statistics are kept for ever; the events they were counted
//! from can go: `inklink events purge --before DATE`, or INKLINK_EVENT_RETENTION_DAYS on the
//! server. A purge first counts every click still waiting to be counted, then records the day
//! before which events are gone (those days are never counted again, so their statistics stay
//! exactly as they were), then deletes the events in small batches, so that neither the click
//! writer nor the dashboards wait behind one huge delete.

use super::aggregate::{self, purged_before};
use super::insert::{TABLE, WAITING};
use crate::db::sql::statement;
use chrono::{Days, NaiveDate};
use chrono_tz::Tz;
use sea_orm::{ConnectionTrait, DatabaseConnection, DbBackend, DbErr};
use std::time::Duration;

/// Events deleted per statement.
pub const PURGE_BATCH: i64 = 5_000;

#[derive(Debug, thiserror::Error)]
pub enum PurgeError {
    #[error(
        "{before} is after today ({today} in {tz}): only the events of past days can be purged"
    )]
    NotPast {
        before: NaiveDate,
        today: NaiveDate,
        tz: Tz,
    },
    #[error(transparent)]
    Db(#[from] DbErr),
}

/// What a purge did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Purged {
    /// Events deleted.
    pub events: u64,
    /// Events that were still waiting to be counted, counted before the purge.
    pub counted: u64,
    /// Dictionary rows (user agents, places, referrers, texts) no remaining click uses.
    pub values: u64,
}

/// Deletes every event recorded before `before` begins (in `tz`), keeping every statistic.
pub async fn purge(
    db: &DatabaseConnection,
    tz: Tz,
    before: NaiveDate,
) -> Result<Purged, PurgeError> {
    let today = aggregate::today(tz);
    if before > today {
        return Err(PurgeError::NotPast { before, today, tz });
    }
    let Some(cutoff) = aggregate::day_start(before, tz) else {
        return Ok(Purged {
            events: 0,
            counted: 0,
            values: 0,
        });
    };
    let frozen = purged_before(db).await?;
    let counted = super::tally::drain(db, tz).await?;
    if frozen.is_none_or(|frozen| frozen < before) {
        freeze_before(db, before).await?;
    }
    let cutoff = super::insert::micros(cutoff);
    let events = crate::db::sql::delete_in_batches(db, TABLE, "at", cutoff, PURGE_BATCH).await?;
    // Nothing waits there after the count above, unless a stats rebuild running meanwhile
    // listed a purged day's clicks again: they are gone, and so is counting them.
    crate::db::sql::delete_in_batches(db, WAITING, "at", cutoff, PURGE_BATCH).await?;
    // The dictionaries' rows that only the purged clicks used. Writers mark what they use
    // with the day (UTC) and look everything up again each day, so rows not seen since the
    // day before the purge's are no writer's any more.
    let unused_before = cutoff.div_euclid(86_400_000_000) - 1;
    let values = super::dictionary::purge(db, unused_before).await?;
    Ok(Purged {
        events,
        counted,
        values,
    })
}

/// Records that days before `before` have no events any more (never moving it back).
async fn freeze_before(db: &DatabaseConnection, before: NaiveDate) -> Result<(), DbErr> {
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

/// How often the server applies INKLINK_EVENT_RETENTION_DAYS.
const RETENTION_EVERY: Duration = Duration::from_secs(3600);

/// Keeps `days` days of events (today included), purging older ones at start and hourly.
pub async fn run_retention(db: DatabaseConnection, tz: Tz, days: u32) {
    loop {
        let before = aggregate::today(tz).checked_sub_days(Days::new(u64::from(days) - 1));
        if let Some(before) = before {
            match purge(&db, tz, before).await {
                Ok(purged) if purged.events > 0 => {
                    tracing::info!(events = purged.events, %before, "purged click events past INKLINK_EVENT_RETENTION_DAYS");
                }
                Ok(_) => {}
                Err(err) => {
                    tracing::warn!(error = %err, "cannot purge old click events; will retry")
                }
            }
        }
        tokio::time::sleep(RETENTION_EVERY).await;
    }
}
