//! Webhook subscriptions: creating, reading, changing and deleting them, their recent
//! deliveries, a test message, and re-sending. Delivery itself is `deliver`; what a chat
//! group's robot is sent, `robot`. Admins' subscriptions hear of every link; an operator's
//! (a user or an API key of the operator role) only of the links and batches they made.

pub mod deliver;
pub mod hand_on;
pub mod robot;

use super::audit::{self, Actor, Entry};
use super::outbox::{self, COLUMNS, DELIVERED, DROPPED, FAILED, Subscription, WAITING};
use crate::db::sql::statement;
use crate::i18n::Message;
use crate::net::outbound::{self, OutboundError};
use crate::rules::webhook::{
    self, EventType, Events, Format, SigningSecret, WebhookError, WebhookUrl,
};
use crate::state::Inklink;
use sea_orm::{ConnectionTrait, DatabaseConnection, DbBackend, DbErr, Value};
use serde_json::json;

/// Subscriptions one person or key may have.
pub const PER_OWNER: u64 = 20;
/// Subscriptions in all.
pub const IN_ALL: u64 = 200;
/// Deliveries listed for a subscription.
pub const RECENT: u64 = 50;

#[derive(Debug, thiserror::Error, crate::i18n::Says)]
pub enum WebhookServiceError {
    #[error(transparent)]
    Invalid(#[from] WebhookError),
    #[error(
        "the receiver's address {0} is on an internal network; set INKLINK_WEBHOOK_ALLOW_PRIVATE=true to allow it"
    )]
    Internal(String),
    #[error("there is no webhook {0}")]
    NotFound(i64),
    #[error("domain events go to admins' webhooks only; choose link or batch events")]
    DomainEventsForOperator,
    #[error("you have {0} webhooks, the most one person may have; delete one first")]
    TooManyOfYours(u64),
    #[error("inklink has {0} webhooks, the most it keeps; delete one first")]
    TooMany(u64),
    #[error("database error: {0}")]
    Db(#[from] DbErr),
}

/// A subscription to make.
#[derive(Debug, Clone)]
pub struct NewWebhook {
    pub url: WebhookUrl,
    pub format: Format,
    pub events: Events,
    pub description: String,
}

impl NewWebhook {
    /// Parses what a person or program sent.
    pub fn parse<'a>(
        url: &str,
        format: Option<&str>,
        events: impl IntoIterator<Item = &'a str>,
        description: Option<&str>,
    ) -> Result<Self, WebhookError> {
        let url = WebhookUrl::parse(url)?;
        let format = Format::parse(format, &url)?;
        let events = Events::parse(events)?;
        webhook::check_format(format, &events)?;
        Ok(Self {
            url,
            format,
            events,
            description: webhook::description(description.unwrap_or(""))?,
        })
    }
}

/// What a change sets; `None` leaves it as it is.
#[derive(Debug, Clone, Default)]
pub struct WebhookChange {
    pub url: Option<WebhookUrl>,
    pub events: Option<Events>,
    pub enabled: Option<bool>,
    pub description: Option<String>,
}

/// One message of a subscription, as its list of recent deliveries shows it.
#[derive(Debug, Clone)]
pub struct Delivery {
    pub id: i64,
    pub msg_id: String,
    pub event: String,
    /// Milliseconds since 1970.
    pub created_at: i64,
    pub delivered_at: Option<i64>,
    pub next_at: i64,
    pub attempts: i32,
    pub items: i32,
    pub state: i16,
    pub last_status: Option<i32>,
    pub last_error: Option<String>,
    /// Why, as the message a person reads (none for attempts made before it was kept, or
    /// whose message ran too long).
    pub last_error_message: Option<Message>,
}

impl Delivery {
    /// Why the last attempt failed, in the reader's language: the message kept, else the
    /// English as stored.
    pub fn error_shown(&self) -> Option<Message> {
        self.last_error_message
            .clone()
            .or_else(|| self.last_error.clone().map(Message::plain))
    }

