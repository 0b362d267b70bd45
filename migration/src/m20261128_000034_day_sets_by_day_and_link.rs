//! The day sets' index on the day alone becomes one on the day and the link. Counting looks up
//! a turn's sets link by link within a day; with the day alone, a planner that believes a day
//! holds few sets (PostgreSQL's statistics from before that day began) read every set of the
//! day for each link it looked up. With the link in the index, every way to a set is a seek.
//! Deleting a day (recounting it) still finds its sets by the day.
//!
//! PostgreSQL only: SQLite keeps no statistics and is kept off the day's index by the query
//! itself (`+stat_date`), and MariaDB counted the same with either index; on SQLite the wider
//! index is more to keep up at every new set (bench/README.md).

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DbBackend;

#[derive(DeriveMigrationName)]
pub struct Migration;

const TABLE: &str = "visit_day_bits";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if manager.get_database_backend() != DbBackend::Postgres {
            return Ok(());
        }
        manager
            .create_index(
                Index::create()
                    .name("idx_visit_day_bits_day_link")
                    .table(TABLE)
                    .col("stat_date")
                    .col("url_map_id")
                    .take(),
            )
            .await?;
        manager
            .drop_index(
                Index::drop()
                    .name("idx_visit_day_bits_day")
                    .table(TABLE)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if manager.get_database_backend() != DbBackend::Postgres {
            return Ok(());
        }
        manager
            .create_index(
                Index::create()
                    .name("idx_visit_day_bits_day")
                    .table(TABLE)
                    .col("stat_date")
                    .take(),
            )
            .await?;
        manager
            .drop_index(
                Index::drop()
                    .name("idx_visit_day_bits_day_link")
                    .table(TABLE)
                    .to_owned(),
            )
            .await
    }
}
