//! The webhooks' outbox: one row per message to one subscription, written in the transaction
//! of the change it tells about, so that a change committed is a message that will be
//! delivered (after a restart or a `kill -9` too), and a change rolled back is none.
//! `audit::record` hands every entry here (as a [`Notice`]); entries whose action announces an
//! event (`EventType::of_action`) become messages to the subscriptions that want it.

use crate::db::sql::statement;
use crate::i18n::Lang;
use crate::rules::webhook::{EventType, Events, Format, SigningSecret};
use sea_orm::{ConnectionTrait, DbErr, QueryResult, Value};
use serde_json::json;

/// A message's states, as stored.
pub const WAITING: i16 = 0;
pub const DELIVERED: i16 = 1;
pub const FAILED: i16 = 2;
pub const DROPPED: i16 = 3;

/// A subscription as stored.
#[derive(Clone, Debug)]
pub struct Subscription {
    pub id: i64,
    pub url: String,
    pub format: Format,
    pub events: Events,
    pub description: String,
    pub secret: SigningSecret,
    pub enabled: bool,
    pub language: String,
    /// The operator (kind and id) whose links alone it hears of; `None`: every link (made by
    /// an admin or the command line).
    pub scope: Option<(String, i64)>,
    pub owner_name: String,
    /// Milliseconds since 1970.
    pub created_at: i64,
    pub robot_next_at: i64,
}

pub const COLUMNS: &str = "id, url, format, events, description, secret, enabled, language, \
                           owner_kind, owner_id, owner_name, created_at, robot_next_at";

pub fn decode(row: &QueryResult) -> Result<Subscription, DbErr> {
    let kind: Option<String> = row.try_get("", "owner_kind")?;
    let id: Option<i64> = row.try_get("", "owner_id")?;
    let format: String = row.try_get("", "format")?;
    Ok(Subscription {
        id: row.try_get("", "id")?,
        url: row.try_get("", "url")?,
        format: Format::from_stored(&format).unwrap_or(Format::Standard),
        events: Events::from_stored(&row.try_get::<String>("", "events")?),
        description: row.try_get("", "description")?,
        secret: SigningSecret::from_stored(row.try_get("", "secret")?),
        enabled: row.try_get("", "enabled")?,
        language: row.try_get("", "language")?,
        scope: kind.zip(id),
        owner_name: row.try_get("", "owner_name")?,
        created_at: row.try_get("", "created_at")?,
        robot_next_at: row.try_get("", "robot_next_at")?,
    })
}

/// The enabled subscriptions that want `event`.
pub async fn listening(
    db: &impl ConnectionTrait,
    event: EventType,
) -> Result<Vec<Subscription>, DbErr> {
    let backend = db.get_database_backend();
    let sql =
        format!("SELECT {COLUMNS} FROM webhook WHERE enabled = TRUE AND events LIKE ? ORDER BY id");
    let rows = db
        .query_all_raw(statement(
            backend,
            &sql,
            vec![format!("%{}%", event.as_str()).into()],
        ))
        .await?;
    rows.iter()
        .map(decode)
        .filter(|s| s.as_ref().map_or(true, |s| s.events.contains(event)))
        .collect()
}

pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// A new message id: the `webhook-id` every attempt of one message carries.
pub fn message_id() -> String {
    format!(
        "msg_{}",
        crate::digest::hex(&super::secret::random_bytes::<12>())
    )
}

/// The JSON every message of a Standard Webhooks subscription has: `type`, `timestamp` and
/// `data`.
pub fn envelope(event: &str, data: serde_json::Value) -> String {
    envelope_of(event, &data.to_string())
}

/// [`envelope`] around `data`, JSON already written (a batch of clicks).
pub fn envelope_of(event: &str, data: &str) -> String {
    let head = json!({
        "type": event,
        "timestamp": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
    })
    .to_string();
    // `head` is an object, so it ends in `}`.
    format!("{},\"data\":{data}}}", &head[..head.len() - 1])
}

