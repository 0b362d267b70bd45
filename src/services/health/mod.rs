//! Domain health: every active domain checked every `INKLINK_DOMAIN_CHECK_INTERVAL` by the
//! configured probes (`probe`), its state kept with hysteresis (`rules::health`), every change
//! of state in the audit log and out as a webhook event (`domain.suspect`, `domain.blocked`,
//! `domain.recovered`), and a default domain found blocked rotated to a healthy standby when
//! its policy is `auto`. One instance probes at a time (a lease row); every instance reads the
//! default domain's state for the admin UI's banner.

pub mod probe;

use super::audit::{self, Actor, Entry};
use super::domains::{self, DomainChangeError};
use crate::db::entities::domain_conf::{self, DomainStatus};
use crate::db::sql::statement;
use crate::i18n::Message;
use crate::rules::health::{Failover, HealthState, Hysteresis, Outcome};
use crate::state::{DomainAlert, Inklink};
use probe::{Finding, Probes};
use sea_orm::{ConnectionTrait, DatabaseConnection, DbErr, Value};
use serde_json::json;
use std::collections::HashMap;
use std::time::Duration;

/// The longest reason message kept (JSON bytes); the English `reason` is cut at 300 characters.
const MAX_REASON_JSON: usize = 2_000;

/// Days of state changes kept (the history strip shows 7).
const HISTORY_DAYS: i64 = 30;

/// A domain's health as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Health {
    pub state: HealthState,
    /// Why, in English (the API, the CLI, webhooks).
    pub reason: String,
    /// Why, as the message a person reads (none for rows stored before it was kept).
    pub reason_message: Option<Message>,
    /// Milliseconds since 1970.
    pub checked_at: i64,
    pub changed_at: i64,
    pub recent: String,
    pub rotated_at: Option<i64>,
}

impl Health {
    /// Why, in the reader's language: the message kept. A row checked before messages were
    /// kept (until its domain's next check, minutes after an upgrade) has only its English,
    /// shown as stored.
    pub fn reason_shown(&self) -> Message {
        self.reason_message
            .clone()
            .unwrap_or_else(|| Message::plain(self.reason.clone()))
    }

