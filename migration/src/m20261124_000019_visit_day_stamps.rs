//! When each day's statistics last changed: the number of the counting turn that changed
//! them (`stats_tally.taken`). A link's day is stamped when its visitor or address bitmaps
//! change, the all-links day (`url_map_id` -1) whenever anything is counted on that day. A
//! server keeps what dashboards read of a range's finished days in memory (the union of their
//! bitmaps, page views per link) and asks only these small rows whether it is still true
//! (their count and highest turn), instead of reading every day again.
//!
//! Days counted before this version get turn 0, so that a day recounted or forgotten
//! afterwards changes the count or the highest turn of every range it is in.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DbBackend;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let mut table = Table::create().table("visit_day_stamp").take();
        if manager.get_database_backend() == DbBackend::MySql {
            table.engine("InnoDB");
        }
        manager
            .create_table(
                table
                    .col(ColumnDef::new("url_map_id").big_integer().not_null())
                    .col(ColumnDef::new("stat_date").date().not_null())
                    .col(ColumnDef::new("turn").big_integer().not_null())
                    .primary_key(Index::create().col("url_map_id").col("stat_date"))
                    .take(),
            )
            .await?;
        manager
            .get_connection()
            .execute_unprepared(
                "INSERT INTO visit_day_stamp (url_map_id, stat_date, turn) \
                 SELECT url_map_id, stat_date, 0 FROM visit_day_bits \
                 WHERE kind IN ('v', 'i') AND value = '' \
                 UNION SELECT url_map_id, stat_date, 0 FROM visit_statistics \
                 WHERE url_map_id = -1",
            )
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table("visit_day_stamp").take())
            .await
    }
}
