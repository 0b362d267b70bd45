//! Two-factor sign-in (TOTP, RFC 6238). On `users`: `totp_secret`, the authenticator's secret
//! sealed with the server's key (`NULL`: no second factor), and `totp_step`, the time step of
//! the last code accepted, so that no code opens twice. `recovery_code`: each user's one-time
//! recovery codes, as SHA-256 digests; a used one keeps its row with `used_at`.

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
        db.execute_unprepared("ALTER TABLE users ADD COLUMN totp_secret VARCHAR(200) NULL")
            .await?;
        db.execute_unprepared("ALTER TABLE users ADD COLUMN totp_step BIGINT NULL")
            .await?;
        db.execute_unprepared(&format!(
            "CREATE TABLE recovery_code (\
             user_id BIGINT NOT NULL, \
             digest VARCHAR(64) NOT NULL, \
             used_at {time} NULL, \
             PRIMARY KEY (user_id, digest))"
        ))
        .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        db.execute_unprepared("DROP TABLE recovery_code").await?;
        db.execute_unprepared("ALTER TABLE users DROP COLUMN totp_step")
            .await?;
        db.execute_unprepared("ALTER TABLE users DROP COLUMN totp_secret")
            .await?;
        Ok(())
    }
}
