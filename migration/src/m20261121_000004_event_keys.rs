//! Click events get a key made by the instance that saw the click, so that a batch written
//! twice (a commit whose acknowledgement was lost, a spool replayed after a crash) is stored
//! once; and the referrer's host, so that daily breakdowns can group by it in SQL.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

const TABLE: &str = "transform_event_record";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // One column per statement: SQLite alters one thing at a time.
        for column in [
            ColumnDef::new("event_key").string_len(32).null().take(),
            ColumnDef::new("referer_host").string_len(255).null().take(),
        ] {
            manager
                .alter_table(Table::alter().table(TABLE).add_column(column).take())
                .await?;
        }
        manager
            .create_index(
                Index::create()
                    .name("uq_event_key")
                    .table(TABLE)
                    .col("event_key")
                    .unique()
                    .take(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_index(Index::drop().name("uq_event_key").table(TABLE).to_owned())
            .await?;
        for column in ["referer_host", "event_key"] {
            manager
                .alter_table(Table::alter().table(TABLE).drop_column(column).take())
                .await?;
        }
        Ok(())
    }
}
