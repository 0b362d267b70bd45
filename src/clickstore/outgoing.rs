//! Stored clicks on their way to webhook subscriptions of `link.clicked`. The click writer lists
//! each click it adds in `click_outgoing` in the transaction that stores it (as it lists it
//! for counting), so that every stored click is handed on exactly once, however late it was
//! stored (a spooled or journalled click) and whatever instance stored it, and without waiting
//! for counting; the webhooks' dispatcher takes them off the list in batches. Nothing is
//! listed while no subscription wants clicks.

pub use super::insert::{OUTGOING, WANTED, WANTED_PATTERN};
use super::stored::{self, Stored};
use crate::db::sql::statement;
use sea_orm::{ConnectionTrait, DbBackend, DbErr, Value};

/// Keys per statement: SQLite's chains of pairs stay short (see [`matching`]).
fn chunk(backend: DbBackend) -> usize {
    match backend {
        DbBackend::Sqlite => 250,
        _ => 2_000,
    }
}

/// Clicks read off the list, still on it.
pub struct Listed {
    /// What was listed (time and key), for [`forget`].
    pub keys: Vec<(i64, Vec<u8>)>,
    /// Those of them still stored (a click purged meanwhile is not), in key order.
    pub clicks: Vec<Stored>,
}

/// The oldest `limit` listed clicks, left on the list: [`forget`] takes them off once they
/// are handed on. Read outside the hand-over's write transaction, so that on SQLite the
/// click writer does not wait for the reading.
pub async fn peek(db: &impl ConnectionTrait, limit: u64) -> Result<Listed, DbErr> {
    let backend = db.get_database_backend();
    let sql = format!("SELECT at, event_key FROM {OUTGOING} ORDER BY at, event_key LIMIT {limit}");
    let rows = db.query_all_raw(statement(backend, &sql, vec![])).await?;
    let keys = rows
        .iter()
        .map(|row| Ok((row.try_get("", "at")?, row.try_get("", "event_key")?)))
        .collect::<Result<Vec<(i64, Vec<u8>)>, DbErr>>()?;
    let mut clicks = Vec::with_capacity(keys.len());
    let mut dictionaries = stored::Dictionaries::default();
    for chunk in keys.chunks(self::chunk(backend)) {
        let (filter, values) = matching(backend, "c.", chunk);
        let taken: std::collections::HashSet<(i64, &[u8])> = chunk
            .iter()
            .map(|(at, key)| (*at, key.as_slice()))
            .collect();
        let read = stored::read_with(db, &filter, values, None, &mut dictionaries).await?;
        clicks.extend(
            read.into_iter()
                .filter(|click| taken.contains(&(click.at, click.key.as_slice()))),
        );
    }
    clicks.sort_by(|a, b| (a.at, &a.key).cmp(&(b.at, &b.key)));
    Ok(Listed { keys, clicks })
}

/// Takes the clicks `keys` off the list; false, when some were not on it any more (another
/// instance took them first: the caller rolls back).
pub async fn forget(db: &impl ConnectionTrait, keys: &[(i64, Vec<u8>)]) -> Result<bool, DbErr> {
    let backend = db.get_database_backend();
    let mut taken = 0;
    for chunk in keys.chunks(self::chunk(backend)) {
        let (filter, values) = matching(backend, "", chunk);
        let sql = format!("DELETE FROM {OUTGOING} WHERE {filter}");
        taken += db
            .execute_raw(statement(backend, &sql, values))
            .await?
            .rows_affected();
    }
    Ok(taken == keys.len() as u64)
}

/// A condition matching the clicks `keys` (columns prefixed by `prefix`).
///
/// PostgreSQL and MySQL: the clicks whose time is among the keys' times and whose event key
/// is among the keys' event keys. An event key is one click's own (a digest of its instance
/// and sequence), so a row matching both is one of `keys`; the times are looked up in the
/// index at once, where a chain of `(at = ? AND event_key = ?) OR …` pairs cost PostgreSQL
/// 0.7 s for 10,000 clicks (0.2 s so). SQLite keeps the chain: it read 10,000 clicks by it in
/// 0.2 s, and took 7 s over the two lists.
fn matching(backend: DbBackend, prefix: &str, keys: &[(i64, Vec<u8>)]) -> (String, Vec<Value>) {
    if backend == DbBackend::Sqlite {
        let pair = format!("({prefix}at = ? AND {prefix}event_key = ?)");
        let filter = format!("({})", vec![pair.as_str(); keys.len()].join(" OR "));
        let values = keys
            .iter()
            .flat_map(|(at, key)| [Value::from(*at), Value::from(key.clone())])
            .collect();
        return (filter, values);
    }
    let mut times: Vec<i64> = keys.iter().map(|(at, _)| *at).collect();
    times.sort_unstable();
    times.dedup();
    let (first, last) = (times[0], times[times.len() - 1]);
    let marks = |n: usize| vec!["?"; n].join(", ");
    // The range says nothing the lists do not, but it is what lets PostgreSQL's planner see
    // how few rows a chunk is: from the lists alone it read the whole list table for every
    // chunk of every hand-over (92.7 million rows in one webhook burst, bench/README.md).
    let filter = format!(
        "{prefix}at BETWEEN ? AND ? AND {prefix}at IN ({}) AND {prefix}event_key IN ({})",
        marks(times.len()),
        marks(keys.len())
    );
    let values = [first, last]
        .into_iter()
        .chain(times)
        .map(Value::from)
        .chain(keys.iter().map(|(_, key)| Value::from(key.clone())))
        .collect();
    (filter, values)
}
