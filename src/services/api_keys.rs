//! API keys for business back ends: issued by an admin (or provisioning with the CLI), shown
//! once, stored as a prefix and a SHA-256, revocable.

use super::audit::{self, Actor, Entry};
use crate::db::{self, entities::api_keys, is_unique_violation};
use crate::rules::{ApiToken, KeyName, Role};
use chrono::{DateTime, Utc};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter, QueryOrder,
    Set,
};
use serde_json::json;

#[derive(Debug, thiserror::Error, crate::i18n::Says)]
pub enum KeyError {
    #[error("a key named '{0}' exists already (perhaps revoked); choose another name")]
    NameTaken(String),
    #[error("the expiry {0} is in the past; choose a later date and time")]
    ExpiryInPast(String),
    #[error("there is no such API key")]
    NotFound,
    #[error("database error: {0}")]
    Db(#[from] DbErr),
}

/// Why a presented key is refused.
#[derive(Debug, thiserror::Error, crate::i18n::Says)]
pub enum Refusal {
    #[error("this API key is not known")]
    Unknown,
    #[error("this API key has expired")]
    Expired,
    #[error("this API key has been revoked")]
    Revoked,
    #[error("database error: {0}")]
    Db(#[from] DbErr),
}

/// A new key with its secret, which exists only in this value: show it, then forget it.
pub struct IssuedKey {
    pub key: api_keys::Model,
    pub token: ApiToken,
}

pub async fn create(
    db: &DatabaseConnection,
    name: &KeyName,
    role: Role,
    expires_at: Option<DateTime<Utc>>,
    actor: &Actor,
) -> Result<IssuedKey, KeyError> {
    if let Some(at) = expires_at
        && at <= Utc::now()
    {
        return Err(KeyError::ExpiryInPast(at.to_rfc3339()));
    }
    let token = ApiToken::generate();
    let key = api_keys::ActiveModel {
        name: Set(name.to_string()),
        prefix: Set(token.prefix().to_owned()),
        secret_sha256: Set(token.digest()),
        role: Set(role),
        expires_at: Set(expires_at.map(db::to_stored)),
        revoked: Set(false),
        last_used_at: Set(None),
        created_by: Set(Some(actor.name().to_owned())),
        created_at: Set(db::now()),
        ..Default::default()
    }
    .insert(db)
    .await
    .map_err(|err| match is_unique_violation(&err) {
        true => KeyError::NameTaken(name.to_string()),
        false => KeyError::Db(err),
    })?;
    audit::record(
        db,
        actor,
        Entry {
            action: "api_key.create",
            target_kind: "api_key",
            target_id: &key.name,
            before: None,
            after: Some(json!({"name": key.name, "role": key.role, "prefix": key.prefix, "expires_at": key.expires_at})),
        },
    )
    .await?;
    Ok(IssuedKey { key, token })
}

pub async fn list(db: &DatabaseConnection) -> Result<Vec<api_keys::Model>, DbErr> {
    api_keys::Entity::find()
        .order_by_desc(api_keys::Column::Id)
        .all(db)
        .await
}

pub async fn revoke(
    db: &DatabaseConnection,
    id: i64,
    actor: &Actor,
) -> Result<api_keys::Model, KeyError> {
    let key = api_keys::Entity::find_by_id(id)
        .one(db)
        .await?
        .ok_or(KeyError::NotFound)?;
    if key.revoked {
        return Ok(key);
    }
    let mut row: api_keys::ActiveModel = key.into();
    row.revoked = Set(true);
    let key = row.update(db).await?;
    audit::record(
        db,
        actor,
        Entry {
            action: "api_key.revoke",
            target_kind: "api_key",
            target_id: &key.name,
            before: None,
            after: None,
        },
    )
    .await?;
    Ok(key)
}

/// The key a token belongs to, if it may be used now.
pub async fn authenticate(
    db: &DatabaseConnection,
    token: &ApiToken,
) -> Result<api_keys::Model, Refusal> {
    let Some(key) = api_keys::Entity::find()
        .filter(api_keys::Column::Prefix.eq(token.prefix()))
        .one(db)
        .await?
    else {
        return Err(Refusal::Unknown);
    };
    if key.secret_sha256 != token.digest() {
        return Err(Refusal::Unknown);
    }
    if key.revoked {
        return Err(Refusal::Revoked);
    }
    if key.expires_at.is_some_and(|at| at <= db::now()) {
        return Err(Refusal::Expired);
    }
    Ok(key)
}

/// Records use, at most once a minute per key (a write per request would double the API's
/// database load for a timestamp nobody needs to the second).
pub async fn touch(db: &DatabaseConnection, key: &api_keys::Model) -> Result<(), DbErr> {
    let now = db::now();
    if key
        .last_used_at
        .is_some_and(|at| now - at < chrono::Duration::seconds(60))
    {
        return Ok(());
    }
    let _turn = db::write_turn(db).await;
    api_keys::Entity::update_many()
        .col_expr(
            api_keys::Column::LastUsedAt,
            sea_orm::sea_query::Expr::value(now),
        )
        .filter(api_keys::Column::Id.eq(key.id))
        .exec(db)
        .await
        .map(drop)
}
