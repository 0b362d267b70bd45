//! A link's day's breakdown values, packed in one row of `visit_day_values`: a JSON array of
//! `[dimension, value, pv, uv]`, read and written whole. Over many links nearly every click of
//! a burst is another link's day, and a row per dimension and value (about eleven a link's
//! day) was most of what a turn wrote: packed, counting over 100,000 links costs 71–80 µs of
//! CPU a click instead of 89–93 and writes 26 KB instead of 40 (bench/README.md). The
//! all-links rows stay a row per value in `visit_statistics_breakdown` (one of them a day,
//! however many links there are).
//!
//! The same row holds the link's day's small day sets, packed (`daysets::packed`), written
//! with its values in one statement.
//!
//! Only counting turns write these rows, one turn at a time (`tally::take_turn`), so a turn
//! reads a row, adds to it and writes it back under its lock.

use super::daysets::PackRow;
use super::dimension::Dimension;
use crate::clickstore::row::Text;
use crate::db::sql::{ask_packed_whole, by_keys, each_row_in, in_statements, statement};
use chrono::NaiveDate;
use sea_orm::sea_query::Value;
use sea_orm::{ConnectionTrait, DbBackend, DbErr};
use std::collections::{BTreeMap, HashMap};

const TABLE: &str = "visit_day_values";

/// Links' days read or written in one statement at most.
const AT_ONCE: usize = 500;

/// PV and UV by dimension (its stored name, [`Dimension::name`]) and value.
pub type DayValues = BTreeMap<(String, String), (i64, i64)>;

/// A value as a row's text holds it: dimension, value, PV, UV.
type Stored = (String, String, i64, i64);

/// Adds the values of a row's text to `into`.
fn add_text(into: &mut DayValues, text: &str) -> Result<(), DbErr> {
    let rows: Vec<Stored> = serde_json::from_str(text)
        .map_err(|err| DbErr::Custom(format!("{TABLE}.vals read as JSON: {err}")))?;
    add_rows(into, rows);
    Ok(())
}

/// Adds a row's values, parsed, to `into`.
fn add_rows(into: &mut DayValues, rows: Vec<Stored>) {
    for (dimension, value, pv, uv) in rows {
        let counts = into.entry((dimension, value)).or_default();
        counts.0 += pv;
        counts.1 += uv;
    }
}

/// A row's text: its values in their order, each once.
fn to_text(values: &DayValues) -> Result<String, DbErr> {
    let rows: Vec<(&str, &str, i64, i64)> = (values.iter())
        .map(|((dimension, value), (pv, uv))| (dimension.as_str(), value.as_str(), *pv, *uv))
        .collect();
    serde_json::to_string(&rows).map_err(|err| DbErr::Custom(format!("{TABLE}.vals: {err}")))
}

/// Calls `each` with the stored values of each of the links' days `keys` that has a row,
/// read [`AT_ONCE`] at a time so that only those are held parsed.
pub(super) async fn read(
    txn: &impl ConnectionTrait,
    keys: &[(NaiveDate, i64)],
    mut each: impl FnMut((NaiveDate, i64), DayValues),
) -> Result<(), DbErr> {
    let backend = txn.get_database_backend();
    for chunk in keys.chunks(AT_ONCE) {
        if backend == DbBackend::Sqlite {
            for (key, values) in read_sqlite(txn, chunk).await? {
                each(key, values);
            }
            continue;
        }
        let key = [("stat_date", "date"), ("url_map_id", "bigint")];
        let params = (chunk.iter())
            .flat_map(|(day, link)| [Value::from(*day), Value::from(*link)])
            .collect();
        let columns = "b.stat_date, b.url_map_id, b.vals";
        for row in txn
            .query_all_raw(by_keys(backend, TABLE, columns, &key, params))
            .await?
        {
            let day: NaiveDate = row.try_get("", "stat_date")?;
            let link: i64 = row.try_get("", "url_map_id")?;
            let mut values = DayValues::new();
            add_text(&mut values, &row.try_get::<String>("", "vals")?)?;
            each((day, link), values);
        }
    }
    Ok(())
}

