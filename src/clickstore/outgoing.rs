//! Stored clicks on their way to webhook subscriptions of `link.clicked`. The click writer lists
//! each click it adds in `click_outgoing` in the transaction that stores it (as it lists it
//! for counting), so that every stored click is handed on exactly once, however late it was
//! stored (a spooled or journalled click) and whatever instance stored it, and without waiting
//! for counting; the webhooks' dispatcher takes them off the list in batches. Nothing is
//! listed while no subscription wants clicks.

pub use super::insert::{OUTGOING, WANTED, WANTED_PATTERN};
use super::stored::{self, Stored};
use crate::db::sql::statement;
use sea_orm::{ConnectionTrait, DbErr, Value};

/// Keys per statement.
const CHUNK: usize = 250;

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
    for chunk in keys.chunks(CHUNK) {
        let marks = vec!["(c.at = ? AND c.event_key = ?)"; chunk.len()].join(" OR ");
        let values = marked(chunk);
        let filter = format!("({marks})");
        let limit = Some(chunk.len() as u64);
        clicks.extend(stored::read_with(db, &filter, values, limit, &mut dictionaries).await?);
    }
    clicks.sort_by(|a, b| (a.at, &a.key).cmp(&(b.at, &b.key)));
    Ok(Listed { keys, clicks })
}

/// Takes the clicks `keys` off the list; false, when some were not on it any more (another
/// instance took them first: the caller rolls back).
pub async fn forget(db: &impl ConnectionTrait, keys: &[(i64, Vec<u8>)]) -> Result<bool, DbErr> {
    let backend = db.get_database_backend();
    let mut taken = 0;
    for chunk in keys.chunks(CHUNK) {
        let marks = vec!["(at = ? AND event_key = ?)"; chunk.len()].join(" OR ");
        let sql = format!("DELETE FROM {OUTGOING} WHERE {marks}");
        taken += db
            .execute_raw(statement(backend, &sql, marked(chunk)))
            .await?
            .rows_affected();
    }
    Ok(taken == keys.len() as u64)
}

fn marked(keys: &[(i64, Vec<u8>)]) -> Vec<Value> {
    keys.iter()
        .flat_map(|(at, key)| [Value::from(*at), Value::from(key.clone())])
        .collect()
}

/// How many clicks wait to be handed on.
pub async fn waiting(db: &impl ConnectionTrait) -> Result<u64, DbErr> {
    let backend = db.get_database_backend();
    let sql = format!("SELECT COUNT(*) AS n FROM {OUTGOING}");
    let row = db.query_one_raw(statement(backend, &sql, vec![])).await?;
    Ok(row
        .map(|r| r.try_get::<i64>("", "n"))
        .transpose()?
        .unwrap_or(0) as u64)
}
