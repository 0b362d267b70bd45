//! What counting turns add to a day set, kept apart from the set until there is enough of it
//! (`visit_day_added`): each turn rewrote every day set it touched whole, and a busy day's sets
//! grow all day, so that writing them became the largest part of a turn's writing after a
//! burst (bench/README.md). A turn now writes only the members it added, as a row of its own,
//! and the set is written whole again once its additions have grown past a share of it.
//! Readers take the union of a set's row and its additions.
//!
//! Going back down folds nothing in: the version below would not see the additions, so
//! yesterday and today are counted again from their events (`stats_tally.recounted`), as after
//! the upgrade to bitmaps.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::{ConnectionTrait, DbBackend};

#[derive(DeriveMigrationName)]
pub struct Migration;

const TABLE: &str = "visit_day_added";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let backend = manager.get_database_backend();
        let mut table = Table::create().table(TABLE).take();
        let (value, members) = if backend == DbBackend::MySql {
            table.engine("InnoDB").character_set("utf8mb4");
            (
                // Values compare byte for byte, as in `visit_day_bits`.
                ColumnDef::new("value")
                    .custom("varchar(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
                    .not_null()
                    .take(),
                ColumnDef::new("members")
                    .custom("LONGBLOB")
                    .not_null()
                    .take(),
            )
        } else {
            (
                ColumnDef::new("value").string_len(255).not_null().take(),
                ColumnDef::new("members").blob().not_null().take(),
            )
        };
        manager
            .create_table(
                table
                    .col(ColumnDef::new("url_map_id").big_integer().not_null())
                    .col(ColumnDef::new("kind").string_len(1).not_null())
                    .col(value)
                    .col(ColumnDef::new("stat_date").date().not_null())
                    // The counting turn that added them: one row a turn and set.
                    .col(ColumnDef::new("turn").big_integer().not_null())
                    .col(members)
                    // A set's additions are one stretch of the key, after the set's own.
                    .primary_key(
                        Index::create()
                            .col("url_map_id")
                            .col("kind")
                            .col("value")
                            .col("stat_date")
                            .col("turn"),
                    )
                    .take(),
            )
            .await?;
        // Recounting a day deletes by day alone.
        manager
            .create_index(
                Index::create()
                    .name("idx_visit_day_added_day")
                    .table(TABLE)
                    .col("stat_date")
                    .take(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(TABLE).take())
            .await?;
        manager
            .get_connection()
            .execute_unprepared("UPDATE stats_tally SET recounted = FALSE")
            .await?;
        Ok(())
    }
}
