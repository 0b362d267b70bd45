//! Tags on links (campaigns): several per link, and a UTM preset per tag that the new-link
//! form fills in.

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
        let mysql = manager.get_database_backend() == DbBackend::MySql;
        let mut tags = Table::create().table("link_tag").take();
        let mut presets = Table::create().table("tag_preset").take();
        if mysql {
            // Tags are stored normalised and compare byte for byte: MySQL's default collations
            // would make `café` and `cafe` one tag (and refuse the second as a duplicate key).
            tags.engine("InnoDB")
                .character_set("utf8mb4")
                .collate("utf8mb4_bin");
            presets
                .engine("InnoDB")
                .character_set("utf8mb4")
                .collate("utf8mb4_bin");
        }
        manager
            .create_table(
                tags.col(ColumnDef::new("link_id").big_integer().not_null())
                    .col(ColumnDef::new("tag").string_len(64).not_null())
                    .primary_key(Index::create().col("link_id").col("tag"))
                    .take(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_link_tag_tag")
                    .table("link_tag")
                    .col("tag")
                    .col("link_id")
                    .take(),
            )
            .await?;
        let utm = |name: &'static str| ColumnDef::new(name).string_len(255).null().take();
        manager
            .create_table(
                presets
                    .col(
                        ColumnDef::new("tag")
                            .string_len(64)
                            .not_null()
                            .primary_key(),
                    )
                    .col(utm("utm_source"))
                    .col(utm("utm_medium"))
                    .col(utm("utm_campaign"))
                    .col(utm("utm_term"))
                    .col(utm("utm_content"))
                    .take(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table("tag_preset").take())
            .await?;
        manager
            .drop_table(Table::drop().table("link_tag").take())
            .await
    }
}
