//! Single sign-on (OpenID Connect). `user_identity`: which provider subject is which user (a
//! subject is the provider's stable id of a person, never a name or an e-mail a person can
//! change), one user per subject of an issuer. `sso_state`: the states of sign-ins already
//! finished, kept until their cookie expires, so that none is accepted twice.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::{ConnectionTrait, DbBackend};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        let time = match manager.get_database_backend() {
            DbBackend::MySql => "DATETIME(6)",
            DbBackend::Postgres => "TIMESTAMP",
            _ => "TEXT",
        };
        // Issuer and subject are ASCII (OpenID Connect: a subject is at most 255 ASCII
        // characters); on MySQL the pair fits an index as ASCII, not as utf8mb4.
        let ascii = match manager.get_database_backend() {
            DbBackend::MySql => " CHARACTER SET ascii COLLATE ascii_bin",
            _ => "",
        };
        db.execute_unprepared(&format!(
            "CREATE TABLE user_identity (\
             issuer VARCHAR(255){ascii} NOT NULL, \
             subject VARCHAR(255){ascii} NOT NULL, \
             user_id BIGINT NOT NULL, \
             created_at {time} NOT NULL, \
             PRIMARY KEY (issuer, subject))"
        ))
        .await?;
        db.execute_unprepared("CREATE INDEX user_identity_user ON user_identity (user_id)")
            .await?;
        db.execute_unprepared(&format!(
            "CREATE TABLE sso_state (\
             digest VARCHAR(64) NOT NULL PRIMARY KEY, \
             expires_at {time} NOT NULL)"
        ))
        .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        db.execute_unprepared("DROP TABLE sso_state").await?;
        db.execute_unprepared("DROP TABLE user_identity").await?;
        Ok(())
    }
}
