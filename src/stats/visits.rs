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
    /// Reads the five numbers from the columns `at`, `at + 1`, … of a query result, in the
    /// order the fields are declared.
    pub fn read(row: &QueryResult, at: usize) -> Result<Self, DbErr> {
        Ok(Self {
            pv: row.try_get_by_index(at)?,
            uv: row.try_get_by_index(at + 1)?,
            ip: row.try_get_by_index(at + 2)?,
            effective: row.try_get_by_index(at + 3)?,
            ineffective: row.try_get_by_index(at + 4)?,
        })
    }

    /// Any request at all (views, bots and failures).
    pub fn requests(&self) -> i64 {
        self.effective + self.ineffective
    }
}
