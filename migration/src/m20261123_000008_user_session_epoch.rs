//! A counter per user that a password change raises: sessions signed in under an older value
//! are over, on every instance, without finding them one by one.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table("users")
                    .add_column(
                        ColumnDef::new("session_epoch")
                            .integer()
                            .not_null()
                            .default(0),
                    )
                    .take(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table("users")
                    .drop_column("session_epoch")
                    .take(),
            )
            .await
    }
}
