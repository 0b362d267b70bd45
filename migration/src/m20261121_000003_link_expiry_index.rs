//! The admin list filters and orders links by expiry; without an index that scans every link.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_index(
                Index::create()
                    .name("idx_url_map_expires")
                    .table("url_map")
                    .col("expires_at")
                    .take(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_index(
                Index::drop()
                    .name("idx_url_map_expires")
                    .table("url_map")
                    .to_owned(),
            )
            .await
    }
}
