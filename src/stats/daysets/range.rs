//! A range's visitors and addresses: the union of its days' sets, for the reports and the
//! kept ranges (a turn's own sets are loaded by `DaySets`).

use super::{ADDED, ADDRESSES, VISITORS, WHOLE, decode, packed};
use crate::db::sql::statement;
use chrono::NaiveDate;
use roaring::RoaringBitmap;
use sea_orm::sea_query::Value;
use sea_orm::{ConnectionTrait, DbErr};
use std::collections::BTreeMap;

/// The visitors and addresses of the rows `rows` (a condition on `url_map_id` with one
/// value) over the days from `from` to `to`: the union of all their bitmaps (their rows and
/// their additions), and with `per_day` the size of each day's union.
#[derive(Default)]
pub struct Union {
    pub visitors: RoaringBitmap,
    pub addresses: RoaringBitmap,
    pub days: BTreeMap<NaiveDate, (u64, u64)>,
}

pub async fn union(
    db: &impl ConnectionTrait,
    rows: &str,
    value: Value,
    from: NaiveDate,
    to: NaiveDate,
    per_day: bool,
) -> Result<Union, DbErr> {
    let backend = db.get_database_backend();
    let one = format!(
        "WHERE {rows} AND kind IN (?, ?) AND value = '' AND stat_date >= ? AND stat_date <= ?"
    );
    let sql = format!(
        "SELECT stat_date, kind, members FROM {WHOLE} {one} \
         UNION ALL SELECT stat_date, kind, members FROM {ADDED} {one}"
    );
    let values = vec![
        value.clone(),
        VISITORS.into(),
        ADDRESSES.into(),
        from.into(),
        to.into(),
    ];
    let twice = [values.clone(), values].concat();
    let mut all = Union::default();
    let mut days: BTreeMap<NaiveDate, (RoaringBitmap, RoaringBitmap)> = BTreeMap::new();
    let mut add = |day: NaiveDate, visitors: bool, set: RoaringBitmap| {
        if per_day {
            let both = days.entry(day).or_default();
            match visitors {
                true => both.0 |= &set,
                false => both.1 |= &set,
            }
        }
        match visitors {
            true => all.visitors |= set,
            false => all.addresses |= set,
        }
    };
    for row in db.query_all_raw(statement(backend, &sql, twice)).await? {
        let day: NaiveDate = row.try_get("", "stat_date")?;
        let kind: String = row.try_get("", "kind")?;
        let members: Vec<u8> = row.try_get("", "members")?;
        add(day, kind == VISITORS, decode(&members)?);
    }
    // A link's days' sets packed (see `packed`), none of them also a row of its own.
    packed::range(db, rows, value, (from, to), |day, kind, set| {
        add(day, kind == VISITORS, set)
    })
    .await?;
    all.days = days
        .into_iter()
        .map(|(day, (v, i))| (day, (v.len(), i.len())))
        .collect();
    Ok(all)
}
