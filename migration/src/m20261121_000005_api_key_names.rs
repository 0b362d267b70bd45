//! An API key's name is what the audit log and a link's creator show; two keys with one name
//! would make both ambiguous.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_index(
                Index::create()
                    .name("uq_api_keys_name")
                    .table("api_keys")
                    .col("name")
                    .unique()
                    .take(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_index(
                Index::drop()
                    .name("uq_api_keys_name")
                    .table("api_keys")
                    .to_owned(),
            )
            .await
    }
}