    /// The state's name (`waiting`, `delivered`, `failed`, `dropped`).
    pub fn state_name(&self) -> &'static str {
        match self.state {
            WAITING => "waiting",
            DELIVERED => "delivered",
            FAILED => "failed",
            DROPPED => "dropped",
            _ => "unknown",
        }
    }
}

/// Refuses an address written as an internal one, or a name resolving only to internal
/// addresses (a name that does not resolve now is accepted: it is checked at every send).
async fn check_reachable(url: &WebhookUrl, allow: bool) -> Result<(), WebhookServiceError> {
    let internal = |host: String| WebhookServiceError::Internal(host);
    outbound::check_host(url.url(), allow).map_err(|err| match err {
        OutboundError::Internal(host) => internal(host),
        other => internal(other.to_string()),
    })?;
    if allow {
        return Ok(());
    }
    if let Some(url::Host::Domain(name)) = url.url().host() {
        let port = url.url().port_or_known_default().unwrap_or(443);
        let lookup = tokio::time::timeout(
            std::time::Duration::from_secs(3),
            tokio::net::lookup_host((name, port)),
        )
        .await;
        if let Ok(Ok(found)) = lookup {
            let found: Vec<_> = found.collect();
            if !found.is_empty() && found.iter().all(|a| outbound::is_internal(a.ip())) {
                return Err(internal(name.to_owned()));
            }
        }
    }
    Ok(())
}

fn scope_of(actor: &Actor) -> Option<(&'static str, i64)> {
    match actor.is_admin() {
        true => None,
        false => actor.id().map(|id| (actor.kind(), id)),
    }
}

fn snapshot(s: &Subscription) -> serde_json::Value {
    json!({
        "url": s.url,
        "format": s.format.as_str(),
        "events": s.events.names(),
        "description": s.description,
        "enabled": s.enabled,
    })
}

async fn count(db: &impl ConnectionTrait, scope: Option<(&str, i64)>) -> Result<u64, DbErr> {
    let backend = db.get_database_backend();
    let (sql, values): (&str, Vec<Value>) = match scope {
        Some((kind, id)) => (
            "SELECT COUNT(*) AS n FROM webhook WHERE owner_kind = ? AND owner_id = ?",
            vec![kind.into(), id.into()],
        ),
        None => ("SELECT COUNT(*) AS n FROM webhook", vec![]),
    };
    let row = db.query_one_raw(statement(backend, sql, values)).await?;
    Ok(row
        .map(|r| r.try_get::<i64>("", "n"))
        .transpose()?
        .unwrap_or(0) as u64)
}

