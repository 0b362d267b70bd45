//! `webhook_message.last_error_message`: why the last attempt failed, as the message a person
//! reads (its text and values, JSON), so that the admin's delivery list shows it in the
//! reader's language; `last_error` stays, in English, for the API. Rows written before it have
//! none and show `last_error`.

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
            .execute_unprepared(
                "ALTER TABLE webhook_message ADD COLUMN last_error_message TEXT NULL",
            )
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .get_connection()
            .execute_unprepared("ALTER TABLE webhook_message DROP COLUMN last_error_message")
            .await?;
        Ok(())
    }
}