    fn unknown() -> Self {
        Self {
            state: HealthState::Unknown,
            reason: String::new(),
            reason_message: None,
            checked_at: 0,
            changed_at: 0,
            recent: String::new(),
            rotated_at: None,
        }
    }
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// Every domain's health, by domain id (domains never checked are missing).
pub async fn all(db: &impl ConnectionTrait) -> Result<HashMap<i64, Health>, DbErr> {
    let backend = db.get_database_backend();
    let sql = "SELECT domain_id, state, reason, reason_message, checked_at, changed_at, recent, \
               rotated_at FROM domain_health";
    let rows = db.query_all_raw(statement(backend, sql, vec![])).await?;
    rows.iter()
        .map(|row| {
            Ok((
                row.try_get("", "domain_id")?,
                Health {
                    state: HealthState::from_stored(&row.try_get::<String>("", "state")?),
                    reason: row.try_get("", "reason")?,
                    reason_message: row
                        .try_get::<Option<String>>("", "reason_message")?
                        .and_then(|json| serde_json::from_str(&json).ok()),
                    checked_at: row.try_get("", "checked_at")?,
                    changed_at: row.try_get("", "changed_at")?,
                    recent: row.try_get("", "recent")?,
                    rotated_at: row.try_get("", "rotated_at")?,
                },
            ))
        })
        .collect()
}

/// The changes of state since `since` (ms), per domain, oldest first: (time, state).
pub async fn history(
    db: &DatabaseConnection,
    since: i64,
) -> Result<HashMap<i64, Vec<(i64, HealthState)>>, DbErr> {
    let backend = db.get_database_backend();
    let sql = "SELECT domain_id, at, state FROM domain_change WHERE at >= ? ORDER BY at";
    let mut out: HashMap<i64, Vec<(i64, HealthState)>> = HashMap::new();
    for row in db
        .query_all_raw(statement(backend, sql, vec![since.into()]))
        .await?
    {
        let state: String = row.try_get("", "state")?;
        out.entry(row.try_get("", "domain_id")?)
            .or_default()
            .push((row.try_get("", "at")?, HealthState::from_stored(&state)));
    }
    Ok(out)
}

/// The worst state of each of the last `days` days (oldest first), from the changes and the
/// state before them.
pub fn strip(changes: &[(i64, HealthState)], now: i64, days: i64) -> Vec<HealthState> {
    let rank = |s: HealthState| match s {
        HealthState::Blocked => 3,
        HealthState::Suspect => 2,
        HealthState::Healthy => 1,
        HealthState::Unknown => 0,
    };
    let day = 86_400_000;
    (0..days)
        .rev()
        .map(|back| {
            let (start, end) = (now - (back + 1) * day, now - back * day);
            // The state going into the day, and every state the day changed to.
            let before = changes
                .iter()
                .rev()
                .find(|(at, _)| *at < start)
                .map(|(_, s)| *s);
            changes
                .iter()
                .filter(|(at, _)| *at >= start && *at < end)
                .map(|(_, s)| *s)
                .chain(before)
                .max_by_key(|s| rank(*s))
                .unwrap_or(HealthState::Unknown)
        })
        .collect()
}

fn hysteresis(app: &Inklink) -> Hysteresis {
    let window = app.settings.domain_check_window as usize;
    Hysteresis {
        failures: (app.settings.domain_blocked_after as usize).min(window),
        window,
    }
}

/// Stores one check's outcome for `domain`; on a change of state records it (history, audit
/// log, webhook event) and returns the states before and after.
pub async fn record(
    app: &Inklink,
    domain: &domain_conf::Model,
    outcome: Outcome,
    reason: Option<&Message>,
) -> Result<Option<(HealthState, HealthState)>, DbErr> {
    let db = &app.db;
    let txn = crate::db::begin_write(db).await?;
    let result = async {
        let backend = txn.get_database_backend();
        let stored = all(&txn).await?.remove(&domain.id);
        let exists = stored.is_some();
        let before = stored.unwrap_or_else(Health::unknown);
        let rules = hysteresis(app);
        let recent = rules.remember(&before.recent, outcome);
        let state = rules.state(before.state, &recent);
        let now = now_ms();
        let (reason, message): (String, Option<String>) = match (state, reason) {
            // Without a reason, a state other than healthy keeps the one it had; healthy keeps
            // only this check's note (a certificate about to expire).
            (HealthState::Healthy, None) => (String::new(), None),
            (_, None) => (
                before.reason.clone(),
                before
                    .reason_message
                    .as_ref()
                    .and_then(|m| serde_json::to_string(m).ok()),
            ),
            // Bounded like the English: a message whose values run long (a far end's error
            // text) is kept as its English alone.
            (_, Some(message)) => (
                message.to_string().chars().take(300).collect(),
                serde_json::to_string(message)
                    .ok()
                    .filter(|json| json.len() <= MAX_REASON_JSON),
            ),
        };
        let changed = state != before.state;
        let changed_at = if changed { now } else { before.changed_at };
        let (sql, values): (&str, Vec<Value>) = match exists {
            true => (
                "UPDATE domain_health SET state = ?, reason = ?, reason_message = ?, \
                 checked_at = ?, changed_at = ?, recent = ? WHERE domain_id = ?",
                vec![
                    state.as_str().into(),
                    reason.clone().into(),
                    message.clone().into(),
                    now.into(),
                    changed_at.into(),
                    recent.clone().into(),
                    domain.id.into(),
                ],
            ),
            false => (
                "INSERT INTO domain_health (state, reason, reason_message, checked_at, \
                 changed_at, recent, domain_id) VALUES (?, ?, ?, ?, ?, ?, ?)",
                vec![
                    state.as_str().into(),
                    reason.clone().into(),
                    message.clone().into(),
                    now.into(),
                    changed_at.into(),
                    recent.clone().into(),
                    domain.id.into(),
                ],
            ),
        };
        txn.execute_raw(statement(backend, sql, values)).await?;
        if !changed {
            return Ok(None);
        }
        let sql = "INSERT INTO domain_change (domain_id, at, state, reason) VALUES (?, ?, ?, ?)";
        let values: Vec<Value> = vec![
            domain.id.into(),
            now.into(),
            state.as_str().into(),
            reason.clone().into(),
        ];
        txn.execute_raw(statement(backend, sql, values)).await?;
        let sql = "DELETE FROM domain_change WHERE at < ?";
        let old = now - HISTORY_DAYS * 86_400_000;
        txn.execute_raw(statement(backend, sql, vec![old.into()]))
            .await?;
        let action = match (before.state, state) {
            (_, HealthState::Blocked) => Some("domain.blocked"),
            (_, HealthState::Suspect) => Some("domain.suspect"),
            (HealthState::Suspect | HealthState::Blocked, HealthState::Healthy) => {
                Some("domain.recovered")
            }
            _ => None,
        };
        if let Some(action) = action {
            // What a chat group reads: the kept message, else the English as it is.
            let shown = message
                .as_deref()
                .and_then(|json| serde_json::from_str(json).ok())
                .unwrap_or_else(|| Message::plain(reason.clone()));
            audit::record_with_reason(
                &txn,
                &Actor::System,
                Entry {
                    action,
                    target_kind: "domain",
                    target_id: &domain.host,
                    before: Some(json!({"state": before.state.as_str()})),
                    after: Some(
                        json!({"state": state.as_str(), "reason": reason, "by": "health check"}),
                    ),
                },
                &shown,
            )
            .await?;
        }
        Ok(Some((before.state, state)))
    }
    .await;
    crate::db::finish(txn, result).await
}

/// Why an automatic fail-over did not happen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoFailover {
    NoHealthyStandby,
    Quiet,
}

