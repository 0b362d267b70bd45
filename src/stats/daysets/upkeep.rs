//! The day sets outside counting turns: a day forgotten to be counted again, and the sets of
//! versions before the bitmaps turned into bitmaps.

use super::numbers::Who;
use super::{ADDRESSES, DaySets, SetKey, VISITORS, numbers};
use crate::clickstore::row::Text;
use crate::db::sql::statement;
use chrono::NaiveDate;
use sea_orm::{ConnectionTrait, DatabaseConnection, DbErr};
use std::collections::HashMap;

/// Forgets the sets of `day` (to count it again).
pub async fn forget(txn: &impl ConnectionTrait, day: NaiveDate) -> Result<(), DbErr> {
    let backend = txn.get_database_backend();
    for sql in [
        "DELETE FROM visit_day_bits WHERE stat_date = ?",
        "DELETE FROM visit_day_added WHERE stat_date = ?",
        "DELETE FROM visit_day_stamp WHERE stat_date = ?",
    ] {
        txn.execute_raw(statement(backend, sql, vec![day.into()]))
            .await?;
    }
    // The links' days' packs go with their rows of values (`dayvalues::forget`).
    Ok(())
}

/// The earliest day with sets kept by versions before the bitmaps (`visit_day_set`), if any.
pub async fn oldest_old_set_day(db: &DatabaseConnection) -> Result<Option<NaiveDate>, DbErr> {
    let sql = "SELECT MIN(stat_date) AS oldest FROM visit_day_set";
    Ok(db
        .query_one_raw(statement(db.get_database_backend(), sql, vec![]))
        .await?
        .map(|row| row.try_get::<Option<NaiveDate>>("", "oldest"))
        .transpose()?
        .flatten())
}

/// Turns the visitor and address rows of `visit_day_set` for `day` into bitmaps and deletes
/// the day's rows. Its sets per value hold hashes of value and visitor that cannot be turned
/// into numbers: they are dropped (yesterday and today are counted again after the upgrade; a
/// late click on an earlier day may count its visitor again under a referrer, hour or
/// campaign value). The caller holds the counting turn `turn`.
pub async fn adopt_old_day(
    txn: &impl ConnectionTrait,
    turn: i64,
    day: NaiveDate,
) -> Result<(), DbErr> {
    let backend = txn.get_database_backend();
    let sql = "SELECT url_map_id, kind, who FROM visit_day_set \
               WHERE stat_date = ? AND kind IN (?, ?)";
    let values = vec![day.into(), VISITORS.into(), ADDRESSES.into()];
    // Link (or all links) and who; an empty `who` is nobody, as counting has it.
    let mut members: Vec<(i64, Who)> = Vec::new();
    for row in txn.query_all_raw(statement(backend, sql, values)).await? {
        let kind: String = row.try_get("", "kind")?;
        let kind = if kind == VISITORS {
            VISITORS
        } else {
            ADDRESSES
        };
        let who: String = row.try_get("", "who")?;
        if let Some(who) = Who::of(kind, who) {
            members.push((row.try_get("", "url_map_id")?, who));
        }
    }
    let numbers = numbers(txn, members.iter().map(|(_, who)| *who)).await?;
    let mut keys: Vec<SetKey> = Vec::new();
    let mut places: HashMap<(i64, &'static str), usize> = HashMap::new();
    for (scope, who) in &members {
        places.entry((*scope, who.kind)).or_insert_with(|| {
            keys.push((day, *scope, who.kind, Text::from("")));
            keys.len() - 1
        });
    }
    let mut sets = DaySets::load(txn, keys).await?;
    for (scope, who) in &members {
        sets.insert(places[&(*scope, who.kind)], numbers[&who.hash]);
    }
    sets.store(txn, turn).await?;
    let sql = "DELETE FROM visit_day_set WHERE stat_date = ?";
    txn.execute_raw(statement(backend, sql, vec![day.into()]))
        .await?;
    Ok(())
}
