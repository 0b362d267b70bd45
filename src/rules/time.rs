//! Dates and times as people and programs write them: the one reading of a link's expiry, its
//! valid-from time and an API key's expiry, whichever front end they come from.

use chrono::{DateTime, NaiveDate, NaiveDateTime, TimeZone, Utc};
use chrono_tz::Tz;

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, crate::i18n::Says)]
pub enum TimeError {
    #[error(
        "'{0}' is not a date and time such as 2026-12-31 23:59, or an RFC 3339 date-time such as 2026-12-31T23:59:00+08:00"
    )]
    Unreadable(String),
    #[error("'{0}' is not an RFC 3339 date-time such as 2026-12-31T23:59:59+08:00")]
    NotRfc3339(String),
    #[error("{local} does not exist in {zone} (the clocks skip it)")]
    Skipped { local: String, zone: Tz },
}

/// What a date without a time of day means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DateAlone {
    /// Its first second (a link opening on that day).
    Starts,
    /// Its last second (a link or key expiring on that day).
    Ends,
}

/// An RFC 3339 date-time anywhere; without an offset, a wall-clock time in `zone` (the
/// writer's time zone): `YYYY-MM-DD HH:MM[:SS]`, the same with `T` (what a browser's
/// date-time field sends), or a date alone.
pub fn parse(text: &str, zone: Tz, date_alone: DateAlone) -> Result<DateTime<Utc>, TimeError> {
    let text = text.trim();
    if let Ok(at) = rfc3339(text) {
        return Ok(at);
    }
    let local = [
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%dT%H:%M:%S",
    ]
    .iter()
    .find_map(|format| NaiveDateTime::parse_from_str(text, format).ok())
    .or_else(|| {
        let day = NaiveDate::parse_from_str(text, "%Y-%m-%d").ok()?;
        match date_alone {
            DateAlone::Starts => day.and_hms_opt(0, 0, 0),
            DateAlone::Ends => day.and_hms_opt(23, 59, 59),
        }
    })
    .ok_or_else(|| TimeError::Unreadable(text.to_owned()))?;
    local_to_utc(local, zone)
}

/// An RFC 3339 date-time, nothing else (what the REST API takes).
pub fn rfc3339(text: &str) -> Result<DateTime<Utc>, TimeError> {
    DateTime::parse_from_rfc3339(text.trim())
        .map(|at| at.to_utc())
        .map_err(|_| TimeError::NotRfc3339(text.to_owned()))
}

/// A wall-clock time in `zone` as UTC. In a repeated hour the earlier one counts; a time the
/// clocks skip does not exist and is refused.
pub fn local_to_utc(local: NaiveDateTime, zone: Tz) -> Result<DateTime<Utc>, TimeError> {
    zone.from_local_datetime(&local)
        .earliest()
        .map(|at| at.to_utc())
        .ok_or_else(|| TimeError::Skipped {
            local: local.format("%Y-%m-%d %H:%M").to_string(),
            zone,
        })
}
