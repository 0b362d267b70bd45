//! Click statistics counted as clicks are stored: each event carries whether it has been
//! counted into the daily statistics (`counted`), found through a small index of the ones that
//! have not; `stats_tally` is the one row that counting instances take in turn.
//!
//! Events stored before this migration were counted by the per-day recounts of earlier
//! versions: they are marked counted, and the first start afterwards counts yesterday and
//! today again (`stats_tally.recounted`).

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::{ConnectionTrait, DbBackend};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let backend = manager.get_database_backend();
        manager
            .alter_table(
                Table::alter()
                    .table("transform_event_record")
                    .add_column(
                        ColumnDef::new("counted")
                            .boolean()
                            .not_null()
                            .default(false),
                    )
                    .take(),
            )
            .await?;
        let db = manager.get_connection();
        db.execute_unprepared("UPDATE transform_event_record SET counted = TRUE")
            .await?;
        // Only the few events not yet counted are indexed where the database can say so.
        let index = match backend {
            DbBackend::MySql => {
                "CREATE INDEX idx_event_uncounted ON transform_event_record (counted, id)"
            }
            _ => {
                "CREATE INDEX idx_event_uncounted ON transform_event_record (id) WHERE counted = FALSE"
            }
        };
        db.execute_unprepared(index).await?;
        let mut table = Table::create().table("stats_tally").take();
        if backend == DbBackend::MySql {
            table.engine("InnoDB").character_set("utf8mb4");
        }
        manager
            .create_table(
                table
                    .col(ColumnDef::new("id").integer().not_null().primary_key())
                    .col(
                        ColumnDef::new("recounted")
                            .boolean()
                            .not_null()
                            .default(false),
                    )
                    .col(ColumnDef::new("taken").big_integer().not_null().default(0))
                    .take(),
            )
            .await?;
        db.execute_unprepared(
            "INSERT INTO stats_tally (id, recounted, taken) VALUES (1, FALSE, 0)",
        )
        .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table("stats_tally").take())
            .await?;
        manager
            .drop_index(
                Index::drop()
                    .name("idx_event_uncounted")
                    .table("transform_event_record")
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table("transform_event_record")
                    .drop_column("counted")
                    .take(),
            )
            .await
    }
}