/// Rotates the blocked default domain `blocked` to the first healthy, active standby, unless
/// a rotation happened within the quiet time; returns the new default.
pub async fn fail_over(
    app: &Inklink,
    blocked: &domain_conf::Model,
    evidence: &str,
) -> Result<Result<domain_conf::Model, NoFailover>, DomainChangeError> {
    let db = &app.db;
    let health = all(db).await?;
    let quiet = app.settings.domain_failover_quiet as i64 * 1000;
    let last = health.values().filter_map(|h| h.rotated_at).max();
    if last.is_some_and(|at| now_ms() - at < quiet) {
        return Ok(Err(NoFailover::Quiet));
    }
    let standby = domains::list(db).await?.into_iter().find(|d| {
        d.id != blocked.id
            && d.standby
            && d.status == DomainStatus::Active
            && d.replaced_by_id.is_none()
            && health
                .get(&d.id)
                .is_some_and(|h| h.state == HealthState::Healthy)
    });
    let Some(standby) = standby else {
        return Ok(Err(NoFailover::NoHealthyStandby));
    };
    let evidence = json!({"by": "health check", "evidence": evidence});
    let rotated =
        domains::rotate_with(db, blocked.id, standby.id, &Actor::System, Some(evidence)).await?;
    let backend = db.get_database_backend();
    let sql = "UPDATE domain_health SET rotated_at = ? WHERE domain_id = ?";
    let _turn = crate::db::write_turn(db).await;
    db.execute_raw(statement(
        backend,
        sql,
        vec![now_ms().into(), blocked.id.into()],
    ))
    .await?;
    Ok(Ok(rotated))
}

