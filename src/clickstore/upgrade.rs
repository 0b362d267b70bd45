//! The first start after the upgrade to the lean click store moves the clicks of the old
//! table (`transform_event_record`, one wide row of text per click) into it, a batch at a
//! time, and drops the old table once it is empty. The dictionaries' digests are computed
//! here in Rust, the same way the writer does, which portable SQL could not.
//!
//! A batch is stored (clicks already stored are skipped, so a batch moved twice by a crash or
//! by two instances starting at once is stored once), with its counted flags, then deleted
//! from the old table.

use super::insert::ClickStore;
use super::row::{Address, Digest, EventRow, Identity, Text};
use crate::db::sql::statement;
use migration::SchemaManager;
use sea_orm::{ConnectionTrait, DatabaseConnection, DbErr, Value};

const OLD: &str = "transform_event_record";
/// Old rows moved per batch.
const MOVE_BATCH: u64 = 5_000;

/// Moves every click of the old table into the click store; returns how many it moved.
pub async fn move_old_clicks(db: &DatabaseConnection) -> Result<u64, DbErr> {
    if !SchemaManager::new(db).has_table(OLD).await? {
        return Ok(0);
    }
    match move_batches(db).await {
        Ok(moved) => Ok(moved),
        // Instances starting together each find the old table; the first to empty it drops
        // it under the others' feet. Its clicks are then all moved, which is what we wanted.
        Err(err) if !SchemaManager::new(db).has_table(OLD).await? => {
            tracing::debug!(error = %err, "another instance moved the old clicks");
            Ok(0)
        }
        Err(err) => Err(err),
    }
}

async fn move_batches(db: &DatabaseConnection) -> Result<u64, DbErr> {
    let backend = db.get_database_backend();
    let store = ClickStore::new();
    let mut moved = 0;
    loop {
        let sql = format!(
            "SELECT id, event_key, record_time, compression_code, url_map_id, host, client_ip, \
             unique_identity, user_agent, referer, referer_host, query_string, country, \
             province, city, browser, browser_version, os, os_version, device, is_bot, \
             transform_status, failure_reason, target_rule, counted \
             FROM {OLD} ORDER BY id LIMIT {MOVE_BATCH}"
        );
        let found = db.query_all_raw(statement(backend, &sql, vec![])).await?;
        let Some(last) = found.last() else { break };
        let last: i64 = last.try_get("", "id")?;
        let mut rows = Vec::with_capacity(found.len());
        let mut counted = Vec::with_capacity(found.len());
        for row in &found {
            let text = |column: &str| -> Result<Text, DbErr> {
                Ok(row
                    .try_get::<Option<String>>("", column)?
                    .map(Text::from)
                    .unwrap_or_default())
            };
            let id: i64 = row.try_get("", "id")?;
            // Clicks stored before event keys had none: one made of the old id, never given
            // to a click otherwise (the high half is an instance's random number).
            let event_key = Some(text("event_key")?)
                .filter(|key| !key.is_empty())
                .map_or(Digest::of(id as u128), |key| Digest::parse(&key));
            let identity = Identity {
                event_key,
                record_time: row.try_get("", "record_time")?,
                client_ip: Address::parse(&text("client_ip")?),
                unique_identity: Digest::parse(&text("unique_identity")?),
            };
            rows.push(EventRow::read(row, identity)?);
            counted.push(row.try_get::<bool>("", "counted")?);
        }
        store.insert_counted(db, &rows, &counted).await?;
        let delete = format!("DELETE FROM {OLD} WHERE id <= ?");
        db.execute_raw(statement(backend, &delete, vec![Value::from(last)]))
            .await?;
        moved += rows.len() as u64;
        if moved % 100_000 < MOVE_BATCH {
            tracing::info!(clicks = moved, "moving clicks into the lean click store");
        }
    }
    db.execute_unprepared(&format!("DROP TABLE IF EXISTS {OLD}"))
        .await?;
    Ok(moved)
}
