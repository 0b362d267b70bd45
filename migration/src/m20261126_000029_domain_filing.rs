//! What a domain carries for Chinese senders: `icp_filing`, its ICP filing number (备案号), and
//! `sms_templates`, the carrier-approved SMS templates that embed it (one per line), shown when
//! the domain is rotated away so that they are submitted again with the new domain.

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
        let db = manager.get_connection();
        db.execute_unprepared("ALTER TABLE domain_conf ADD COLUMN icp_filing VARCHAR(64) NULL")
            .await?;
        db.execute_unprepared("ALTER TABLE domain_conf ADD COLUMN sms_templates TEXT NULL")
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        db.execute_unprepared("ALTER TABLE domain_conf DROP COLUMN sms_templates")
            .await?;
        db.execute_unprepared("ALTER TABLE domain_conf DROP COLUMN icp_filing")
            .await?;
        Ok(())
    }
}
