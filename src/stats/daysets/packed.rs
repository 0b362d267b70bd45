//! A link's day's small day sets packed in one value of its row of `visit_day_values` (`sets`,
//! beside its breakdown values; migration 39; the format is `migration::day_pack`'s). Over many
//! links nearly every click of a burst is another link's day, each with about six sets of a
//! visitor or a few: as rows of their own they cost SQLite 38–49 µs of CPU a link's day to
//! write (bench/breakdown_layout.py). A counting turn writes a link's day's values and its pack
//! in one statement (`dayvalues::add`).
//!
//! A pack holds every set of its link's day that is not a row of its own: a set is packed
//! until it grows past [`PACKED_MAX`], then it is written as a row of its own (with its
//! additions apart, as the all-links sets are), and the row is marked `apart`. A reader of a
//! row marked `apart` looks for the sets it does not find in its pack among the rows too; one
//! not marked holds every set of its link's day in its pack. A link's day without a row, or
//! without a pack and not marked, has no sets.

use crate::clickstore::row::Text;
use crate::db::sql::{by_keys, in_statements, statement};
use chrono::NaiveDate;
use migration::day_pack;
use roaring::RoaringBitmap;
use sea_orm::sea_query::Value;
use sea_orm::{ConnectionTrait, DbBackend, DbErr};

const TABLE: &str = "visit_day_values";

/// The serialized size past which a link's day's set is a row of its own: a pack is rewritten
/// whole by every turn that adds to any of its sets.
pub(super) const PACKED_MAX: usize = 512;

/// A link's day: day, link.
pub(super) type LinkDay = (NaiveDate, i64);

/// A pack as read: its link's day, whether some sets are rows of their own, and its sets
/// (kind, value, members).
pub(super) struct Read {
    pub day: LinkDay,
    pub apart: bool,
    pub sets: Vec<(String, Text, RoaringBitmap)>,
}

/// Packs asked for by their keys in one statement at most.
const ASKED: usize = 500;

/// The packs of `days` that are stored.
pub(super) async fn read(txn: &impl ConnectionTrait, days: &[LinkDay]) -> Result<Vec<Read>, DbErr> {
    let backend = txn.get_database_backend();
    let key = [("stat_date", "date"), ("url_map_id", "bigint")];
    let columns = "b.stat_date, b.url_map_id, b.apart, b.sets";
    let mut out = Vec::with_capacity(days.len());
    for chunk in days.chunks(ASKED) {
        let params = (chunk.iter())
            .flat_map(|(day, link)| [Value::from(*day), Value::from(*link)])
            .collect();
        for row in txn
            .query_all_raw(by_keys(backend, TABLE, columns, &key, params))
            .await?
        {
            let day: NaiveDate = row.try_get("", "stat_date")?;
            let link: i64 = row.try_get("", "url_map_id")?;
            let apart: i16 = row.try_get("", "apart")?;
            let packed: Option<Vec<u8>> = row.try_get("", "sets")?;
            out.push(Read {
                day: (day, link),
                apart: apart != 0,
                sets: unpack(packed.as_deref().unwrap_or_default())?,
            });
        }
    }
    Ok(out)
}

/// The sets of a pack.
pub(super) fn unpack(bytes: &[u8]) -> Result<Vec<(String, Text, RoaringBitmap)>, DbErr> {
    let entries = day_pack::entries(bytes).map_err(DbErr::Custom)?;
    (entries.into_iter())
        .map(|set| {
            let members = super::decode(set.members)?;
            Ok((set.kind.to_owned(), Text::from(set.value), members))
        })
        .collect()
}

/// A pack's row: its sets (kind, value, members) in the order given.
pub(super) fn pack<'a>(
    sets: impl IntoIterator<Item = (&'a str, &'a str, &'a RoaringBitmap)>,
) -> Result<Vec<u8>, DbErr> {
    let mut out = Vec::new();
    for (kind, value, set) in sets {
        day_pack::push(&mut out, kind, value, &super::serialized(set)?);
    }
    Ok(out)
}

