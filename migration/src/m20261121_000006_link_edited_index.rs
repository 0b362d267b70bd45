//! Every instance asks each few seconds which links changed since it last looked (to drop
//! them from its cache); without an index that reads every link.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_index(
                Index::create()
                    .name("idx_url_map_edited")
                    .table("url_map")
                    .col("edited_at")
                    .take(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_index(
                Index::drop()
                    .name("idx_url_map_edited")
                    .table("url_map")
                    .to_owned(),
            )
            .await
    }
}
