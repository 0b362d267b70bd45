//! Visitors' and addresses' numbers handed out lately, kept apart from `visit_key` until their
//! part of the hash range is moved in (`visit_key_recent`). `visit_key` is keyed by a hash, so
//! a turn's new visitors landed all over it: once a deployment had numbered millions, each
//! turn changed nearly every page of the table, and counting a burst's new visitors took four
//! times the CPU it took on a fresh database (bench/README.md). New numbers now go to the
//! small table, and each turn moves one sixteenth of the hash range from it into `visit_key`,
//! so that a turn changes the small table and one stretch of the large one. Every number is in
//! exactly one of the two.
//!
//! That is SQLite's way, which keeps a table in the order of its key. PostgreSQL and
//! MySQL/MariaDB did not slow that way and keep writing new numbers straight into `visit_key`
//! (`stats::daysets::numbers`); the table is created there too, empty, so that every database
//! has the same tables.
//!
//! Going back down moves every recent number into `visit_key`.

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
        // As `visit_key` (m20261124_000018): on SQLite the hash is the row's own number.
        let db = manager.get_connection();
        db.execute_unprepared(match manager.get_database_backend() {
            DbBackend::Sqlite => {
                "CREATE TABLE visit_key_recent (hash INTEGER PRIMARY KEY, id BIGINT NOT NULL)"
            }
            DbBackend::MySql => {
                "CREATE TABLE visit_key_recent (hash BIGINT NOT NULL PRIMARY KEY, \
                 id BIGINT NOT NULL) ENGINE=InnoDB"
            }
            _ => "CREATE TABLE visit_key_recent (hash BIGINT PRIMARY KEY, id BIGINT NOT NULL)",
        })
        .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        db.execute_unprepared(
            "INSERT INTO visit_key (hash, id) SELECT hash, id FROM visit_key_recent",
        )
        .await?;
        manager
            .drop_table(Table::drop().table("visit_key_recent").take())
            .await?;
        Ok(())
    }
}