/// Puts a message for subscription `webhook` in the outbox, due now.
pub async fn put(
    db: &impl ConnectionTrait,
    webhook: i64,
    event: &str,
    body: &str,
    items: i64,
) -> Result<(), DbErr> {
    let backend = db.get_database_backend();
    let now = now_ms();
    let sql = "INSERT INTO webhook_message (webhook_id, created_at, next_at, items, msg_id, \
               event, body) VALUES (?, ?, ?, ?, ?, ?, ?)";
    let values: Vec<Value> = vec![
        webhook.into(),
        now.into(),
        now.into(),
        items.into(),
        message_id().into(),
        event.into(),
        body.into(),
    ];
    db.execute_raw(statement(backend, sql, values)).await?;
    Ok(())
}

/// A change as the audit log records it, to be announced.
pub struct Notice<'a> {
    pub action: &'a str,
    pub target_kind: &'a str,
    pub target_id: &'a str,
    pub before: Option<&'a serde_json::Value>,
    pub after: Option<&'a serde_json::Value>,
    /// The reason `after` gives in English, as a message: what a chat-group robot shows.
    pub reason: Option<&'a crate::i18n::Message>,
}

/// Who made a change: kind (`user`, `api_key`, `cli`, `system`) and name.
pub struct By<'a> {
    pub kind: &'a str,
    pub name: &'a str,
}

/// The messages `notices` by `by` announce, put in the outbox of every subscription that
/// wants them (an operator's only of their own links and batches).
pub async fn announce(
    db: &impl ConnectionTrait,
    by: By<'_>,
    notices: &[Notice<'_>],
) -> Result<(), DbErr> {
    let mut wanted: Vec<(EventType, Vec<Subscription>)> = Vec::new();
    for entry in notices {
        let Some(event) = EventType::of_action(entry.action) else {
            continue;
        };
        let subscriptions = match wanted.iter().find(|(e, _)| *e == event) {
            Some((_, subscriptions)) => subscriptions.clone(),
            None => {
                let found = listening(db, event).await?;
                wanted.push((event, found.clone()));
                found
            }
        };
        if subscriptions.is_empty() {
            continue;
        }
        let data = json!({
            "target": entry.target_id,
            "target_kind": entry.target_kind,
            "change": entry.action,
            "by": {"kind": by.kind, "name": by.name},
            "before": entry.before,
            "after": entry.after,
        });
        let body = envelope(event.as_str(), data.clone());
        let mut owner: Option<Option<(String, i64)>> = None;
        for subscription in &subscriptions {
            if let Some(scope) = &subscription.scope {
                if owner.is_none() {
                    owner = Some(owner_of(db, entry).await?);
                }
                if owner.as_ref().and_then(Option::as_ref) != Some(scope) {
                    continue;
                }
            }
            // A robot's message is read by people: the reason in its language (programs keep
            // the English, whose wording is part of the API).
            let reason = entry
                .reason
                .filter(|_| subscription.format != Format::Standard)
                .and_then(|reason| {
                    let lang = Lang::from_tag(&subscription.language)?;
                    let mut data = data.clone();
                    data["after"]["reason"] = reason.show(lang).into();
                    Some(envelope(event.as_str(), data))
                });
            put(
                db,
                subscription.id,
                event.as_str(),
                reason.as_ref().unwrap_or(&body),
                1,
            )
            .await?;
        }
    }
    Ok(())
}

/// Who made the link or batch an entry is about (kind and id).
async fn owner_of(
    db: &impl ConnectionTrait,
    entry: &Notice<'_>,
) -> Result<Option<(String, i64)>, DbErr> {
    let (sql, key): (&str, Value) = match entry.target_kind {
        "link" => (
            "SELECT creator_kind, creator_id FROM url_map WHERE compression_code = ? \
             ORDER BY id DESC LIMIT 1",
            entry.target_id.into(),
        ),
        "batch" => match entry.target_id.parse::<i64>() {
            Ok(id) => (
                "SELECT creator_kind, creator_id FROM campaign_batch WHERE id = ?",
                id.into(),
            ),
            Err(_) => return Ok(None),
        },
        _ => return Ok(None),
    };
    let backend = db.get_database_backend();
    let row = db.query_one_raw(statement(backend, sql, vec![key])).await?;
    Ok(match row {
        Some(row) => {
            let kind: Option<String> = row.try_get("", "creator_kind")?;
            let id: Option<i64> = row.try_get("", "creator_id")?;
            kind.zip(id)
        }
        None => None,
    })
}
