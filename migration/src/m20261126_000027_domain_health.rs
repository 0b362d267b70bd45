//! Domain health: each domain's probed state, the changes of state (its history), which
//! domains are standbys and each default domain's fail-over policy.
//!
//! - `domain_conf.standby`: an active domain that takes no new links until it is the default;
//!   `domain_conf.failover`: `off`, `confirm` or `auto`.
//! - `domain_health`: one row per probed domain: `state` (`healthy`, `suspect`, `blocked`,
//!   `unknown`), why, when it was last checked and last changed (milliseconds since 1970),
//!   and `recent`, the outcomes of the last checks, newest last (`o` passed, `f` failed,
//!   `u` unknown), from which the hysteresis reads.
//! - `domain_change`: one row per change of state, for the history strip.
//! - `probe_lease`: one row; the instance whose lease it is probes, the others wait.

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
        let backend = manager.get_database_backend();
        let db = manager.get_connection();
        let (id, bin, tail) = match backend {
            DbBackend::MySql => (
                "id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY",
                "CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
                " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
            ),
            DbBackend::Postgres => ("id BIGSERIAL PRIMARY KEY", "", ""),
            _ => ("id INTEGER PRIMARY KEY AUTOINCREMENT", "", ""),
        };
        for sql in [
            "ALTER TABLE domain_conf ADD COLUMN standby BOOLEAN NOT NULL DEFAULT FALSE",
            "ALTER TABLE domain_conf ADD COLUMN failover VARCHAR(8) NOT NULL DEFAULT 'off'",
        ] {
            db.execute_unprepared(sql).await?;
        }
        db.execute_unprepared(&format!(
            "CREATE TABLE domain_health (\
             domain_id BIGINT NOT NULL PRIMARY KEY, \
             checked_at BIGINT NOT NULL, \
             changed_at BIGINT NOT NULL, \
             rotated_at BIGINT NULL, \
             state VARCHAR(12) NOT NULL, \
             recent VARCHAR(32) NOT NULL, \
             reason VARCHAR(300) {bin} NOT NULL){tail}"
        ))
        .await?;
        db.execute_unprepared(&format!(
            "CREATE TABLE domain_change (\
             {id}, \
             domain_id BIGINT NOT NULL, \
             at BIGINT NOT NULL, \
             state VARCHAR(12) NOT NULL, \
             reason VARCHAR(300) {bin} NOT NULL){tail}"
        ))
        .await?;
        db.execute_unprepared("CREATE INDEX idx_domain_change ON domain_change (domain_id, at)")
            .await?;
        db.execute_unprepared(&format!(
            "CREATE TABLE probe_lease (id INTEGER NOT NULL PRIMARY KEY, \
             holder VARCHAR(64) NOT NULL, until BIGINT NOT NULL){tail}"
        ))
        .await?;
        db.execute_unprepared("INSERT INTO probe_lease (id, holder, until) VALUES (1, '', 0)")
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        for table in ["probe_lease", "domain_change", "domain_health"] {
            db.execute_unprepared(&format!("DROP TABLE {table}"))
                .await?;
        }
        for column in ["failover", "standby"] {
            db.execute_unprepared(&format!("ALTER TABLE domain_conf DROP COLUMN {column}"))
                .await?;
        }
        Ok(())
    }
}
