//! What a server keeps of finished days between requests, so that a dashboard over 90 days
//! reads only today: the union of the visitor and address bitmaps of a link (or of all
//! links) over a range's days before today, and the page views of every link over them (the
//! top-links table).
//!
//! A kept result is used only while the range's rows of `visit_day_stamp` are as they were
//! when it was read: as many, and none stamped by a later counting turn. Counting stamps a
//! link's day whenever it changes the day's visitor or address bitmaps, and the all-links day
//! whenever it counts anything on that day; turns are numbered up under the counting lock, so
//! a later change always carries a higher turn, and recounting a day deletes its stamps
//! first. A late click on a finished day, `stats rebuild`, or another instance counting in the
//! range is therefore seen by the next request, which reads the days again. Stamps are read
//! before what they vouch for, so a kept result never claims to be older than it is.

use super::days::today;
use super::daysets::{self, Union};
use super::dimension::ALL_LINKS;
use crate::db::sql::{statement, sum};
use chrono::NaiveDate;
use chrono_tz::Tz;
use roaring::RoaringBitmap;
use sea_orm::sea_query::Value;
use sea_orm::{ConnectionTrait, DbErr};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// What the kept results may hold in all, per kind. A union of many days of visitors
/// numbered as they first came is mostly long runs, a few kilobytes; scattered numbers cost
/// up to 8 KB per 65,536 visitors. Page views per link cost about 48 bytes a link.
const BUDGET_BYTES: usize = 64 << 20;
/// At most this many results of each kind are kept.
const ENTRIES: usize = 64;

/// Page views, effective and ineffective visits per link.
pub type LinkSums = HashMap<i64, (i64, i64, i64)>;

/// The results this process keeps, shared by its dashboards, CSV exports and API.
pub struct FinishedDays {
    /// Days before today in this zone (`INKLINK_TIMEZONE`) are finished.
    tz: Tz,
    unions: Store<(RoaringBitmap, RoaringBitmap)>,
    links: Store<LinkSums>,
}

impl FinishedDays {
    pub fn new(tz: Tz) -> Self {
        Self {
            tz,
            unions: Store::default(),
            links: Store::default(),
        }
    }

    /// The last day of `from..=to` to keep, and whether `to` is read from the database on
    /// every request: a range before today is kept whole, one that reaches today all but its
    /// last day (`None` for a range of today alone).
    fn split(&self, from: NaiveDate, to: NaiveDate) -> Option<(NaiveDate, bool)> {
        if to < today(self.tz) {
            return Some((to, false));
        }
        to.pred_opt()
            .filter(|through| *through >= from)
            .map(|through| (through, true))
    }

    /// Distinct visitors and addresses of `scope` (a link's id, or `ALL_LINKS`) over the days
    /// from `from` to `to`.
    pub async fn distinct(
        &self,
        db: &impl ConnectionTrait,
        scope: i64,
        from: NaiveDate,
        to: NaiveDate,
    ) -> Result<(u64, u64), DbErr> {
        let rows = "url_map_id = ?";
        let Some((through, live)) = self.split(from, to) else {
            let all = daysets::union(db, rows, scope.into(), from, to, false).await?;
            return Ok((all.visitors.len(), all.addresses.len()));
        };
        let key = (scope, from, through, mark(db, scope, from, through).await?);
        let sets = match self.unions.find(key) {
            Some(sets) => sets,
            None => {
                let Union {
                    mut visitors,
                    mut addresses,
                    ..
                } = daysets::union(db, rows, scope.into(), from, through, false).await?;
                visitors.optimize();
                addresses.optimize();
                let bytes = visitors.serialized_size() + addresses.serialized_size();
                self.unions
                    .keep(key, Arc::new((visitors, addresses)), bytes)
            }
        };
        if !live {
            return Ok((sets.0.len(), sets.1.len()));
        }
        let last = daysets::union(db, rows, scope.into(), to, to, false).await?;
        Ok((
            sets.0.union_len(&last.visitors),
            sets.1.union_len(&last.addresses),
        ))
    }

