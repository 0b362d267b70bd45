//! `domain_health.reason_message`: why a domain is in its state, as the message a person reads
//! (its text and values, JSON), so that the Domains page and the banner show it in the reader's
//! language without reading the English `reason` back; `reason` stays for the API, the CLI and
//! webhooks. Rows written before it have none and show `reason`.

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
            .execute_unprepared("ALTER TABLE domain_health ADD COLUMN reason_message TEXT NULL")
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .get_connection()
            .execute_unprepared("ALTER TABLE domain_health DROP COLUMN reason_message")
            .await?;
        Ok(())
    }
}