/// A pack to write: its link's day, whether some sets are rows of their own, the pack.
pub type Written = (LinkDay, bool, Vec<u8>);

/// Writes `packs` whole, keeping their rows' values (a new row has none). Counting writes a
/// link's day's pack with its values instead (`dayvalues::add`).
pub(super) async fn write(txn: &impl ConnectionTrait, packs: &[Written]) -> Result<(), DbErr> {
    let backend = txn.get_database_backend();
    let tail = match backend {
        DbBackend::MySql => "ON DUPLICATE KEY UPDATE apart = VALUES(apart), sets = VALUES(sets)",
        _ => {
            "ON CONFLICT (stat_date, url_map_id) \
             DO UPDATE SET apart = excluded.apart, sets = excluded.sets"
        }
    };
    for chunk in in_statements(packs, 300, |(_, _, sets)| sets.len()) {
        let sql = format!(
            "INSERT INTO {TABLE} (stat_date, url_map_id, vals, apart, sets) VALUES {} {tail}",
            vec!["(?, ?, '[]', ?, ?)"; chunk.len()].join(", ")
        );
        let mut values = Vec::with_capacity(chunk.len() * 4);
        for ((day, link), apart, members) in chunk {
            values.extend([
                Value::from(*day),
                Value::from(*link),
                Value::from(i16::from(*apart)),
                Value::from(members.clone()),
            ]);
        }
        txn.execute_raw(statement(backend, &sql, values)).await?;
    }
    Ok(())
}

/// The visitors' and addresses' sets of the packs of the links `rows` (a condition on
/// `url_map_id` with one value) over the days from `from` to `to`: day, kind, members.
pub(super) async fn range(
    db: &impl ConnectionTrait,
    rows: &str,
    value: Value,
    (from, to): (NaiveDate, NaiveDate),
    mut each: impl FnMut(NaiveDate, &str, RoaringBitmap),
) -> Result<(), DbErr> {
    let backend = db.get_database_backend();
    let sql = format!(
        "SELECT stat_date, sets FROM {TABLE} \
         WHERE {rows} AND stat_date >= ? AND stat_date <= ? AND sets IS NOT NULL"
    );
    let values = vec![value, from.into(), to.into()];
    for row in db.query_all_raw(statement(backend, &sql, values)).await? {
        let day: NaiveDate = row.try_get("", "stat_date")?;
        let packed: Vec<u8> = row.try_get("", "sets")?;
        for set in day_pack::entries(&packed).map_err(DbErr::Custom)? {
            if set.value.is_empty() && [super::VISITORS, super::ADDRESSES].contains(&set.kind) {
                each(day, set.kind, super::decode(set.members)?);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pack_reads_back_as_written() {
        let big: RoaringBitmap = (0..3_000).step_by(3).collect();
        let sets = [
            ("v", "", RoaringBitmap::from_iter([1, 5, 9])),
            (
                "r",
                "https://例え.jp/?q=\"😀\"",
                RoaringBitmap::from_iter([5]),
            ),
            ("h", "07", RoaringBitmap::new()),
            ("c", &"x".repeat(255), big),
        ];
        let bytes = pack(sets.iter().map(|(k, v, s)| (*k, *v, s))).unwrap();
        let back = unpack(&bytes).unwrap();
        assert_eq!(back.len(), sets.len());
        for ((kind, value, set), (k, v, s)) in back.iter().zip(&sets) {
            assert_eq!((kind.as_str(), value.as_ref(), set), (*k, *v, s));
        }
        assert!(unpack(&[]).unwrap().is_empty());
        // Cut anywhere, it says it is damaged rather than reading past its end.
        for cut in 1..bytes.len() {
            let read = day_pack::entries(&bytes[..cut]);
            assert!(
                read.is_err() || read.unwrap().len() < sets.len(),
                "cut at {cut}"
            );
        }
    }
}