/// [`read`] on SQLite: one statement naming the keys, answered in one text (sqlx hands
/// SQLite's rows over one at a time, waking a thread for each: see `ask_packed`).
async fn read_sqlite(
    txn: &impl ConnectionTrait,
    keys: &[(NaiveDate, i64)],
) -> Result<Vec<((NaiveDate, i64), DayValues)>, DbErr> {
    let named: Vec<(String, i64)> = (keys.iter())
        .map(|(day, link)| (crate::db::sql::day_text(*day), *link))
        .collect();
    let named = serde_json::to_string(&named).map_err(|err| DbErr::Custom(err.to_string()))?;
    let sql = format!(
        "SELECT b.stat_date, b.url_map_id, b.vals FROM json_each(?) AS w \
         CROSS JOIN {TABLE} AS b ON b.stat_date = w.value ->> 0 AND b.url_map_id = w.value ->> 1"
    );
    let columns = "stat_date, url_map_id, json(vals)";
    let text = ask_packed_whole(txn, columns, &sql, vec![named.into()]).await?;
    let rows: Vec<(String, i64, Vec<Stored>)> = serde_json::from_str(&text)
        .map_err(|err| DbErr::Custom(format!("{TABLE} read as JSON: {err}")))?;
    let mut out = Vec::with_capacity(rows.len());
    for (day, link, rows) in rows {
        let day = NaiveDate::parse_from_str(&day, "%Y-%m-%d")
            .map_err(|err| DbErr::Custom(format!("{TABLE}.stat_date '{day}': {err}")))?;
        let mut values = DayValues::new();
        add_rows(&mut values, rows);
        out.push(((day, link), values));
    }
    Ok(out)
}

/// A turn's PV and UV of a value of a link's day: day, link, dimension, value; PV, UV.
pub(super) type Added<'t> = ((NaiveDate, i64, Dimension, &'t Text), (i64, i64));

/// Adds a turn's PV and UV to the links' days' rows, and writes the links' days' packs of day
/// sets `packs` (in key order, see `daysets::packed`) with them: each row read, added to and
/// written back whole with its pack in one statement, in key order (see the module's note on
/// turns), [`AT_ONCE`] links' days at a time so that only those are held parsed.
pub(super) async fn add(
    txn: &impl ConnectionTrait,
    mut rows: Vec<Added<'_>>,
    packs: Vec<PackRow>,
) -> Result<(), DbErr> {
    rows.sort_unstable_by_key(|((day, link, _, _), _)| (*day, *link));
    let link_day = |((day, link, _, _), _): &Added| (*day, *link);
    let days: Vec<&[Added]> = rows.chunk_by(|a, b| link_day(a) == link_day(b)).collect();
    let mut packs = packs.into_iter().peekable();
    // Packs of links' days the turn added no values to: none, as every page view adds to
    // the breakdown, but written all the same.
    let mut alone = Vec::new();
    for part in days.chunks(AT_ONCE) {
        let keys: Vec<(NaiveDate, i64)> = part.iter().map(|adds| link_day(&adds[0])).collect();
        let mut stored = HashMap::with_capacity(keys.len());
        read(txn, &keys, |key, values| {
            stored.insert(key, values);
        })
        .await?;
        let mut written = Vec::with_capacity(keys.len());
        let mut with_packs = Vec::with_capacity(keys.len());
        for (key, adds) in keys.into_iter().zip(part) {
            alone.extend(std::iter::from_fn(|| packs.next_if(|pack| pack.0 < key)));
            let mut values = stored.remove(&key).unwrap_or_default();
            for ((_, _, dimension, value), (pv, uv)) in *adds {
                let counts =
                    (values.entry((dimension.name().to_owned(), value.to_string()))).or_default();
                counts.0 += pv;
                counts.1 += uv;
            }
            let text = to_text(&values)?;
            match packs.next_if(|pack| pack.0 == key) {
                Some((_, apart, sets)) => with_packs.push((key, text, apart, sets)),
                None => written.push((key, text)),
            }
        }
        write(txn, &written).await?;
        write_with_packs(txn, &with_packs).await?;
    }
    alone.extend(packs);
    super::daysets::write_packs(txn, &alone).await
}

