//! Retention of raw click events: the day before which they were purged. Statistics of days
//! before it are kept as they were and never recomputed (their events are gone).

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
        let mut table = Table::create().table("event_purge").take();
        if manager.get_database_backend() == DbBackend::MySql {
            table.engine("InnoDB").character_set("utf8mb4");
        }
        manager
            .create_table(
                table
                    .col(ColumnDef::new("id").integer().not_null().primary_key())
                    .col(ColumnDef::new("purged_before").date().not_null())
                    .take(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table("event_purge").take())
            .await
    }
}
