//! Handing stored clicks on to subscriptions of `link.clicked`: the click writer lists each
//! click it stores once (`clickstore::outgoing`), and one instance at a time (the
//! `webhook_turn` row's lock) takes up to [`CLICKS_PER_TURN`] of them into messages of up to
//! [`CLICKS_PER_MESSAGE`] for each subscription's outbox (of at most `outbox_limit` waiting
//! messages), which [`super::deliver`] sends.

use crate::clickstore::stored::Stored;
use crate::db::sql::statement;
use crate::metrics::Metrics;
use crate::rules::webhook::EventType;
use crate::services::outbox::{self, DROPPED, WAITING};
use sea_orm::{ConnectionTrait, DatabaseConnection, DbErr, Value};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering::Relaxed;

/// Clicks one `link.clicked` message carries at most.
pub const CLICKS_PER_MESSAGE: u64 = 1_000;
/// Clicks one hand-over takes at most (in one transaction): ten messages' worth.
pub const CLICKS_PER_TURN: u64 = 10 * CLICKS_PER_MESSAGE;

/// Takes up to [`CLICKS_PER_TURN`] stored clicks and puts them, in messages of up to
/// [`CLICKS_PER_MESSAGE`], in the outbox of each subscription that wants them, where more than
/// `outbox_limit` click messages waiting drops the oldest; returns how many clicks were taken.
///
/// The clicks are read and the messages written out before the write transaction: on SQLite
/// it holds the one write lock the click writer needs (reading 1,000 clicks inside it held
/// the writer back at 40,000 clicks a second). In the transaction the clicks are taken off
/// the list, and if another instance took any of them meanwhile nothing is handed on.
pub async fn hand_on_clicks(
    db: &DatabaseConnection,
    outbox_limit: u64,
    metrics: &Metrics,
) -> Result<u64, DbErr> {
    use crate::clickstore::outgoing;
    let listed =
        crate::db::read_by_index(db, async |txn| outgoing::peek(txn, CLICKS_PER_TURN).await)
            .await?;
    if listed.keys.is_empty() {
        return Ok(0);
    }
    let subscriptions = outbox::listening(db, EventType::LinkClicked).await?;
    let owners = if subscriptions.iter().any(|s| s.scope.is_some()) {
        let links: HashSet<i64> = listed
            .clicks
            .iter()
            .filter_map(|c| c.row.url_map_id)
            .collect();
        creators(db, &links).await?
    } else {
        HashMap::new()
    };
    let mut messages = Vec::new();
    for subscription in &subscriptions {
        let chosen: Vec<&Stored> = listed
            .clicks
            .iter()
            .filter(|click| match &subscription.scope {
                None => true,
                Some(scope) => click
                    .row
                    .url_map_id
                    .and_then(|id| owners.get(&id))
                    .is_some_and(|owner| owner == scope),
            })
            .collect();
        for clicks in chosen.chunks(CLICKS_PER_MESSAGE as usize) {
            let mut items = String::from("[");
            for (n, click) in clicks.iter().enumerate() {
                if n > 0 {
                    items.push(',');
                }
                crate::services::events::write_object(&mut items, click);
            }
            items.push(']');
            let body = outbox::envelope_of(EventType::LinkClicked.as_str(), &items);
            messages.push((subscription.id, body, clicks.len() as i64));
        }
    }
    let txn = crate::db::begin_write(db).await?;
    let result = async {
        let backend = txn.get_database_backend();
        crate::db::sql::by_index(&txn).await?;
        txn.execute_raw(statement(
            backend,
            "UPDATE webhook_turn SET taken = taken + 1 WHERE id = 1",
            vec![],
        ))
        .await?;
        if !outgoing::forget(&txn, &listed.keys).await? {
            return Ok(None);
        }
        // A subscription deleted or turned off since is not written to.
        let listening: HashSet<i64> = outbox::listening(&txn, EventType::LinkClicked)
            .await?
            .iter()
            .map(|s| s.id)
            .collect();
        let mut written = Vec::new();
        for (subscription, body, count) in &messages {
            if !listening.contains(subscription) {
                continue;
            }
            let clicked = EventType::LinkClicked.as_str();
            outbox::put(&txn, *subscription, clicked, body, *count).await?;
            if written.last() != Some(subscription) {
                written.push(*subscription);
            }
        }
        for subscription in written {
            let dropped = keep_within(&txn, subscription, outbox_limit).await?;
            if dropped > 0 {
                metrics
                    .webhook_click_batches_dropped
                    .fetch_add(dropped, Relaxed);
                tracing::warn!(
                    webhook = subscription,
                    dropped,
                    "a webhook's outbox is full; its oldest batches of clicks were dropped"
                );
            }
        }
        Ok(Some(listed.keys.len() as u64))
    }
    .await;
    match result {
        // Another instance took some of these clicks first: they are its to hand on.
        Ok(None) => {
            txn.rollback().await?;
            Ok(0)
        }
        result => crate::db::finish(txn, result)
            .await
            .map(Option::unwrap_or_default),
    }
}

/// The makers (kind and id) of links `links`.
async fn creators(
    db: &impl ConnectionTrait,
    links: &HashSet<i64>,
) -> Result<HashMap<i64, (String, i64)>, DbErr> {
    let links: Vec<i64> = links.iter().copied().collect();
    let mut out = HashMap::new();
    let select = "SELECT id, creator_kind, creator_id FROM url_map WHERE id";
    crate::db::sql::each_row_in(db, (select, &links), ("", &[]), |row| {
        let kind: Option<String> = row.try_get("", "creator_kind")?;
        let creator: Option<i64> = row.try_get("", "creator_id")?;
        if let Some(owner) = kind.zip(creator) {
            out.insert(row.try_get("", "id")?, owner);
        }
        Ok(())
    })
    .await?;
    Ok(out)
}

/// Drops the oldest waiting click messages of subscription `webhook` beyond `limit`; returns
/// how many.
async fn keep_within(db: &impl ConnectionTrait, webhook: i64, limit: u64) -> Result<u64, DbErr> {
    let backend = db.get_database_backend();
    let sql = "SELECT COUNT(*) AS n FROM webhook_message WHERE webhook_id = ? AND state = ? \
               AND event = ?";
    let clicked = EventType::LinkClicked.as_str();
    let values: Vec<Value> = vec![webhook.into(), WAITING.into(), clicked.into()];
    let waiting: i64 = match db.query_one_raw(statement(backend, sql, values)).await? {
        Some(row) => row.try_get("", "n")?,
        None => 0,
    };
    let over = waiting - limit as i64;
    if over <= 0 {
        return Ok(0);
    }
    let sql = format!(
        "SELECT id FROM webhook_message WHERE webhook_id = ? AND state = ? AND event = ? \
         ORDER BY id LIMIT {over}"
    );
    let values: Vec<Value> = vec![webhook.into(), WAITING.into(), clicked.into()];
    let ids: Vec<i64> = db
        .query_all_raw(statement(backend, &sql, values))
        .await?
        .iter()
        .map(|row| row.try_get("", "id"))
        .collect::<Result<_, _>>()?;
    for chunk in ids.chunks(500) {
        let marks = vec!["?"; chunk.len()].join(", ");
        let sql = format!("UPDATE webhook_message SET state = ? WHERE id IN ({marks})");
        let mut values: Vec<Value> = vec![DROPPED.into()];
        values.extend(chunk.iter().map(|id| Value::from(*id)));
        db.execute_raw(statement(backend, &sql, values)).await?;
    }
    Ok(ids.len() as u64)
}
