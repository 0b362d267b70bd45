//! Who visited on each day: the distinct visitor identities ('v') and client addresses ('i')
//! among the page views of a day, per link and for all links (`url_map_id` -1). UV and IP over
//! a range are counted from these as true distinct counts, not sums of days, and they outlive
//! a purge of the raw events.

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
        let mut table = Table::create().table("visit_day_set").take();
        if manager.get_database_backend() == DbBackend::MySql {
            // Identities and addresses compare byte for byte.
            table
                .engine("InnoDB")
                .character_set("utf8mb4")
                .collate("utf8mb4_bin");
        }
        manager
            .create_table(
                table
                    .col(ColumnDef::new("url_map_id").big_integer().not_null())
                    .col(ColumnDef::new("kind").string_len(1).not_null())
                    .col(ColumnDef::new("stat_date").date().not_null())
                    .col(ColumnDef::new("who").string_len(64).not_null())
                    .primary_key(
                        Index::create()
                            .col("url_map_id")
                            .col("kind")
                            .col("stat_date")
                            .col("who"),
                    )
                    .take(),
            )
            .await?;
        // Replacing a day deletes by day alone.
        manager
            .create_index(
                Index::create()
                    .name("idx_visit_day_set_day")
                    .table("visit_day_set")
                    .col("stat_date")
                    .take(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table("visit_day_set").take())
            .await
    }
}