/// Makes a subscription; its signing secret is in what it returns (shown once to people,
/// though it stays readable to its owner through the API).
pub async fn create(
    app: &Inklink,
    new: NewWebhook,
    actor: &Actor,
    language: &str,
) -> Result<Subscription, WebhookServiceError> {
    let scope = scope_of(actor);
    if scope.is_some() && new.events.iter().any(|e| e.as_str().starts_with("domain.")) {
        return Err(WebhookServiceError::DomainEventsForOperator);
    }
    check_reachable(&new.url, app.settings.webhook_allow_private).await?;
    let txn = crate::db::begin_write(&app.db).await?;
    let result = async {
        // Counted under the `webhook_turn` row's lock: parallel creations take turns, so that
        // none passes a limit another is just filling (PostgreSQL and MySQL would let both
        // count the same rows; SQLite's write transaction already takes turns).
        txn.execute_raw(statement(
            txn.get_database_backend(),
            "UPDATE webhook_turn SET taken = taken WHERE id = 1",
            Vec::new(),
        ))
        .await?;
        if scope.is_some() {
            let mine = count(&txn, scope).await?;
            if mine >= PER_OWNER {
                return Err(WebhookServiceError::TooManyOfYours(mine));
            }
        }
        let all = count(&txn, None).await?;
        if all >= IN_ALL {
            return Err(WebhookServiceError::TooMany(all));
        }
        let secret = SigningSecret::from_random(super::secret::random_bytes::<24>());
        let backend = txn.get_database_backend();
        let sql = "INSERT INTO webhook (url, format, events, description, secret, enabled, \
                   language, owner_kind, owner_id, owner_name, created_at) \
                   VALUES (?, ?, ?, ?, ?, TRUE, ?, ?, ?, ?, ?)";
        let values: Vec<Value> = vec![
            new.url.as_str().into(),
            new.format.as_str().into(),
            new.events.to_stored().into(),
            new.description.clone().into(),
            secret.as_str().into(),
            language.into(),
            scope.map(|(kind, _)| kind.to_owned()).into(),
            scope.map(|(_, id)| id).into(),
            actor.name().into(),
            outbox::now_ms().into(),
        ];
        txn.execute_raw(statement(backend, sql, values)).await?;
        // The row just made is this owner's newest.
        let sql =
            format!("SELECT {COLUMNS} FROM webhook WHERE secret = ? ORDER BY id DESC LIMIT 1");
        let row = txn
            .query_one_raw(statement(backend, &sql, vec![secret.as_str().into()]))
            .await?
            .ok_or_else(|| DbErr::RecordNotFound("webhook".into()))?;
        let made = outbox::decode(&row)?;
        audit::record(
            &txn,
            actor,
            Entry {
                action: "webhook.create",
                target_kind: "webhook",
                target_id: &made.id.to_string(),
                before: None,
                after: Some(snapshot(&made)),
            },
        )
        .await?;
        Ok(made)
    }
    .await;
    crate::db::finish(txn, result).await
}

/// The subscriptions `actor` may see: all for an admin, their own for an operator.
pub async fn list(
    db: &DatabaseConnection,
    actor: &Actor,
) -> Result<Vec<Subscription>, WebhookServiceError> {
    let backend = db.get_database_backend();
    let (filter, values): (&str, Vec<Value>) = match scope_of(actor) {
        Some((kind, id)) => (
            " WHERE owner_kind = ? AND owner_id = ?",
            vec![kind.into(), id.into()],
        ),
        None => ("", vec![]),
    };
    let sql = format!("SELECT {COLUMNS} FROM webhook{filter} ORDER BY id");
    let rows = db.query_all_raw(statement(backend, &sql, values)).await?;
    Ok(rows.iter().map(outbox::decode).collect::<Result<_, _>>()?)
}

/// Subscription `id`, when `actor` may see it (an operator's own); another's is "not found".
pub async fn get(
    db: &impl ConnectionTrait,
    id: i64,
    actor: &Actor,
) -> Result<Subscription, WebhookServiceError> {
    let backend = db.get_database_backend();
    let sql = format!("SELECT {COLUMNS} FROM webhook WHERE id = ?");
    let row = db
        .query_one_raw(statement(backend, &sql, vec![id.into()]))
        .await?
        .ok_or(WebhookServiceError::NotFound(id))?;
    let found = outbox::decode(&row)?;
    if let Some((kind, owner)) = scope_of(actor)
        && found
            .scope
            .as_ref()
            .is_none_or(|(k, o)| k != kind || *o != owner)
    {
        return Err(WebhookServiceError::NotFound(id));
    }
    Ok(found)
}

