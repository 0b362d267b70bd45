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
        replace_index(manager, DAY, DAY_AND_LINK).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        replace_index(manager, DAY_AND_LINK, DAY).await
    }
}

/// An index of the day sets: its name and columns.
type DaySetIndex = (&'static str, &'static [&'static str]);

const DAY: DaySetIndex = ("idx_visit_day_bits_day", &["stat_date"]);
const DAY_AND_LINK: DaySetIndex = ("idx_visit_day_bits_day_link", &["stat_date", "url_map_id"]);

/// Builds `new` before dropping `old`, so that no moment is without an index by the day; on
/// PostgreSQL only (see above).
async fn replace_index(
    manager: &SchemaManager<'_>,
    (old, _): DaySetIndex,
    (new, columns): DaySetIndex,
) -> Result<(), DbErr> {
    if manager.get_database_backend() != DbBackend::Postgres {
        return Ok(());
    }
    let mut index = Index::create().name(new).table(TABLE).to_owned();
    for column in columns {
        index.col(*column);
    }
    manager.create_index(index).await?;
    manager
        .drop_index(Index::drop().name(old).table(TABLE).to_owned())
        .await
}
