//! Delivering the outbox, from every instance at once without sending a message twice in the
//! normal case: an instance claims a message for [`LEASE_MS`] with a conditional update
//! before sending it, and a claim left by an instance that died (`kill -9`) runs out, so the
//! message is sent again, with the same `webhook-id`.
//!
//! Clicks reach subscriptions of `link.clicked` from the stored clicks, never from the
//! redirect path ([`super::hand_on`]): the dispatcher here hands them on and delivers side by
//! side. Counting does not wait for either, nor they for counting; a slow receiver holds back
//! only its own messages.

use super::hand_on::{CLICKS_PER_TURN, hand_on_clicks};
use super::robot;
use crate::db::sql::statement;
use crate::i18n::Says;
use crate::metrics::Metrics;
use crate::net::outbound::{Answer, Outbound, OutboundError};
use crate::rules::webhook::Format;
use crate::services::outbox::{self, COLUMNS, DELIVERED, FAILED, Subscription, WAITING};
use sea_orm::{ConnectionTrait, DatabaseConnection, DbErr, Value};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

/// Messages claimed per round.
const CLAIM: usize = 64;
/// How long a claim holds: longer than an attempt's timeout.
const LEASE_MS: i64 = 15_000;
/// A message is retried until it is this old (then it is failed).
const RETRY_FOR_MS: i64 = 24 * 3_600_000;
/// The longest wait between two attempts.
const LONGEST_WAIT_MS: i64 = 3_600_000;
/// A chat group's robot takes at most 20 messages a minute.
const ROBOT_SPACING_MS: i64 = 3_100;
/// Each attempt's limit.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// What the dispatcher needs to know.
#[derive(Clone, Debug)]
pub struct Policy {
    pub allow_private: bool,
    /// The first retry's wait, in milliseconds (doubling after each failure).
    pub first_retry_ms: i64,
    /// Undelivered click messages a subscription may have.
    pub outbox_limit: u64,
    /// Days delivered and failed messages are kept.
    pub keep_days: u32,
}

/// Runs for the server's life: hands stored clicks on, delivers what is due, and forgets old
/// messages hourly. Runs on the thread of outbound work (the HTTP client is not `Send`). Handing
/// on and delivering run side by side, so that a slow receiver does not hold back the
/// messages of the others, nor the clicks being put into them.
pub async fn run(db: DatabaseConnection, policy: Policy, metrics: Arc<Metrics>) {
    futures_util::future::join(
        hand_on_forever(&db, &policy, &metrics),
        deliver_forever(&db, &policy, &metrics),
    )
    .await;
}

/// Between two rounds: none while busy (other tasks still get their turn), else a pause.
async fn rest(busy: bool) {
    match busy {
        true => tokio::task::yield_now().await,
        false => tokio::time::sleep(Duration::from_millis(200)).await,
    }
}

async fn hand_on_forever(db: &DatabaseConnection, policy: &Policy, metrics: &Metrics) {
    // Counting refreshes the click tables' statistics as it goes, but it falls behind in a
    // burst, and until then the hand-over's reads of the clicks kept plans made for empty
    // tables (PostgreSQL without autovacuum: 25.9 million rows read in 267 sequential scans
    // of `click` in one burst, bench/README.md).
    let mut refresh = crate::db::sql::Refresh::new();
    loop {
        let busy = match hand_on_clicks(db, policy.outbox_limit, metrics).await {
            Ok(taken) => {
                if refresh.due(taken) {
                    refresh_statistics(db).await;
                }
                taken >= CLICKS_PER_TURN
            }
            Err(err) => {
                tracing::warn!(error = %err, "cannot hand clicks to webhooks; will retry");
                false
            }
        };
        // A full turn means more are waiting.
        rest(busy).await;
    }
}

/// The statistics of the tables handing on and delivery read, and the outbox vacuumed where
/// autovacuum is off: every message is written again as it is attempted and delivered
/// (PostgreSQL only). A failure only costs speed, so it is logged, not returned.
async fn refresh_statistics(db: &DatabaseConnection) {
    let outbox = crate::db::sql::Upkeep {
        rewritten: &["webhook_message"],
        ..Default::default()
    };
    let refreshed = async {
        crate::clickstore::refresh_statistics(db).await?;
        crate::db::sql::refresh_statistics(db, outbox).await
    };
    if let Err(err) = refreshed.await {
        tracing::warn!(error = %err, "cannot refresh the database's statistics of the webhook tables");
    }
}

