//! The hosts short links are served on.

use super::audit::{self, Actor, Entry};
use crate::db::entities::domain_conf::{self, DomainStatus};
use crate::db::{self, is_unique_violation};
use crate::rules::{DomainHost, OwnHost, Protocol};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DatabaseConnection, DatabaseTransaction, DbErr,
    EntityTrait, QueryFilter, QueryOrder, Set, TransactionTrait,
};
use serde_json::json;

#[derive(Debug, thiserror::Error)]
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
    let txn = db.begin().await?;
    let added = add_in(&txn, host, protocol, make_default, actor).await;
    db::finish(txn, added).await
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
    domain_conf::ActiveModel {
        id: Set(id),
        is_default: Set(true),
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
