//! The carrier of a click (`INKLINK_CARRIER_DB`) is kept with its place, in `click_place`.
//! Rows stored before have none, and keep their digests (a column added later counts in the
//! digest only when it has a value).

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::ConnectionTrait;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .get_connection()
            .execute_unprepared("ALTER TABLE click_place ADD COLUMN carrier TEXT NULL")
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .get_connection()
            .execute_unprepared("ALTER TABLE click_place DROP COLUMN carrier")
            .await?;
        Ok(())
    }
}