async fn deliver_forever(db: &DatabaseConnection, policy: &Policy, metrics: &Metrics) {
    let outbound = Outbound::new(policy.allow_private, TIMEOUT);
    let mut pruned = std::time::Instant::now();
    loop {
        let busy = match deliver_due(db, &outbound, policy, metrics).await {
            Ok(claimed) => claimed > 0,
            Err(err) => {
                tracing::warn!(error = %err, "cannot deliver webhooks; will retry");
                false
            }
        };
        if pruned.elapsed() >= Duration::from_secs(3_600) {
            pruned = std::time::Instant::now();
            if let Err(err) = prune(db, policy.keep_days).await {
                tracing::warn!(error = %err, "cannot delete old webhook messages");
            }
        }
        rest(busy).await;
    }
}

/// A message claimed for sending.
struct Claimed {
    id: i64,
    webhook: i64,
    msg_id: String,
    event: String,
    body: String,
    created_at: i64,
    attempts: i32,
}

/// Claims up to [`CLAIM`] due messages and sends them: each subscription's in order, the
/// subscriptions side by side; returns how many were claimed.
pub async fn deliver_due(
    db: &DatabaseConnection,
    outbound: &Outbound,
    policy: &Policy,
    metrics: &Metrics,
) -> Result<usize, DbErr> {
    let backend = db.get_database_backend();
    let now = outbox::now_ms();
    let sql = format!(
        "SELECT id FROM webhook_message WHERE state = ? AND next_at <= ? AND lease_until <= ? \
         ORDER BY next_at, id LIMIT {CLAIM}"
    );
    let mut due: Vec<i64> = db
        .query_all_raw(statement(
            backend,
            &sql,
            vec![WAITING.into(), now.into(), now.into()],
        ))
        .await?
        .iter()
        .map(|row| row.try_get("", "id"))
        .collect::<Result<_, _>>()?;
    if due.is_empty() {
        return Ok(0);
    }
    // Every writer of several messages locks them in the order of their ids (claims, outcomes,
    // a subscription's deletion), so that none waits for another that waits for it.
    due.sort_unstable();
    // One transaction for the claims: on SQLite each statement on its own would take the
    // write lock the click writer needs, once a message.
    let txn = crate::db::begin_write(db).await?;
    let claims = async {
        let mut claimed: Vec<i64> = Vec::with_capacity(due.len());
        for id in due {
            let sql = "UPDATE webhook_message SET lease_until = ? \
                       WHERE id = ? AND state = ? AND lease_until <= ?";
            let values: Vec<Value> = vec![
                (now + LEASE_MS).into(),
                id.into(),
                WAITING.into(),
                now.into(),
            ];
            if txn
                .execute_raw(statement(backend, sql, values))
                .await?
                .rows_affected()
                == 1
            {
                claimed.push(id);
            }
        }
        Ok::<_, DbErr>(claimed)
    }
    .await;
    let claimed = crate::db::finish(txn, claims).await?;
    if claimed.is_empty() {
        return Ok(0);
    }
    let count = claimed.len();
    let marks = vec!["?"; claimed.len()].join(", ");
    let sql = format!(
        "SELECT id, webhook_id, msg_id, event, body, created_at, attempts FROM webhook_message \
         WHERE id IN ({marks}) ORDER BY id"
    );
    let values = claimed.iter().map(|id| Value::from(*id)).collect();
    let read = statement(backend, &sql, values);
    let rows = crate::db::read_by_index(db, async |txn| txn.query_all_raw(read).await).await?;
    let mut per_hook: HashMap<i64, Vec<Claimed>> = HashMap::new();
    for row in rows {
        let message = Claimed {
            id: row.try_get("", "id")?,
            webhook: row.try_get("", "webhook_id")?,
            msg_id: row.try_get("", "msg_id")?,
            event: row.try_get("", "event")?,
            body: row.try_get("", "body")?,
            created_at: row.try_get("", "created_at")?,
            attempts: row.try_get("", "attempts")?,
        };
        per_hook.entry(message.webhook).or_default().push(message);
    }
    let hooks: Vec<i64> = per_hook.keys().copied().collect();
    let subscriptions = subscriptions(db, &hooks).await?;
    let sends = per_hook.into_iter().map(|(hook, messages)| {
        let subscription = subscriptions.get(&hook);
        send_all(db, outbound, policy, metrics, subscription, messages)
    });
    for result in futures_util::future::join_all(sends).await {
        result?;
    }
    Ok(count)
}

