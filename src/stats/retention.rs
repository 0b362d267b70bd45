//! Retention of raw click events. Statistics are kept for ever; the events they were counted
//! from can go: `inklink events purge --before DATE`, or INKLINK_EVENT_RETENTION_DAYS on the
//! server. A purge first counts every click still waiting to be counted, then records the day
//! before which events are gone (those days are never counted again, so their statistics stay
//! exactly as they were), then deletes the events in small batches, so that neither the click
//! writer nor the dashboards wait behind one huge delete.

use super::days;
use super::frozen::{freeze_before, purged_before};
use chrono::{Days, NaiveDate};
use chrono_tz::Tz;
use sea_orm::{DatabaseConnection, DbErr};
use std::time::Duration;

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
    let today = days::today(tz);
    if before > today {
        return Err(PurgeError::NotPast { before, today, tz });
    }
    let Some(cutoff) = days::day_start(before, tz) else {
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
    let deleted = crate::clickstore::purge::before(db, cutoff).await?;
    Ok(Purged {
        events: deleted.clicks,
        counted,
        values: deleted.values,
    })
}

/// How often the server applies INKLINK_EVENT_RETENTION_DAYS.
const RETENTION_EVERY: Duration = Duration::from_secs(3600);

/// Keeps `days` days of events (today included), purging older ones at start and hourly.
pub async fn run_retention(db: DatabaseConnection, tz: Tz, days: u32) {
    loop {
        let before = days::today(tz).checked_sub_days(Days::new(u64::from(days) - 1));
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