/// Writes links' days' rows whole (their packs of day sets as they are).
async fn write(
    txn: &impl ConnectionTrait,
    rows: &[((NaiveDate, i64), String)],
) -> Result<(), DbErr> {
    let backend = txn.get_database_backend();
    let tail = match backend {
        DbBackend::MySql => "ON DUPLICATE KEY UPDATE vals = VALUES(vals)",
        _ => "ON CONFLICT (stat_date, url_map_id) DO UPDATE SET vals = excluded.vals",
    };
    for rows in in_statements(rows, AT_ONCE, |(_, text)| text.len()) {
        let sql = format!(
            "INSERT INTO {TABLE} (stat_date, url_map_id, vals) VALUES {} {tail}",
            vec!["(?, ?, ?)"; rows.len()].join(", ")
        );
        let mut values = Vec::with_capacity(rows.len() * 3);
        for ((day, link), text) in rows {
            values.extend([Value::from(*day), Value::from(*link), Value::from(text)]);
        }
        txn.execute_raw(statement(backend, &sql, values)).await?;
    }
    Ok(())
}

/// A link's day's row with its pack of day sets: its key, its values' text, whether some of its
/// sets are rows of their own, the pack.
type WithPack = ((NaiveDate, i64), String, bool, Vec<u8>);

/// Writes links' days' rows whole with their packs of day sets (whether some sets are rows of
/// their own, and the pack): one row written instead of two, which cost SQLite 16.7 µs of CPU
/// a link's day counted before instead of 6.7 (bench/packed_row.py).
async fn write_with_packs(txn: &impl ConnectionTrait, rows: &[WithPack]) -> Result<(), DbErr> {
    let backend = txn.get_database_backend();
    let tail = match backend {
        DbBackend::MySql => {
            "ON DUPLICATE KEY UPDATE vals = VALUES(vals), apart = VALUES(apart), sets = VALUES(sets)"
        }
        _ => {
            "ON CONFLICT (stat_date, url_map_id) DO UPDATE SET vals = excluded.vals, \
             apart = excluded.apart, sets = excluded.sets"
        }
    };
    let size = |(_, text, _, sets): &WithPack| text.len() + sets.len();
    for rows in in_statements(rows, AT_ONCE, size) {
        let sql = format!(
            "INSERT INTO {TABLE} (stat_date, url_map_id, vals, apart, sets) VALUES {} {tail}",
            vec!["(?, ?, ?, ?, ?)"; rows.len()].join(", ")
        );
        let mut values = Vec::with_capacity(rows.len() * 5);
        for ((day, link), text, apart, sets) in rows {
            values.extend([
                Value::from(*day),
                Value::from(*link),
                Value::from(text),
                Value::from(i16::from(*apart)),
                Value::from(sets.clone()),
            ]);
        }
        txn.execute_raw(statement(backend, &sql, values)).await?;
    }
    Ok(())
}

/// The values of `links`' days from `from` to `to`, summed; asked 500 links to a statement,
/// each statement's rows let go before the next (a tag may have a campaign's links, one per
/// recipient).
pub(super) async fn summed(
    db: &impl ConnectionTrait,
    links: &[i64],
    from: NaiveDate,
    to: NaiveDate,
) -> Result<DayValues, DbErr> {
    let mut out = DayValues::new();
    let select = format!("SELECT vals FROM {TABLE} WHERE url_map_id");
    let range = [Value::from(from), Value::from(to)];
    let rest = (" AND stat_date >= ? AND stat_date <= ?", &range[..]);
    each_row_in(db, (&select, links), rest, |row| {
        add_text(&mut out, &row.try_get::<String>("", "vals")?)
    })
    .await?;
    Ok(out)
}

/// Forgets `day`'s rows (a recount).
pub(super) async fn forget(txn: &impl ConnectionTrait, day: NaiveDate) -> Result<(), DbErr> {
    let backend = txn.get_database_backend();
    let sql = format!("DELETE FROM {TABLE} WHERE stat_date = ?");
    txn.execute_raw(statement(backend, &sql, vec![day.into()]))
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_reads_back_as_written_and_adds_up() {
        let mut values = DayValues::new();
        values.insert(("browser".into(), "微信 \"8\"\t\n".into()), (3, 2));
        values.insert(("hour".into(), "07".into()), (1, 1));
        let text = to_text(&values).unwrap();
        let mut read = DayValues::new();
        add_text(&mut read, &text).unwrap();
        assert_eq!(read, values);
        // As PostgreSQL's `json_agg` spells what the migration packed.
        add_text(&mut read, r#"[["hour", "07", 2, 1], ["os", "iOS", 1, 1]]"#).unwrap();
        assert_eq!(read[&("hour".into(), "07".into())], (3, 2));
        assert_eq!(read[&("os".into(), "iOS".into())], (1, 1));
        assert!(add_text(&mut read, "[[\"os\"]]").is_err());
    }
}