/// Changes a subscription's URL, events, description or whether it is on.
pub async fn update(
    app: &Inklink,
    id: i64,
    change: WebhookChange,
    actor: &Actor,
) -> Result<Subscription, WebhookServiceError> {
    if let Some(url) = &change.url {
        check_reachable(url, app.settings.webhook_allow_private).await?;
    }
    let txn = crate::db::begin_write(&app.db).await?;
    let result = async {
        let before = get(&txn, id, actor).await?;
        let events = change.events.clone().unwrap_or(before.events.clone());
        if before.scope.is_some() && events.iter().any(|e| e.as_str().starts_with("domain.")) {
            return Err(WebhookServiceError::DomainEventsForOperator);
        }
        webhook::check_format(before.format, &events)?;
        let url = change
            .url
            .as_ref()
            .map_or(before.url.clone(), |u| u.as_str().to_owned());
        let backend = txn.get_database_backend();
        let sql = "UPDATE webhook SET url = ?, events = ?, description = ?, enabled = ? \
                   WHERE id = ?";
        let values: Vec<Value> = vec![
            url.into(),
            events.to_stored().into(),
            change
                .description
                .clone()
                .unwrap_or(before.description.clone())
                .into(),
            change.enabled.unwrap_or(before.enabled).into(),
            id.into(),
        ];
        txn.execute_raw(statement(backend, sql, values)).await?;
        let after = get(&txn, id, actor).await?;
        audit::record(
            &txn,
            actor,
            Entry {
                action: "webhook.update",
                target_kind: "webhook",
                target_id: &id.to_string(),
                before: Some(snapshot(&before)),
                after: Some(snapshot(&after)),
            },
        )
        .await?;
        Ok(after)
    }
    .await;
    crate::db::finish(txn, result).await
}

/// Deletes a subscription and its outbox.
pub async fn delete(app: &Inklink, id: i64, actor: &Actor) -> Result<(), WebhookServiceError> {
    // Set-wise changes of the outbox (resending, replays, pruning) lock messages in no
    // particular order, so a deadlock stays possible: run again, it deletes what is there then
    // (those changes are run again too: `db::execute_retried`).
    crate::db::retry_rolled_back(
        async || delete_once(app, id, actor).await,
        |err| matches!(err, WebhookServiceError::Db(err) if crate::db::is_retryable(err)),
    )
    .await
}

async fn delete_once(app: &Inklink, id: i64, actor: &Actor) -> Result<(), WebhookServiceError> {
    let txn = crate::db::begin_write(&app.db).await?;
    let result = async {
        let before = get(&txn, id, actor).await?;
        let backend = txn.get_database_backend();
        // Delivery locks messages in the order of their ids (claims and outcomes alike); so
        // must this, or it could take one while delivery holds another it needs next, each
        // then waiting for the other. MariaDB's DELETE does (it walks the subscription's
        // index, or the whole table by key); PostgreSQL's takes rows as they lie in the table.
        if backend == DbBackend::Postgres {
            let lock = "SELECT id FROM webhook_message WHERE webhook_id = ? ORDER BY id FOR UPDATE";
            txn.query_all_raw(statement(backend, lock, vec![id.into()]))
                .await?;
        }
        for sql in [
            "DELETE FROM webhook_message WHERE webhook_id = ?",
            "DELETE FROM webhook WHERE id = ?",
        ] {
            txn.execute_raw(statement(backend, sql, vec![id.into()]))
                .await?;
        }
        audit::record(
            &txn,
            actor,
            Entry {
                action: "webhook.delete",
                target_kind: "webhook",
                target_id: &id.to_string(),
                before: Some(snapshot(&before)),
                after: None,
            },
        )
        .await?;
        Ok(())
    }
    .await;
    crate::db::finish(txn, result).await
}

