//! The five numbers of a day or of a range: what every dashboard, export, stored statistic and
//! API answer shows. Over a range UV and IP are distinct counts (see `report::range_totals`),
//! never sums of days.

use sea_orm::{DbErr, QueryResult};
use serde::Serialize;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Visits {
    /// Page views: successful redirects of people (bots excluded).
    pub pv: i64,
    /// Distinct visitors among page views.
    pub uv: i64,
    /// Distinct client addresses among page views.
    pub ip: i64,
    /// Successful redirects, bots included.
    pub effective: i64,
    /// Requests that were not redirected (unknown code, disabled or expired link).
    pub ineffective: i64,
}

impl Visits {
    /// Reads the five numbers from the columns named as the fields are.
    pub fn read(row: &QueryResult) -> Result<Self, DbErr> {
        Ok(Self {
            pv: row.try_get("", "pv")?,
            uv: row.try_get("", "uv")?,
            ip: row.try_get("", "ip")?,
            effective: row.try_get("", "effective")?,
            ineffective: row.try_get("", "ineffective")?,
        })
    }

    /// Any request at all (views, bots and failures).
    pub fn requests(&self) -> i64 {
        self.effective + self.ineffective
    }
}
