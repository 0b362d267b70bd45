//! Range UV and IP without reading every day again: the union of a range's days but its last
//! is kept in memory between requests, and only the last day's bitmaps are read and added.
//!
//! A kept union is used only while the range's rows of `visit_day_stamp` are as they were
//! when it was read: as many, and none stamped by a later counting turn. Every change to a
//! day's visitor or address bitmap stamps that day with the turn that made it (turns are
//! numbered up under the counting lock, so a later change always carries a higher turn), and
//! recounting a day deletes its stamps first. A late click on a finished day, a rebuild, or
//! another instance counting anything in the range is therefore seen by the next request,
//! which reads the union again. The stamps are read before the bitmaps, so a union never
//! claims to be older than it is.

use super::aggregate::statement;
use super::daysets::{self, Union};
use chrono::NaiveDate;
use roaring::RoaringBitmap;
use sea_orm::sea_query::Value;
use sea_orm::{ConnectionTrait, DbErr};
use std::sync::{Arc, Mutex};

/// What the kept unions may hold in all. A union of many days of visitors numbered as they
/// first came is mostly long runs, a few kilobytes; scattered numbers cost up to 8 KB per
/// 65,536 visitors.
const BUDGET_BYTES: usize = 64 << 20;
/// At most this many unions (ranges of links or all links) are kept.
const ENTRIES: usize = 64;

/// The count of a range's stamped days and their highest turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Mark {
    days: i64,
    turn: Option<i64>,
}

struct Kept {
    scope: i64,
    from: NaiveDate,
    through: NaiveDate,
    mark: Mark,
    sets: Arc<(RoaringBitmap, RoaringBitmap)>,
    bytes: usize,
    used: u64,
}

/// The unions this process keeps, shared by its dashboards, CSV exports and API.
#[derive(Default)]
pub struct RangeUnions {
    kept: Mutex<(Vec<Kept>, u64)>,
}

impl RangeUnions {
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
        let Some(through) = to.pred_opt().filter(|through| *through >= from) else {
            let all = daysets::union(db, rows, scope.into(), from, to, false).await?;
            return Ok((all.visitors.len(), all.addresses.len()));
        };
        let mark = mark(db, scope, from, through).await?;
        let sets = match self.find(scope, from, through, mark) {
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
                let sets = Arc::new((visitors, addresses));
                self.keep(scope, from, through, mark, sets.clone(), bytes);
                sets
            }
        };
        let last = daysets::union(db, rows, scope.into(), to, to, false).await?;
        Ok((
            sets.0.union_len(&last.visitors),
            sets.1.union_len(&last.addresses),
        ))
    }

    fn find(
        &self,
        scope: i64,
        from: NaiveDate,
        through: NaiveDate,
        mark: Mark,
    ) -> Option<Arc<(RoaringBitmap, RoaringBitmap)>> {
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        kept.1 += 1;
        let now = kept.1;
        let entry = kept
            .0
            .iter_mut()
            .find(|k| (k.scope, k.from, k.through, k.mark) == (scope, from, through, mark))?;
        entry.used = now;
        Some(entry.sets.clone())
    }

    fn keep(
        &self,
        scope: i64,
        from: NaiveDate,
        through: NaiveDate,
        mark: Mark,
        sets: Arc<(RoaringBitmap, RoaringBitmap)>,
        bytes: usize,
    ) {
        if bytes > BUDGET_BYTES {
            return;
        }
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        kept.1 += 1;
        let used = kept.1;
        let entries = &mut kept.0;
        // An older union of the same range is out of date.
        entries.retain(|k| (k.scope, k.from, k.through) != (scope, from, through));
        while entries.len() >= ENTRIES
            || entries.iter().map(|k| k.bytes).sum::<usize>() + bytes > BUDGET_BYTES
        {
            let Some(oldest) = entries
                .iter()
                .enumerate()
                .min_by_key(|(_, k)| k.used)
                .map(|(at, _)| at)
            else {
                break;
            };
            entries.swap_remove(oldest);
        }
        entries.push(Kept {
            scope,
            from,
            through,
            mark,
            sets,
            bytes,
            used,
        });
    }
}

async fn mark(
    db: &impl ConnectionTrait,
    scope: i64,
    from: NaiveDate,
    through: NaiveDate,
) -> Result<Mark, DbErr> {
    let backend = db.get_database_backend();
    let sql = "SELECT COUNT(*), MAX(turn) FROM visit_day_stamp \
               WHERE url_map_id = ? AND stat_date >= ? AND stat_date <= ?";
    let values = vec![Value::from(scope), from.into(), through.into()];
    let Some(row) = db.query_one_raw(statement(backend, sql, values)).await? else {
        return Ok(Mark {
            days: 0,
            turn: None,
        });
    };
    Ok(Mark {
        days: row.try_get_by_index(0)?,
        turn: row.try_get_by_index(1)?,
    })
}
