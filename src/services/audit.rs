//! Who did what to which link, domain, user or key.

use crate::db::{self, entities::audit_log};
use sea_orm::{ActiveModelTrait, ConnectionTrait, DbErr, EntityTrait, Set};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Actor {
    Cli,
    System,
    User(String),
    ApiKey(String),
}

impl Actor {
    pub fn name(&self) -> &str {
        match self {
            Self::Cli => "cli",
            Self::System => "system",
            Self::User(name) | Self::ApiKey(name) => name,
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            Self::Cli => "cli",
            Self::System => "system",
            Self::User(_) => "user",
            Self::ApiKey(_) => "api_key",
        }
    }
}

pub struct Entry<'a> {
    pub action: &'a str,
    pub target_kind: &'a str,
    pub target_id: &'a str,
    pub before: Option<serde_json::Value>,
    pub after: Option<serde_json::Value>,
}

fn row(actor: &Actor, entry: Entry<'_>) -> audit_log::ActiveModel {
    audit_log::ActiveModel {
        at: Set(db::now()),
        actor: Set(actor.name().to_owned()),
        actor_kind: Set(actor.kind().to_owned()),
        action: Set(entry.action.to_owned()),
        target_kind: Set(entry.target_kind.to_owned()),
        target_id: Set(entry.target_id.to_owned()),
        before_state: Set(entry.before.map(|v| v.to_string())),
        after_state: Set(entry.after.map(|v| v.to_string())),
        ..Default::default()
    }
}

/// Many entries by one actor in one statement (bulk creation).
pub async fn record_many<C: ConnectionTrait>(
    conn: &C,
    actor: &Actor,
    entries: Vec<Entry<'_>>,
) -> Result<(), DbErr> {
    if entries.is_empty() {
        return Ok(());
    }
    audit_log::Entity::insert_many(entries.into_iter().map(|entry| row(actor, entry)))
        .exec(conn)
        .await
        .map(drop)
}

pub async fn record<C: ConnectionTrait>(
    conn: &C,
    actor: &Actor,
    entry: Entry<'_>,
) -> Result<(), DbErr> {
    row(actor, entry).insert(conn).await?;
    Ok(())
}