    /// Page views, effective and ineffective visits of every link with any over the days
    /// from `from` to `to`.
    pub async fn link_sums(
        &self,
        db: &impl ConnectionTrait,
        from: NaiveDate,
        to: NaiveDate,
    ) -> Result<LinkSums, DbErr> {
        let Some((through, live)) = self.split(from, to) else {
            return link_sums(db, from, to).await;
        };
        let key = (
            ALL_LINKS,
            from,
            through,
            mark(db, ALL_LINKS, from, through).await?,
        );
        let kept = match self.links.find(key) {
            Some(kept) => kept,
            None => {
                let sums = link_sums(db, from, through).await?;
                let bytes = sums.capacity() * 48;
                self.links.keep(key, Arc::new(sums), bytes)
            }
        };
        let mut sums = (*kept).clone();
        if !live {
            return Ok(sums);
        }
        for (link, (pv, effective, ineffective)) in link_sums(db, to, to).await? {
            let sum = sums.entry(link).or_default();
            (sum.0, sum.1, sum.2) = (sum.0 + pv, sum.1 + effective, sum.2 + ineffective);
        }
        Ok(sums)
    }
}

async fn link_sums(
    db: &impl ConnectionTrait,
    from: NaiveDate,
    to: NaiveDate,
) -> Result<LinkSums, DbErr> {
    let backend = db.get_database_backend();
    let sql = format!(
        "SELECT url_map_id, {} AS pv, {} AS effective, {} AS ineffective FROM visit_statistics \
         WHERE url_map_id > 0 AND stat_date >= ? AND stat_date <= ? GROUP BY url_map_id",
        sum(backend, "pv"),
        sum(backend, "effective"),
        sum(backend, "ineffective"),
    );
    let mut sums = LinkSums::new();
    for row in db
        .query_all_raw(statement(backend, &sql, vec![from.into(), to.into()]))
        .await?
    {
        sums.insert(
            row.try_get("", "url_map_id")?,
            (
                row.try_get("", "pv")?,
                row.try_get("", "effective")?,
                row.try_get("", "ineffective")?,
            ),
        );
    }
    Ok(sums)
}

/// The count of a range's stamped days and their highest turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Mark {
    days: i64,
    turn: Option<i64>,
}

async fn mark(
    db: &impl ConnectionTrait,
    scope: i64,
    from: NaiveDate,
    through: NaiveDate,
) -> Result<Mark, DbErr> {
    let backend = db.get_database_backend();
    let sql = "SELECT COUNT(*) AS days, MAX(turn) AS turn FROM visit_day_stamp \
               WHERE url_map_id = ? AND stat_date >= ? AND stat_date <= ?";
    let values = vec![Value::from(scope), from.into(), through.into()];
    let Some(row) = db.query_one_raw(statement(backend, sql, values)).await? else {
        return Ok(Mark {
            days: 0,
            turn: None,
        });
    };
    Ok(Mark {
        days: row.try_get("", "days")?,
        turn: row.try_get("", "turn")?,
    })
}

/// Scope, first day, last day kept, and the stamps' mark when it was read.
type Key = (i64, NaiveDate, NaiveDate, Mark);

struct Entry<T> {
    key: Key,
    value: Arc<T>,
    bytes: usize,
    used: u64,
}

/// Results of one kind, the least recently used dropped first.
struct Store<T> {
    entries: Mutex<(Vec<Entry<T>>, u64)>,
}

impl<T> Default for Store<T> {
    fn default() -> Self {
        Self {
            entries: Mutex::new((Vec::new(), 0)),
        }
    }
}

impl<T> Store<T> {
    fn find(&self, key: Key) -> Option<Arc<T>> {
        let mut kept = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        kept.1 += 1;
        let now = kept.1;
        let entry = kept.0.iter_mut().find(|entry| entry.key == key)?;
        entry.used = now;
        Some(entry.value.clone())
    }

    /// Keeps `value` (unless it alone is over the budget) and gives it back.
    fn keep(&self, key: Key, value: Arc<T>, bytes: usize) -> Arc<T> {
        if bytes > BUDGET_BYTES {
            return value;
        }
        let mut kept = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        kept.1 += 1;
        let used = kept.1;
        let entries = &mut kept.0;
        // What was kept of the same range is out of date.
        entries.retain(|entry| (entry.key.0, entry.key.1, entry.key.2) != (key.0, key.1, key.2));
        while entries.len() >= ENTRIES
            || entries.iter().map(|entry| entry.bytes).sum::<usize>() + bytes > BUDGET_BYTES
        {
            let Some(oldest) = entries
                .iter()
                .enumerate()
                .min_by_key(|(_, entry)| entry.used)
                .map(|(at, _)| at)
            else {
                break;
            };
            entries.swap_remove(oldest);
        }
        entries.push(Entry {
            key,
            value: value.clone(),
            bytes,
            used,
        });
        value
    }
}
