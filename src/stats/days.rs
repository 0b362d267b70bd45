//! Days in the statistics time zone: which day an instant falls on and where a day begins.

use chrono::{NaiveDate, NaiveDateTime, TimeZone, Utc};
use chrono_tz::Tz;

pub fn today(tz: Tz) -> NaiveDate {
    Utc::now().with_timezone(&tz).date_naive()
}

pub fn local_day(utc: NaiveDateTime, tz: Tz) -> NaiveDate {
    tz.from_utc_datetime(&utc).date_naive()
}

/// The UTC instant at which `day` begins in `tz`. Where a clock change skips midnight, the
/// day begins at the first minute that exists.
pub fn day_start(day: NaiveDate, tz: Tz) -> Option<NaiveDateTime> {
    let midnight = day.and_hms_opt(0, 0, 0)?;
    (0..=180)
        .find_map(|minutes| {
            let local = midnight + chrono::Duration::minutes(minutes);
            tz.from_local_datetime(&local).earliest()
        })
        .map(|at| at.naive_utc())
}

/// `[start, end)` of `day` in UTC.
pub fn day_range(day: NaiveDate, tz: Tz) -> Option<(NaiveDateTime, NaiveDateTime)> {
    Some((day_start(day, tz)?, day_start(day.succ_opt()?, tz)?))
}