/// The newest [`RECENT`] messages of subscription `id`.
pub async fn deliveries(
    db: &DatabaseConnection,
    id: i64,
    actor: &Actor,
) -> Result<Vec<Delivery>, WebhookServiceError> {
    get(db, id, actor).await?;
    let backend = db.get_database_backend();
    let sql = format!(
        "SELECT id, msg_id, event, created_at, delivered_at, next_at, attempts, items, state, \
         last_status, last_error, last_error_message FROM webhook_message WHERE webhook_id = ? \
         ORDER BY id DESC LIMIT {RECENT}"
    );
    let rows = db
        .query_all_raw(statement(backend, &sql, vec![id.into()]))
        .await?;
    rows.iter()
        .map(|row| {
            Ok(Delivery {
                id: row.try_get("", "id")?,
                msg_id: row.try_get("", "msg_id")?,
                event: row.try_get("", "event")?,
                created_at: row.try_get("", "created_at")?,
                delivered_at: row.try_get("", "delivered_at")?,
                next_at: row.try_get("", "next_at")?,
                attempts: row.try_get("", "attempts")?,
                items: row.try_get("", "items")?,
                state: row.try_get("", "state")?,
                last_status: row.try_get("", "last_status")?,
                last_error: row.try_get("", "last_error")?,
                last_error_message: row
                    .try_get::<Option<String>>("", "last_error_message")?
                    .and_then(|json| serde_json::from_str(&json).ok()),
            })
        })
        .collect::<Result<_, DbErr>>()
        .map_err(Into::into)
}

/// The event a test message has (no subscription can choose it: every one gets it on demand).
pub const TEST_EVENT: &str = "webhook.test";

/// Puts a test message in subscription `id`'s outbox.
pub async fn send_test(app: &Inklink, id: i64, actor: &Actor) -> Result<(), WebhookServiceError> {
    let found = get(&app.db, id, actor).await?;
    let body = outbox::envelope(
        TEST_EVENT,
        json!({"webhook": found.id, "by": {"kind": actor.kind(), "name": actor.name()}}),
    );
    let _turn = crate::db::write_turn(&app.db).await;
    outbox::put(&app.db, found.id, TEST_EVENT, &body, 1).await?;
    Ok(())
}

/// Sends subscription `id`'s failed and dropped messages again (with their ids, so that a
/// receiver that did get one can tell); returns how many.
pub async fn resend_failed(
    app: &Inklink,
    id: i64,
    actor: &Actor,
) -> Result<u64, WebhookServiceError> {
    get(&app.db, id, actor).await?;
    let backend = app.db.get_database_backend();
    let sql = "UPDATE webhook_message SET state = ?, next_at = ?, attempts = 0, lease_until = 0 \
               WHERE webhook_id = ? AND state IN (?, ?)";
    let values: Vec<Value> = vec![
        WAITING.into(),
        outbox::now_ms().into(),
        id.into(),
        FAILED.into(),
        DROPPED.into(),
    ];
    let _turn = crate::db::write_turn(&app.db).await;
    let done = crate::db::execute_retried(&app.db, statement(backend, sql, values)).await?;
    Ok(done.rows_affected())
}

/// Sends again every kept message made from `from` up to `to` (milliseconds since 1970),
/// of one subscription or all, whatever became of it; returns how many.
pub async fn replay(
    db: &DatabaseConnection,
    from: i64,
    to: i64,
    subscription: Option<i64>,
) -> Result<u64, WebhookServiceError> {
    let backend = db.get_database_backend();
    let mut sql = String::from(
        "UPDATE webhook_message SET state = ?, next_at = ?, attempts = 0, lease_until = 0 \
         WHERE created_at >= ? AND created_at < ? AND state <> ?",
    );
    let mut values: Vec<Value> = vec![
        WAITING.into(),
        outbox::now_ms().into(),
        from.into(),
        to.into(),
        WAITING.into(),
    ];
    if let Some(id) = subscription {
        sql.push_str(" AND webhook_id = ?");
        values.push(id.into());
    }
    let done = crate::db::execute_retried(db, statement(backend, &sql, values)).await?;
    Ok(done.rows_affected())
}

/// Of every event, whether `actor` may subscribe to it.
pub fn events_for(actor: &Actor) -> Vec<EventType> {
    EventType::ALL
        .into_iter()
        .filter(|e| actor.is_admin() || !e.as_str().starts_with("domain."))
        .collect()
}
