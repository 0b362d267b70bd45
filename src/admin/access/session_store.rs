//! actix-session's store, in the database: a session survives a restart, works on every
//! instance, and sign-out deletes it for good (a cookie-only session could not be revoked).
//! Each write waits its turn among this process's writers ([`crate::db::turns`]): an operator
//! watching a campaign's dashboard must not wait out SQLite's busy timeout behind the click
//! writer.

use crate::db::entities::admin_sessions;
use crate::services::secret::random_hex;
use actix_session::storage::{LoadError, SaveError, SessionKey, SessionStore, UpdateError};
use actix_web::cookie::time::Duration;
use chrono::{NaiveDateTime, TimeDelta};
use sea_orm::sea_query::Expr;
use sea_orm::{ActiveModelTrait, ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter, Set};
use std::collections::HashMap;

type State = HashMap<String, String>;

#[derive(Clone)]
pub struct DbSessionStore {
    db: DatabaseConnection,
}

impl DbSessionStore {
    pub fn new(db: DatabaseConnection) -> Self {
        Self { db }
    }

    /// Deletes sessions past their expiry; run now and then.
    pub async fn purge_expired(&self) -> Result<u64, sea_orm::DbErr> {
        let done = admin_sessions::Entity::delete_many()
            .filter(admin_sessions::Column::ExpiresAt.lte(crate::db::now()))
            .exec(&self.db)
            .await?;
        Ok(done.rows_affected)
    }
}

fn key_hash(key: &SessionKey) -> String {
    crate::digest::sha256_hex(key.as_ref())
}

fn expiry(ttl: &Duration) -> NaiveDateTime {
    crate::db::now() + TimeDelta::seconds(ttl.whole_seconds())
}

impl SessionStore for DbSessionStore {
    async fn load(&self, session_key: &SessionKey) -> Result<Option<State>, LoadError> {
        let row = admin_sessions::Entity::find_by_id(key_hash(session_key))
            .filter(admin_sessions::Column::ExpiresAt.gt(crate::db::now()))
            .one(&self.db)
            .await
            .map_err(|err| LoadError::Other(err.into()))?;
        row.map(|row| serde_json::from_str(&row.state))
            .transpose()
            .map_err(|err| LoadError::Deserialization(err.into()))
    }

    async fn save(&self, state: State, ttl: &Duration) -> Result<SessionKey, SaveError> {
        let text =
            serde_json::to_string(&state).map_err(|err| SaveError::Serialization(err.into()))?;
        let key =
            SessionKey::try_from(random_hex(32)).map_err(|err| SaveError::Other(err.into()))?;
        let _turn = crate::db::write_turn(&self.db).await;
        admin_sessions::ActiveModel {
            key_hash: Set(key_hash(&key)),
            state: Set(text),
            expires_at: Set(expiry(ttl)),
            created_at: Set(crate::db::now()),
        }
        .insert(&self.db)
        .await
        .map_err(|err| SaveError::Other(err.into()))?;
        Ok(key)
    }

    async fn update(
        &self,
        key: SessionKey,
        state: State,
        ttl: &Duration,
    ) -> Result<SessionKey, UpdateError> {
        let text =
            serde_json::to_string(&state).map_err(|err| UpdateError::Serialization(err.into()))?;
        let _turn = crate::db::write_turn(&self.db).await;
        let updated = admin_sessions::Entity::update_many()
            .col_expr(admin_sessions::Column::State, Expr::value(text))
            .col_expr(admin_sessions::Column::ExpiresAt, Expr::value(expiry(ttl)))
            .filter(admin_sessions::Column::KeyHash.eq(key_hash(&key)))
            .exec(&self.db)
            .await
            .map_err(|err| UpdateError::Other(err.into()))?;
        if updated.rows_affected == 0 {
            // Deleted meanwhile (signed out, or a password reset): it stays deleted. Saving it
            // again would bring a signed-out session back under a new key; the cookie now
            // points at nothing and the next request finds an empty session.
            tracing::debug!("a session ended while a request held it; not saved again");
        }
        Ok(key)
    }

    async fn update_ttl(&self, key: &SessionKey, ttl: &Duration) -> Result<(), anyhow::Error> {
        let _turn = crate::db::write_turn(&self.db).await;
        admin_sessions::Entity::update_many()
            .col_expr(admin_sessions::Column::ExpiresAt, Expr::value(expiry(ttl)))
            .filter(admin_sessions::Column::KeyHash.eq(key_hash(key)))
            .exec(&self.db)
            .await?;
        Ok(())
    }

    async fn delete(&self, key: &SessionKey) -> Result<(), anyhow::Error> {
        let _turn = crate::db::write_turn(&self.db).await;
        admin_sessions::Entity::delete_by_id(key_hash(key))
            .exec(&self.db)
            .await?;
        Ok(())
    }
}
