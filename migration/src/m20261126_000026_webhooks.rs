//! Webhooks: subscriptions, their durable outbox, and the list of counted clicks waiting to be
//! handed to subscriptions of `link.clicked`.
//!
//! - `webhook`: one row per subscription (its receiver's URL, format, events, signing secret,
//!   owner). `robot_next_at` spaces a chat-group robot's messages (milliseconds since 1970).
//! - `webhook_message`: the outbox, one row per message to one subscription, kept after
//!   delivery for the list of recent deliveries and for replays. `msg_id` is the
//!   `webhook-id` every attempt of the message carries. `state`: 0 waiting, 1 delivered,
//!   2 failed (retries exhausted), 3 dropped (the subscription's outbox was full). Times are
//!   milliseconds since 1970; `lease_until` is when an instance's claim on the message ends.
//! - `click_outgoing`: counted clicks not yet handed on, keyed like `click`. Counting adds a
//!   turn's clicks here (in the turn's transaction) only while a subscription wants clicks.
//! - `webhook_turn`: one row whose lock makes one instance at a time hand clicks on.

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
        let (id, big_text, bytes, bin, tail, rowid) = match backend {
            DbBackend::MySql => (
                "id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY",
                "LONGTEXT",
                "VARBINARY(64)",
                "CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
                " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
                "",
            ),
            DbBackend::Postgres => ("id BIGSERIAL PRIMARY KEY", "TEXT", "BYTEA", "", "", ""),
            _ => (
                "id INTEGER PRIMARY KEY AUTOINCREMENT",
                "TEXT",
                "BLOB",
                "",
                "",
                " WITHOUT ROWID",
            ),
        };
        db.execute_unprepared(&format!(
            "CREATE TABLE webhook (\
             {id}, \
             url VARCHAR(2000) {bin} NOT NULL, \
             format VARCHAR(16) NOT NULL, \
             events VARCHAR(500) NOT NULL, \
             description VARCHAR(200) {bin} NOT NULL, \
             secret VARCHAR(100) NOT NULL, \
             enabled BOOLEAN NOT NULL, \
             language VARCHAR(8) NOT NULL, \
             owner_kind VARCHAR(16) NULL, \
             owner_id BIGINT NULL, \
             owner_name VARCHAR(255) {bin} NOT NULL, \
             created_at BIGINT NOT NULL, \
             robot_next_at BIGINT NOT NULL DEFAULT 0){tail}"
        ))
        .await?;
        db.execute_unprepared(&format!(
            "CREATE TABLE webhook_message (\
             {id}, \
             webhook_id BIGINT NOT NULL, \
             created_at BIGINT NOT NULL, \
             next_at BIGINT NOT NULL, \
             lease_until BIGINT NOT NULL DEFAULT 0, \
             delivered_at BIGINT NULL, \
             attempts INTEGER NOT NULL DEFAULT 0, \
             items INTEGER NOT NULL DEFAULT 1, \
             state SMALLINT NOT NULL DEFAULT 0, \
             last_status INTEGER NULL, \
             msg_id VARCHAR(40) NOT NULL, \
             event VARCHAR(40) NOT NULL, \
             last_error VARCHAR(300) NULL, \
             body {big_text} NOT NULL){tail}"
        ))
        .await?;
        for (name, cols) in [
            ("idx_webhook_message_due", "state, next_at"),
            ("idx_webhook_message_hook", "webhook_id, id"),
            ("idx_webhook_message_created", "created_at"),
        ] {
            db.execute_unprepared(&format!("CREATE INDEX {name} ON webhook_message ({cols})"))
                .await?;
        }
        db.execute_unprepared(&format!(
            "CREATE TABLE click_outgoing (\
             at BIGINT NOT NULL, \
             event_key {bytes} NOT NULL, \
             PRIMARY KEY (at, event_key)){tail}{rowid}"
        ))
        .await?;
        db.execute_unprepared(&format!(
            "CREATE TABLE webhook_turn (id INTEGER NOT NULL PRIMARY KEY, taken BIGINT NOT NULL){tail}"
        ))
        .await?;
        db.execute_unprepared("INSERT INTO webhook_turn (id, taken) VALUES (1, 0)")
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        for table in [
            "webhook_turn",
            "click_outgoing",
            "webhook_message",
            "webhook",
        ] {
            db.execute_unprepared(&format!("DROP TABLE {table}"))
                .await?;
        }
        Ok(())
    }
}