async fn subscriptions(
    db: &DatabaseConnection,
    ids: &[i64],
) -> Result<HashMap<i64, Subscription>, DbErr> {
    // Every message claimed can be gone by now, deleted with its subscription.
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    let backend = db.get_database_backend();
    let marks = vec!["?"; ids.len()].join(", ");
    let sql = format!("SELECT {COLUMNS} FROM webhook WHERE id IN ({marks})");
    let values = ids.iter().map(|id| Value::from(*id)).collect();
    db.query_all_raw(statement(backend, &sql, values))
        .await?
        .iter()
        .map(|row| outbox::decode(row).map(|s| (s.id, s)))
        .collect()
}

/// Sends one subscription's claimed messages: a program's one by one, stopping at the first
/// failure (the rest wait as long, without an attempt counted); a robot's as one message.
async fn send_all(
    db: &DatabaseConnection,
    outbound: &Outbound,
    policy: &Policy,
    metrics: &Metrics,
    subscription: Option<&Subscription>,
    messages: Vec<Claimed>,
) -> Result<(), DbErr> {
    let ids = || messages.iter().map(|m| m.id).collect::<Vec<i64>>();
    let Some(subscription) = subscription else {
        return forget_orphans(db, &ids()).await;
    };
    if !subscription.enabled {
        // Disabled meanwhile: the messages wait, unclaimed, until it is enabled.
        return store(
            db,
            policy,
            metrics,
            Vec::new(),
            &ids(),
            outbox::now_ms() + LEASE_MS,
        )
        .await;
    }
    let Ok(url) = url::Url::parse(&subscription.url) else {
        let attempts = messages
            .into_iter()
            .map(|m| (m, Err((None, DeliveryError::Url))))
            .collect();
        return store(db, policy, metrics, attempts, &[], 0).await;
    };
    if subscription.format.is_robot() {
        return send_to_robot(db, outbound, policy, metrics, subscription, &url, messages).await;
    }
    let mut pending = messages.into_iter();
    let mut attempted: Vec<(Claimed, Outcome)> = Vec::new();
    let mut oldest = std::time::Instant::now();
    while let Some(mut message) = pending.next() {
        let timestamp = chrono::Utc::now().timestamp();
        let headers = [
            ("webhook-id", message.msg_id.clone()),
            ("webhook-timestamp", timestamp.to_string()),
            (
                "webhook-signature",
                subscription
                    .secret
                    .sign(&message.msg_id, timestamp, message.body.as_bytes()),
            ),
        ];
        // The body is not needed after it is sent (and is up to a megabyte).
        let body = std::mem::take(&mut message.body).into_bytes();
        let answer = outbound.post_json(&url, &headers, body).await;
        let outcome = judge(Format::Standard, answer);
        if outcome.is_err() {
            // The rest wait as long as this one, without an attempt counted.
            let retry = retry_at(policy, &message, outbox::now_ms());
            attempted.push((message, outcome));
            let rest: Vec<i64> = pending.map(|m| m.id).collect();
            return store(db, policy, metrics, attempted, &rest, retry).await;
        }
        if attempted.is_empty() {
            oldest = std::time::Instant::now();
        }
        attempted.push((message, outcome));
        if oldest.elapsed() >= STORE_EVERY {
            store(db, policy, metrics, std::mem::take(&mut attempted), &[], 0).await?;
        }
    }
    store(db, policy, metrics, attempted, &[], 0).await
}

/// Forgets those of messages `ids` still there, their subscription gone: the messages a
/// change put for a subscription as it was being deleted (the change read the subscriptions
/// before the delete committed). Most often the delete took them all after they were claimed,
/// and then nothing is written.
async fn forget_orphans(db: &DatabaseConnection, ids: &[i64]) -> Result<(), DbErr> {
    let backend = db.get_database_backend();
    let marks = vec!["?"; ids.len()].join(", ");
    let sql = format!("SELECT id FROM webhook_message WHERE id IN ({marks}) ORDER BY id");
    let values = ids.iter().map(|id| Value::from(*id)).collect();
    let left: Vec<i64> = db
        .query_all_raw(statement(backend, &sql, values))
        .await?
        .iter()
        .map(|row| row.try_get("", "id"))
        .collect::<Result<_, _>>()?;
    if left.is_empty() {
        return Ok(());
    }
    let marks = vec!["?"; left.len()].join(", ");
    let sql = format!("DELETE FROM webhook_message WHERE id IN ({marks})");
    let values = left.iter().map(|id| Value::from(*id)).collect();
    let txn = crate::db::begin_write(db).await?;
    let forgotten = txn.execute_raw(statement(backend, &sql, values)).await;
    crate::db::finish(txn, forgotten.map(drop)).await
}

