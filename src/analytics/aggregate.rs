//! Daily statistics: what they hold and where they are kept (`tally` counts each stored click
//! into them once, and recounts days from their events for `stats rebuild`).
//!
//! Days before the last purge of raw events (`retention`) are final: they are not recounted.
//!
//! Definitions: a page view (PV) is a successful redirect of a visitor that is not a bot; UV
//! counts distinct visitor identities and IP distinct client addresses among page views;
//! effective counts every successful redirect (bots included), ineffective every failure.

pub use super::days::{day_range, day_start, local_day, today};
use crate::db::sql::statement;
use chrono::NaiveDate;
use sea_orm::{ConnectionTrait, DbErr};

/// `url_map_id` of the rows that count every link together (and unknown codes).
pub const ALL_LINKS: i64 = -1;
/// `url_map_id` of the visits to codes that match no link.
pub const UNKNOWN_LINK: i64 = 0;

/// Breakdown dimensions, as stored in `visit_statistics_breakdown.dimension`, in the order
/// dashboards show them; `hour` is drawn as its own chart.
pub const DIMENSIONS: [&str; 11] = [
    "country",
    "province",
    "city",
    "browser",
    "os",
    "device",
    "referrer",
    "utm_source",
    "utm_medium",
    "utm_campaign",
    "channel",
];

/// The breakdown of page views by hour of the day (`00` to `23`), kept beside [`DIMENSIONS`]
/// and drawn as its own chart.
pub const HOUR: &str = "hour";

/// The day before which raw events were purged (see `retention`), if any purge happened:
/// the statistics of earlier days are final.
pub async fn purged_before(db: &impl ConnectionTrait) -> Result<Option<NaiveDate>, DbErr> {
    let backend = db.get_database_backend();
    let sql = "SELECT purged_before FROM event_purge WHERE id = 1";
    match db.query_one_raw(statement(backend, sql, vec![])).await? {
        Some(row) => Ok(Some(row.try_get_by_index(0)?)),
        None => Ok(None),
    }
}
