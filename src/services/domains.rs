//! The hosts short links are served on.

use super::audit::{self, Actor, Entry};
use crate::db::entities::domain_conf::{self, DomainStatus};
use crate::db::{self, is_unique_violation};
use crate::rules::filing::{IcpFiling, SmsTemplates};
use crate::rules::{DomainHost, InAppApps, OwnHost, Protocol, TargetUrl};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveEnum, ActiveModelTrait, ColumnTrait, ConnectionTrait, DatabaseConnection,
    DatabaseTransaction, DbErr, EntityTrait, QueryFilter, QueryOrder, Set,
};
use serde_json::json;

#[derive(Debug, thiserror::Error, crate::i18n::Says)]
pub enum DomainError {
    #[error("the domain '{0}' already exists")]
    Exists(String),
    #[error("database error: {0}")]
    Db(#[from] DbErr),
}

pub async fn list(db: &DatabaseConnection) -> Result<Vec<domain_conf::Model>, DbErr> {
    domain_conf::Entity::find()
        .order_by_asc(domain_conf::Column::Id)
        .all(db)
        .await
}

/// Every domain by id: what [`effective`] and [`short_url`] look links' domains up in.
pub async fn by_id(
    db: &DatabaseConnection,
) -> Result<std::collections::HashMap<i64, domain_conf::Model>, DbErr> {
    Ok(list(db).await?.into_iter().map(|d| (d.id, d)).collect())
}

pub async fn default_domain(db: &DatabaseConnection) -> Result<Option<domain_conf::Model>, DbErr> {
    domain_conf::Entity::find()
        .filter(domain_conf::Column::IsDefault.eq(true))
        .one(db)
        .await
}

pub async fn find_by_host(
    db: &DatabaseConnection,
    host: &DomainHost,
) -> Result<Option<domain_conf::Model>, DbErr> {
    domain_conf::Entity::find()
        .filter(domain_conf::Column::Host.eq(host.to_string()))
        .one(db)
        .await
}

/// Every host we serve, active or not: a target URL on any of them would loop.
pub async fn own_hosts(db: &DatabaseConnection) -> Result<Vec<OwnHost>, DbErr> {
    Ok(list(db)
        .await?
        .iter()
        .map(|domain| {
            let host = DomainHost::from_stored(&domain.host);
            OwnHost {
                host: host.host().to_owned(),
                port: host.port(),
            }
        })
        .collect())
}

pub fn protocol(domain: &domain_conf::Model) -> Protocol {
    domain.protocol.parse().unwrap_or(Protocol::Https)
}

pub fn short_url(domain: &domain_conf::Model, code: &str) -> String {
    format!("{}://{}/{}", protocol(domain).as_str(), domain.host, code)
}

/// Adds a domain. It becomes the default when asked to, or when there is no default yet.
pub async fn add(
    db: &DatabaseConnection,
    host: &DomainHost,
    protocol: Protocol,
    make_default: bool,
    actor: &Actor,
) -> Result<domain_conf::Model, DomainError> {
    // Instances starting together on a new MySQL database all add the first domain: InnoDB
    // may pick one of them as a deadlock's victim; run again, it finds the domain there.
    db::retry_rolled_back(
        async || {
            let txn = db::begin_write(db).await?;
            let added = add_in(&txn, host, protocol, make_default, actor).await;
            db::finish(txn, added).await
        },
        |err| matches!(err, DomainError::Db(err) if db::is_retryable(err)),
    )
    .await
}

async fn add_in(
    txn: &DatabaseTransaction,
    host: &DomainHost,
    protocol: Protocol,
    make_default: bool,
    actor: &Actor,
) -> Result<domain_conf::Model, DomainError> {
    let now = db::now();
    let inserted = domain_conf::ActiveModel {
        host: Set(host.to_string()),
        protocol: Set(protocol.as_str().to_owned()),
        status: Set(DomainStatus::Active),
        is_default: Set(false),
        replaced_by_id: Set(None),
        created_by: Set(Some(actor.name().to_owned())),
        updated_by: Set(Some(actor.name().to_owned())),
        created_at: Set(now),
        updated_at: Set(now),
        ..Default::default()
    }
    .insert(txn)
    .await
    .map_err(|err| match is_unique_violation(&err) {
        true => DomainError::Exists(host.to_string()),
        false => DomainError::Db(err),
    })?;
    let has_default = domain_conf::Entity::find()
        .filter(domain_conf::Column::IsDefault.eq(true))
        .one(txn)
        .await?
        .is_some();
    let domain = if make_default || !has_default {
        set_default_in(txn, inserted.id).await?
    } else {
        inserted
    };
    audit::record(
        txn,
        actor,
        Entry {
            action: "domain.add",
            target_kind: "domain",
            target_id: &domain.host,
            before: None,
            after: Some(json!({"host": domain.host, "protocol": domain.protocol, "default": domain.is_default})),
        },
    )
    .await?;
    Ok(domain)
}

/// Makes one domain the default and every other one not, in the caller's transaction.
async fn set_default_in<C: ConnectionTrait>(
    conn: &C,
    id: i64,
) -> Result<domain_conf::Model, DbErr> {
    domain_conf::Entity::update_many()
        .col_expr(domain_conf::Column::IsDefault, Expr::value(false))
        .filter(domain_conf::Column::IsDefault.eq(true))
        .filter(domain_conf::Column::Id.ne(id))
        .exec(conn)
        .await?;
    // A standby that becomes the default takes new links from now on.
    domain_conf::ActiveModel {
        id: Set(id),
        is_default: Set(true),
        standby: Set(false),
        updated_at: Set(db::now()),
        ..Default::default()
    }
    .update(conn)
    .await
}

/// On a database with no domain at all, adds `host` (http) as the default, so that a fresh
/// install makes working short URLs. Several instances starting at once add it once.
pub async fn ensure_first(db: &DatabaseConnection, host: &DomainHost) -> Result<(), DbErr> {
    if domain_conf::Entity::find().one(db).await?.is_some() {
        return Ok(());
    }
    match add(db, host, Protocol::Http, true, &Actor::System).await {
        Ok(domain) => {
            tracing::info!(host = %domain.host, "added the first domain");
            Ok(())
        }
        Err(DomainError::Exists(_)) => Ok(()),
        Err(DomainError::Db(err)) => Err(err),
    }
}

#[derive(Debug, thiserror::Error, crate::i18n::Says)]
pub enum DomainChangeError {
    #[error("there is no such domain")]
    NotFound,
    #[error("{0} is the default domain; make another domain the default first")]
    IsDefault(String),
    #[error("{0} is disabled; enable it first")]
    Disabled(String),
    #[error("a domain cannot replace itself")]
    SameDomain,
    #[error("{0} has itself been replaced; choose the domain that replaced it")]
    Replaced(String),
    #[error("database error: {0}")]
    Db(#[from] DbErr),
}

async fn get_in<C: ConnectionTrait>(
    conn: &C,
    id: i64,
) -> Result<domain_conf::Model, DomainChangeError> {
    domain_conf::Entity::find_by_id(id)
        .one(conn)
        .await?
        .ok_or(DomainChangeError::NotFound)
}

async fn record_change<C: ConnectionTrait>(
    conn: &C,
    actor: &Actor,
    action: &str,
    before: &domain_conf::Model,
    after: &domain_conf::Model,
) -> Result<(), DbErr> {
    record_change_with(conn, actor, action, before, after, None).await
}

async fn record_change_with<C: ConnectionTrait>(
    conn: &C,
    actor: &Actor,
    action: &str,
    before: &domain_conf::Model,
    after: &domain_conf::Model,
    evidence: Option<serde_json::Value>,
) -> Result<(), DbErr> {
    let view = |d: &domain_conf::Model| json!({"host": d.host, "status": d.status.to_value(), "default": d.is_default, "replaced_by_id": d.replaced_by_id, "in_app_page": d.in_app_page, "fallback_url": d.fallback_url, "standby": d.standby, "failover": d.failover, "icp_filing": d.icp_filing, "sms_templates": d.sms_templates});
    let mut after_view = view(after);
    if let Some(mut evidence) = evidence {
        if let Some(host) = evidence
            .as_object_mut()
            .and_then(|e| e.remove("replaced_by"))
        {
            after_view["replaced_by"] = host;
        }
        if evidence.as_object().is_none_or(|e| !e.is_empty()) {
            after_view["health_check"] = evidence;
        }
    }
    audit::record(
        conn,
        actor,
        Entry {
            action,
            target_kind: "domain",
            target_id: &after.host,
            before: Some(view(before)),
            after: Some(after_view),
        },
    )
    .await
}

/// Makes a domain a standby (or not) and sets its fail-over policy.
pub async fn set_failover(
    db: &DatabaseConnection,
    id: i64,
    standby: Option<bool>,
    failover: Option<crate::rules::health::Failover>,
    actor: &Actor,
) -> Result<domain_conf::Model, DomainChangeError> {
    let txn = db::begin_write(db).await?;
    let result = async {
        let before = get_in(&txn, id).await?;
        if standby == Some(true) && before.is_default {
            return Err(DomainChangeError::IsDefault(before.host));
        }
        let after = domain_conf::ActiveModel {
            id: Set(id),
            standby: Set(standby.unwrap_or(before.standby)),
            failover: Set(failover.map_or(before.failover.clone(), |f| f.as_str().to_owned())),
            updated_by: Set(Some(actor.name().to_owned())),
            updated_at: Set(db::now()),
            ..Default::default()
        }
        .update(&txn)
        .await?;
        record_change(&txn, actor, "domain.failover", &before, &after).await?;
        Ok(after)
    }
    .await;
    db::finish(txn, result).await
}

pub async fn set_default(
    db: &DatabaseConnection,
    id: i64,
    actor: &Actor,
) -> Result<domain_conf::Model, DomainChangeError> {
    let txn = db::begin_write(db).await?;
    let result = async {
        let before = get_in(&txn, id).await?;
        if before.status != DomainStatus::Active {
            return Err(DomainChangeError::Disabled(before.host));
        }
        let after = set_default_in(&txn, id).await?;
        record_change(&txn, actor, "domain.default", &before, &after).await?;
        Ok(after)
    }
    .await;
    db::finish(txn, result).await
}

/// Enables or disables a domain. Links made for a disabled domain keep redirecting (requests
/// on any host are served); new links cannot be made for it.
pub async fn set_status(
    db: &DatabaseConnection,
    id: i64,
    status: DomainStatus,
    actor: &Actor,
) -> Result<domain_conf::Model, DomainChangeError> {
    let txn = db::begin_write(db).await?;
    let result = async {
        let before = get_in(&txn, id).await?;
        if status == DomainStatus::Disabled && before.is_default {
            return Err(DomainChangeError::IsDefault(before.host));
        }
        let after = domain_conf::ActiveModel {
            id: Set(id),
            status: Set(status),
            updated_by: Set(Some(actor.name().to_owned())),
            updated_at: Set(db::now()),
            ..Default::default()
        }
        .update(&txn)
        .await?;
        let action = match status {
            DomainStatus::Active => "domain.enable",
            DomainStatus::Disabled => "domain.disable",
        };
        record_change(&txn, actor, action, &before, &after).await?;
        Ok(after)
    }
    .await;
    db::finish(txn, result).await
}

/// Sets what a domain's links do unless they choose for themselves: the in-app browsers shown
/// the "open in your browser" page, and the fallback of disabled, expired and used-up links
/// (`Some(None)` clears it, `None` keeps it). Every instance applies it within its watch
/// interval.
pub async fn set_link_defaults(
    db: &DatabaseConnection,
    id: i64,
    in_app: Option<InAppApps>,
    fallback: Option<Option<TargetUrl>>,
    actor: &Actor,
) -> Result<domain_conf::Model, DomainChangeError> {
    change_settings(db, id, actor, |change| {
        if let Some(apps) = in_app {
            change.in_app_page = Set((!apps.is_empty()).then(|| apps.to_string()));
        }
        if let Some(fallback) = fallback {
            change.fallback_url = Set(fallback.map(|url| url.to_string()));
        }
    })
    .await
}

/// Changes a domain's settings as `apply` says, in one transaction, audited as
/// `domain.settings` with the values before and after.
async fn change_settings(
    db: &DatabaseConnection,
    id: i64,
    actor: &Actor,
    apply: impl FnOnce(&mut domain_conf::ActiveModel),
) -> Result<domain_conf::Model, DomainChangeError> {
    let txn = db::begin_write(db).await?;
    let result = async {
        let before = get_in(&txn, id).await?;
        let mut change = domain_conf::ActiveModel {
            id: Set(id),
            updated_by: Set(Some(actor.name().to_owned())),
            updated_at: Set(db::now()),
            ..Default::default()
        };
        apply(&mut change);
        let after = change.update(&txn).await?;
        record_change(&txn, actor, "domain.settings", &before, &after).await?;
        Ok(after)
    }
    .await;
    db::finish(txn, result).await
}

/// Sets a domain's ICP filing number and the SMS templates that embed it (`Some(None)` clears
/// one, `None` keeps it), audited.
pub async fn set_filing(
    db: &DatabaseConnection,
    id: i64,
    filing: Option<Option<IcpFiling>>,
    templates: Option<Option<SmsTemplates>>,
    actor: &Actor,
) -> Result<domain_conf::Model, DomainChangeError> {
    change_settings(db, id, actor, |change| {
        if let Some(filing) = filing {
            change.icp_filing = Set(filing.map(|f| f.to_string()));
        }
        if let Some(templates) = templates {
            change.sms_templates = Set(templates.map(|t| t.as_str().to_owned()));
        }
    })
    .await
}

/// The approved SMS templates that embed `domain`: what must be submitted again once it is
/// rotated away.
pub fn templates_to_resubmit(domain: &domain_conf::Model) -> Vec<String> {
    domain
        .sms_templates
        .as_deref()
        .and_then(SmsTemplates::from_stored)
        .map(|t| t.lines().map(str::to_owned).collect())
        .unwrap_or_default()
}

/// Replaces a blocked domain by another in one step: the replacement becomes the default, the
/// blocked one is disabled, and links made for it are shown on the replacement from now on.
/// Requests that still arrive on the blocked host keep redirecting.
pub async fn rotate(
    db: &DatabaseConnection,
    blocked_id: i64,
    replacement_id: i64,
    actor: &Actor,
) -> Result<domain_conf::Model, DomainChangeError> {
    rotate_with(db, blocked_id, replacement_id, actor, None).await
}

/// [`rotate`], with what prompted it (a health check's evidence) in the audit entry. A domain
/// already rotated away is not rotated again (two instances failing over at once rotate once).
pub async fn rotate_with(
    db: &DatabaseConnection,
    blocked_id: i64,
    replacement_id: i64,
    actor: &Actor,
    evidence: Option<serde_json::Value>,
) -> Result<domain_conf::Model, DomainChangeError> {
    if blocked_id == replacement_id {
        return Err(DomainChangeError::SameDomain);
    }
    let txn = db::begin_write(db).await?;
    let result = async {
        let blocked = get_in(&txn, blocked_id).await?;
        if blocked.replaced_by_id.is_some() {
            return Err(DomainChangeError::Replaced(blocked.host));
        }
        let replacement = get_in(&txn, replacement_id).await?;
        if replacement.status != DomainStatus::Active {
            return Err(DomainChangeError::Disabled(replacement.host));
        }
        if replacement.replaced_by_id.is_some() {
            return Err(DomainChangeError::Replaced(replacement.host));
        }
        let replacement = set_default_in(&txn, replacement_id).await?;
        // Conditional on the row as read: a second rotation of the same domain at the same
        // time (another instance) changes nothing and is refused.
        let updated = domain_conf::Entity::update_many()
            .col_expr(
                domain_conf::Column::Status,
                Expr::value(DomainStatus::Disabled.to_value()),
            )
            .col_expr(domain_conf::Column::IsDefault, Expr::value(false))
            .col_expr(
                domain_conf::Column::ReplacedById,
                Expr::value(Some(replacement_id)),
            )
            .col_expr(
                domain_conf::Column::UpdatedBy,
                Expr::value(Some(actor.name().to_owned())),
            )
            .col_expr(domain_conf::Column::UpdatedAt, Expr::value(db::now()))
            .filter(domain_conf::Column::Id.eq(blocked_id))
            .filter(domain_conf::Column::ReplacedById.is_null())
            .exec(&txn)
            .await?;
        if updated.rows_affected != 1 {
            return Err(DomainChangeError::Replaced(blocked.host));
        }
        let after = get_in(&txn, blocked_id).await?;
        // The replacement's host in the entry: what an alert of the rotation names.
        let evidence = match evidence {
            Some(mut evidence) => {
                evidence["replaced_by"] = json!(replacement.host);
                evidence
            }
            None => json!({"replaced_by": replacement.host}),
        };
        record_change_with(
            &txn,
            actor,
            "domain.rotate",
            &blocked,
            &after,
            Some(evidence),
        )
        .await?;
        Ok(replacement)
    }
    .await;
    db::finish(txn, result).await
}

/// The domain a link made for `domain_id` is shown on now: its replacement, if it was rotated
/// away (following a chain of rotations).
pub fn effective(
    domains: &std::collections::HashMap<i64, domain_conf::Model>,
    domain_id: i64,
) -> Option<&domain_conf::Model> {
    let mut domain = domains.get(&domain_id)?;
    // A chain longer than the number of domains would be a cycle; stop there.
    for _ in 0..domains.len() {
        match domain.replaced_by_id.and_then(|next| domains.get(&next)) {
            Some(next) => domain = next,
            None => break,
        }
    }
    Some(domain)
}

/// How many live (not deleted) links were made for each domain.
pub async fn link_counts(
    db: &DatabaseConnection,
) -> Result<std::collections::HashMap<i64, i64>, DbErr> {
    use crate::db::entities::url_map;
    use sea_orm::{FromQueryResult, QuerySelect};
    #[derive(FromQueryResult)]
    struct Count {
        domain_id: i64,
        links: i64,
    }
    let rows = url_map::Entity::find()
        .select_only()
        .column(url_map::Column::DomainId)
        .column_as(url_map::Column::Id.count(), "links")
        .filter(url_map::Column::Deleted.eq(false))
        .group_by(url_map::Column::DomainId)
        .into_model::<Count>()
        .all(db)
        .await?;
    Ok(rows
        .into_iter()
        .map(|row| (row.domain_id, row.links))
        .collect())
}