/// Delivered messages are stored as delivered once the first of them has waited this long (at
/// the end of the attempt then running): well within their lease, so that no other round
/// claims them meanwhile.
const STORE_EVERY: Duration = Duration::from_secs(1);

/// Stores the outcomes of `attempts`, and puts the messages `put_back` back (due at `at`,
/// without an attempt counted), in one write transaction: SQLite's write lock, which the click
/// writer, counting and the hand-over also need, is taken once for a round's deliveries instead
/// of once a message.
async fn store(
    db: &DatabaseConnection,
    policy: &Policy,
    metrics: &Metrics,
    attempts: Vec<(Claimed, Outcome)>,
    put_back: &[i64],
    at: i64,
) -> Result<(), DbErr> {
    if attempts.is_empty() && put_back.is_empty() {
        return Ok(());
    }
    // In the order of the messages' ids, as every writer of several messages (see
    // `deliver_due`): sent in that order, the ones put back come after the ones attempted.
    debug_assert!(
        attempts
            .iter()
            .map(|(m, _)| m.id)
            .chain(put_back.iter().copied())
            .is_sorted()
    );
    let txn = crate::db::begin_write(db).await?;
    let stored = async {
        for (message, outcome) in attempts {
            record(&txn, policy, metrics, &message, outcome).await?;
        }
        for id in put_back {
            postpone(&txn, *id, at).await?;
        }
        Ok(())
    }
    .await;
    crate::db::finish(txn, stored).await
}

/// A robot's messages, summed into one, at most one every [`ROBOT_SPACING_MS`].
async fn send_to_robot(
    db: &DatabaseConnection,
    outbound: &Outbound,
    policy: &Policy,
    metrics: &Metrics,
    subscription: &Subscription,
    url: &url::Url,
    messages: Vec<Claimed>,
) -> Result<(), DbErr> {
    let backend = db.get_database_backend();
    let now = outbox::now_ms();
    let sql = "UPDATE webhook SET robot_next_at = ? WHERE id = ? AND robot_next_at <= ?";
    let values: Vec<Value> = vec![
        (now + ROBOT_SPACING_MS).into(),
        subscription.id.into(),
        now.into(),
    ];
    if db
        .execute_raw(statement(backend, sql, values))
        .await?
        .rows_affected()
        != 1
    {
        let turn = subscription.robot_next_at.max(now + 500);
        let ids: Vec<i64> = messages.iter().map(|m| m.id).collect();
        return store(db, policy, metrics, Vec::new(), &ids, turn).await;
    }
    let items: Vec<(&str, &str)> = messages
        .iter()
        .map(|m| (m.event.as_str(), m.body.as_str()))
        .collect();
    let body = robot::message(subscription.format, &subscription.language, &items);
    let answer = outbound.post_json(url, &[], body).await;
    let outcome = judge(subscription.format, answer);
    let attempts = messages.into_iter().map(|m| (m, outcome.clone())).collect();
    store(db, policy, metrics, attempts, &[], 0).await
}