/// Checks every active domain once (the default first) and acts on what changed.
pub async fn check_round(app: &Inklink, probes: &Probes) -> Result<(), DbErr> {
    let mut list: Vec<domain_conf::Model> = domains::list(&app.db)
        .await?
        .into_iter()
        .filter(|d| d.status == DomainStatus::Active && d.replaced_by_id.is_none())
        .collect();
    // Standbys first: fail-over needs to know them healthy when the default is found blocked.
    list.sort_by_key(|d| (d.is_default, d.id));
    for domain in list {
        let findings = probes.check(&domain).await;
        // Nothing learnt (no probe applies to it this round): nothing to record.
        if findings.is_empty() {
            continue;
        }
        let (outcome, why) = probe::combine(&findings);
        let changed = record(app, &domain, outcome, why.as_ref()).await?;
        let reason = why.as_ref().map(ToString::to_string).unwrap_or_default();
        if changed.map(|(_, now)| now) == Some(HealthState::Blocked) && domain.is_default {
            match Failover::from_stored(&domain.failover) {
                Failover::Auto => match fail_over(app, &domain, &reason).await {
                    Ok(Ok(to)) => {
                        tracing::warn!(from = %domain.host, to = %to.host, "the default domain was blocked; rotated to a standby")
                    }
                    Ok(Err(why)) => {
                        tracing::warn!(host = %domain.host, ?why, "the default domain is blocked and was not rotated")
                    }
                    Err(DomainChangeError::Db(err)) => return Err(err),
                    Err(err) => {
                        tracing::warn!(host = %domain.host, error = %err, "the default domain is blocked; rotation refused")
                    }
                },
                Failover::Confirm | Failover::Off => {
                    tracing::warn!(host = %domain.host, %reason, "the default domain is blocked")
                }
            }
        }
    }
    Ok(())
}

/// The probes' findings about one domain, without recording them (`inklink domain check`).
pub async fn check_now(app: &Inklink, domain: &domain_conf::Model) -> Vec<Finding> {
    Probes::new(&app.settings, &app.db).check(domain).await
}

/// Takes (or keeps) the probing lease for `holder` until `until`; false: another instance
/// holds it.
async fn take_lease(db: &DatabaseConnection, holder: &str, until: i64) -> Result<bool, DbErr> {
    let backend = db.get_database_backend();
    let sql =
        "UPDATE probe_lease SET holder = ?, until = ? WHERE id = 1 AND (until < ? OR holder = ?)";
    let values: Vec<Value> = vec![holder.into(), until.into(), now_ms().into(), holder.into()];
    let _turn = crate::db::write_turn(db).await;
    Ok(db
        .execute_raw(statement(backend, sql, values))
        .await?
        .rows_affected()
        == 1)
}

/// Reads the default domain's state into the banner every admin page shows.
pub async fn refresh_alert(app: &Inklink) -> Result<(), DbErr> {
    let alert = match domains::default_domain(&app.db).await? {
        None => None,
        Some(domain) => all(&app.db).await?.remove(&domain.id).and_then(|h| {
            let state = match h.state {
                HealthState::Blocked => "blocked",
                HealthState::Suspect => "suspect",
                _ => return None,
            };
            Some(DomainAlert {
                host: domain.host.clone(),
                state,
                reason: h.reason_shown(),
            })
        }),
    };
    if let Ok(mut shown) = app.domain_alert.write() {
        *shown = alert;
    }
    Ok(())
}

/// Runs for the server's life on the thread of outbound work (the HTTP client is not `Send`).
pub async fn run(app: std::sync::Arc<Inklink>) {
    let probes = Probes::new(&app.settings, &app.db);
    let interval = Duration::from_secs(app.settings.domain_check_interval);
    let holder = format!(
        "{}-{}",
        std::process::id(),
        crate::digest::hex(&super::secret::random_bytes::<6>())
    );
    // The banner is read more often than domains are probed: a rotation made by hand shows
    // within seconds on every instance.
    let tick = interval.min(Duration::from_secs(10));
    let mut probed = tokio::time::Instant::now();
    loop {
        tokio::time::sleep(tick).await;
        if probes.any() && probed.elapsed() >= interval {
            probed = tokio::time::Instant::now();
            let lease = now_ms() + 2 * interval.as_millis() as i64 + 30_000;
            match take_lease(&app.db, &holder, lease).await {
                Ok(true) => {
                    if let Err(err) = check_round(&app, &probes).await {
                        tracing::warn!(error = %err, "cannot record domain health; will retry");
                    }
                }
                Ok(false) => {}
                Err(err) => tracing::debug!(error = %err, "cannot take the probing lease"),
            }
        }
        if let Err(err) = refresh_alert(&app).await {
            tracing::debug!(error = %err, "cannot read the default domain's health");
        }
    }
}
