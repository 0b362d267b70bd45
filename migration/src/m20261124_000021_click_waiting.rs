//! Clicks waiting to be counted are listed in a table of their own, `click_waiting`, keyed
//! like `click` by (`at`, `event_key`), instead of a `counted` flag on every click.
//!
//! The flag cost every click twice on PostgreSQL: the index of uncounted clicks held each new
//! row until it was counted, and marking it counted wrote a new version of the row, the old
//! one dead until a vacuum. Now `click` is only ever inserted into and deleted from, and the
//! list holds only what is waiting: a row is added with its click and deleted once counted.
//!
//! `click` is made again without the column rather than altered: on PostgreSQL a dropped
//! column stays in every row's header as a NULL, which costs 8 bytes per row.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::{ConnectionTrait, DbBackend};

#[derive(DeriveMigrationName)]
pub struct Migration;

const COLUMNS: &str =
    "at, link, code, host, agent, referer, query, place, outcome, bot, event_key, ip, visitor";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let backend = manager.get_database_backend();
        let db = manager.get_connection();
        let (bytes, tail) = match backend {
            DbBackend::MySql => (
                "VARBINARY(64)",
                " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
            ),
            DbBackend::Postgres => ("BYTEA", ""),
            _ => ("BLOB", " WITHOUT ROWID"),
        };
        db.execute_unprepared(&format!(
            "CREATE TABLE click_waiting (\
             at BIGINT NOT NULL, \
             event_key {bytes} NOT NULL, \
             PRIMARY KEY (at, event_key)){tail}"
        ))
        .await?;
        db.execute_unprepared(
            "INSERT INTO click_waiting (at, event_key) \
             SELECT at, event_key FROM click WHERE counted = FALSE",
        )
        .await?;
        // Columns in an order that wastes no alignment padding on PostgreSQL.
        db.execute_unprepared(&format!(
            "CREATE TABLE click_next (\
             at BIGINT NOT NULL, \
             link BIGINT NULL, \
             code INTEGER NOT NULL, \
             host INTEGER NULL, \
             agent INTEGER NULL, \
             referer INTEGER NULL, \
             query INTEGER NULL, \
             place INTEGER NULL, \
             outcome INTEGER NOT NULL, \
             bot BOOLEAN NOT NULL, \
             event_key {bytes} NOT NULL, \
             ip {bytes} NOT NULL, \
             visitor {bytes} NULL, \
             PRIMARY KEY (at, event_key)){tail}"
        ))
        .await?;
        db.execute_unprepared(&format!(
            "INSERT INTO click_next ({COLUMNS}) SELECT {COLUMNS} FROM click"
        ))
        .await?;
        db.execute_unprepared("DROP TABLE click").await?;
        let rename = match backend {
            DbBackend::MySql => "RENAME TABLE click_next TO click",
            _ => "ALTER TABLE click_next RENAME TO click",
        };
        db.execute_unprepared(rename).await?;
        if backend == DbBackend::Postgres {
            db.execute_unprepared(
                "ALTER TABLE click RENAME CONSTRAINT click_next_pkey TO click_pkey",
            )
            .await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        db.execute_unprepared("ALTER TABLE click ADD COLUMN counted BOOLEAN NOT NULL DEFAULT TRUE")
            .await?;
        db.execute_unprepared(
            "UPDATE click SET counted = FALSE WHERE EXISTS (SELECT 1 FROM click_waiting w \
             WHERE w.at = click.at AND w.event_key = click.event_key)",
        )
        .await?;
        db.execute_unprepared("DROP TABLE click_waiting").await?;
        let uncounted = match manager.get_database_backend() {
            DbBackend::MySql => "CREATE INDEX idx_click_uncounted ON click (counted, at)",
            _ => "CREATE INDEX idx_click_uncounted ON click (at, event_key) WHERE counted = FALSE",
        };
        db.execute_unprepared(uncounted).await?;
        Ok(())
    }
}