/// Why an attempt failed: the English is kept for the API (`last_error`), the message for the
/// admin's delivery list, in the reader's language.
#[derive(Debug, Clone, thiserror::Error, crate::i18n::Says)]
pub enum DeliveryError {
    #[error("the URL is not valid")]
    Url,
    #[error(transparent)]
    Outbound(#[from] OutboundError),
    /// The receiver's status and the start of its answer (its own words: data).
    #[error("answered {status}: {excerpt}")]
    Status { status: u16, excerpt: String },
    #[error("the robot refused it: {code} {reason}")]
    Refused { code: i64, reason: String },
}

type Outcome = Result<u16, (Option<u16>, DeliveryError)>;

/// The longest message kept of a failed attempt, as JSON (its English is cut at 300
/// characters): a receiver's long answer is kept as the English alone.
const MAX_ERROR_JSON: usize = 2_000;

/// Whether an answer means delivered: a 2xx status (and, from a robot, no error code).
fn judge(format: Format, answer: Result<Answer, OutboundError>) -> Outcome {
    match answer {
        Err(err) => Err((None, err.into())),
        Ok(answer) if !(200..300).contains(&answer.status) => {
            let excerpt: String = String::from_utf8_lossy(&answer.body)
                .chars()
                .take(200)
                .collect();
            Err((
                Some(answer.status),
                DeliveryError::Status {
                    status: answer.status,
                    excerpt: excerpt.trim().to_owned(),
                },
            ))
        }
        Ok(answer) if format.is_robot() => match robot::refusal(&answer.body) {
            Some((code, reason)) => {
                Err((Some(answer.status), DeliveryError::Refused { code, reason }))
            }
            None => Ok(answer.status),
        },
        Ok(answer) => Ok(answer.status),
    }
}

/// Puts a claimed message back, due at `at`, without counting an attempt.
async fn postpone(db: &impl ConnectionTrait, id: i64, at: i64) -> Result<(), DbErr> {
    let backend = db.get_database_backend();
    let sql = "UPDATE webhook_message SET next_at = ?, lease_until = 0 WHERE id = ? AND state = ?";
    db.execute_raw(statement(
        backend,
        sql,
        vec![at.into(), id.into(), WAITING.into()],
    ))
    .await?;
    Ok(())
}

/// The wait before attempt `attempts + 1`, after `attempts` failed.
pub fn backoff(first_ms: i64, attempts: i32) -> i64 {
    let doubled = first_ms.saturating_mul(1_i64 << attempts.clamp(0, 30).saturating_sub(1));
    doubled.min(LONGEST_WAIT_MS)
}

/// When a message whose attempt failed at `now` is next due.
fn retry_at(policy: &Policy, message: &Claimed, now: i64) -> i64 {
    now + backoff(policy.first_retry_ms, message.attempts + 1)
}

/// Stores an attempt's outcome (see [`store`]).
async fn record(
    db: &impl ConnectionTrait,
    policy: &Policy,
    metrics: &Metrics,
    message: &Claimed,
    outcome: Outcome,
) -> Result<(), DbErr> {
    let backend = db.get_database_backend();
    let now = outbox::now_ms();
    let attempts = message.attempts + 1;
    match outcome {
        Ok(status) => {
            metrics.webhooks_delivered.fetch_add(1, Relaxed);
            let sql = "UPDATE webhook_message SET state = ?, delivered_at = ?, attempts = ?, \
                       last_status = ?, last_error = NULL, last_error_message = NULL, lease_until = 0 \
                       WHERE id = ?";
            let values: Vec<Value> = vec![
                DELIVERED.into(),
                now.into(),
                attempts.into(),
                i32::from(status).into(),
                message.id.into(),
            ];
            db.execute_raw(statement(backend, sql, values)).await?;
            Ok(())
        }
        Err((status, error)) => {
            metrics.webhook_attempts_failed.fetch_add(1, Relaxed);
            let next = retry_at(policy, message, now);
            let state = match next - message.created_at > RETRY_FOR_MS {
                true => FAILED,
                false => WAITING,
            };
            let shown = serde_json::to_string(&error.says())
                .ok()
                .filter(|json| json.len() <= MAX_ERROR_JSON);
            let error: String = error.to_string().chars().take(300).collect();
            tracing::info!(message = %message.msg_id, attempts, %error, "a webhook attempt failed");
            let sql = "UPDATE webhook_message SET state = ?, next_at = ?, attempts = ?, \
                       last_status = ?, last_error = ?, last_error_message = ?, lease_until = 0 \
                       WHERE id = ?";
            let values: Vec<Value> = vec![
                state.into(),
                next.into(),
                attempts.into(),
                status.map(i32::from).into(),
                error.into(),
                shown.into(),
                message.id.into(),
            ];
            db.execute_raw(statement(backend, sql, values)).await?;
            Ok(())
        }
    }
}

/// Forgets delivered, failed and dropped messages older than `keep_days`, then refreshes the
/// statistics handing on and delivery read (see [`refresh_statistics`]: on PostgreSQL without
/// autovacuum the outbox would otherwise keep every version of every row).
pub async fn prune(db: &DatabaseConnection, keep_days: u32) -> Result<u64, DbErr> {
    let backend = db.get_database_backend();
    let before = outbox::now_ms() - i64::from(keep_days) * 86_400_000;
    let sql = "DELETE FROM webhook_message WHERE created_at < ? AND state <> ?";
    let done = {
        let _turn = crate::db::write_turn(db).await;
        crate::db::execute_retried(
            db,
            statement(backend, sql, vec![before.into(), WAITING.into()]),
        )
        .await?
    };
    refresh_statistics(db).await;
    Ok(done.rows_affected())
}
