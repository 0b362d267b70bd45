//! Campaign batches: one message sent to many recipients, each with a link of their own.
//!
//! - `campaign_batch`: the batch (its link, mode, template, the secret of its receipt URL,
//!   how many recipients it has), one row per batch.
//! - `batch_recipient`: one row per recipient, keyed by (`batch_id`, `number`), the recipient's
//!   place in the batch. `token` is the recipient's own code (`code` mode) or the value of the
//!   `r` parameter (`param` mode); the receipt and the first click are kept as numbers, so that
//!   a recipient costs a few dozen bytes besides the phone number (which, with the variables,
//!   is set to NULL when the retention period ends).
//! - `batch_tally`: the funnel's figures per batch, kept up to date as receipts and clicks
//!   arrive (`kind` names the breakdown, `value` its value), so that the funnel of a batch of
//!   millions is read from a few hundred rows.
//!
//! Times of receipts and clicks are seconds since 1970 (UTC).

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
        let (id, time, text, bin, tail) = match backend {
            DbBackend::MySql => (
                "id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY",
                "DATETIME(6)",
                "TEXT",
                "CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
                " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
            ),
            DbBackend::Postgres => ("id BIGSERIAL PRIMARY KEY", "TIMESTAMP", "TEXT", "", ""),
            _ => (
                "id INTEGER PRIMARY KEY AUTOINCREMENT",
                "TEXT",
                "TEXT",
                "",
                "",
            ),
        };
        db.execute_unprepared(&format!(
            "CREATE TABLE campaign_batch (\
             {id}, \
             name VARCHAR(200) {bin} NOT NULL, \
             link_id BIGINT NOT NULL, \
             mode VARCHAR(8) NOT NULL, \
             token_length SMALLINT NOT NULL, \
             template {text} NOT NULL, \
             variables {text} NOT NULL, \
             count_rule VARCHAR(16) NOT NULL, \
             secret VARCHAR(64) NOT NULL, \
             creator VARCHAR(255) NULL, \
             creator_kind VARCHAR(16) NULL, \
             creator_id BIGINT NULL, \
             created_at {time} NOT NULL, \
             recipients BIGINT NOT NULL DEFAULT 0, \
             rejected BIGINT NOT NULL DEFAULT 0, \
             max_segments INTEGER NOT NULL DEFAULT 0, \
             grown_segments BIGINT NOT NULL DEFAULT 0, \
             ready BOOLEAN NOT NULL DEFAULT FALSE, \
             purged_at {time} NULL){tail}"
        ))
        .await?;
        for (name, cols) in [
            ("idx_campaign_batch_link", "link_id"),
            ("idx_campaign_batch_creator", "creator_kind, creator_id"),
        ] {
            db.execute_unprepared(&format!("CREATE INDEX {name} ON campaign_batch ({cols})"))
                .await?;
        }
        // Columns in an order that wastes no alignment padding on PostgreSQL.
        let rowid = if backend == DbBackend::Sqlite {
            " WITHOUT ROWID"
        } else {
            tail
        };
        db.execute_unprepared(&format!(
            "CREATE TABLE batch_recipient (\
             batch_id BIGINT NOT NULL, \
             receipt_at BIGINT NULL, \
             first_click BIGINT NULL, \
             number INTEGER NOT NULL, \
             clicks SMALLINT NOT NULL DEFAULT 0, \
             receipt SMALLINT NOT NULL DEFAULT 0, \
             token VARCHAR(16) {bin} NOT NULL, \
             phone VARCHAR(20) {bin} NULL, \
             error_code VARCHAR(64) {bin} NULL, \
             province VARCHAR(100) {bin} NULL, \
             city VARCHAR(100) {bin} NULL, \
             carrier VARCHAR(32) {bin} NULL, \
             vars {text} NULL, \
             PRIMARY KEY (batch_id, number)){rowid}"
        ))
        .await?;
        // Tokens are unique by construction (codes from the keyed sequence, parameters from a
        // counter per link), so their index need not say so: a redirect finds a code by it,
        // and counting a click its recipient.
        db.execute_unprepared("CREATE INDEX idx_batch_recipient_token ON batch_recipient (token)")
            .await?;
        // Receipts without a key are matched by phone. Once the numbers are deleted
        // (retention) they leave this index too, where the database can say so.
        let kept = match backend {
            DbBackend::MySql => "",
            _ => " WHERE phone IS NOT NULL",
        };
        db.execute_unprepared(&format!(
            "CREATE INDEX idx_batch_recipient_phone ON batch_recipient (phone, batch_id){kept}"
        ))
        .await?;
        db.execute_unprepared(&format!(
            "CREATE TABLE batch_tally (\
             batch_id BIGINT NOT NULL, \
             delivered BIGINT NOT NULL DEFAULT 0, \
             failed BIGINT NOT NULL DEFAULT 0, \
             clicked BIGINT NOT NULL DEFAULT 0, \
             clicks BIGINT NOT NULL DEFAULT 0, \
             kind VARCHAR(16) {bin} NOT NULL, \
             value VARCHAR(200) {bin} NOT NULL, \
             PRIMARY KEY (batch_id, kind, value)){tail}"
        ))
        .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        for table in ["batch_tally", "batch_recipient", "campaign_batch"] {
            db.execute_unprepared(&format!("DROP TABLE {table}"))
                .await?;
        }
        Ok(())
    }
}
