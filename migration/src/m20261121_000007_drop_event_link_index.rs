//! Nothing reads raw click events by link (daily statistics scan a day by time; dashboards
//! read the statistics), while every click paid for an index whose pages it hit at random:
//! the costliest part of writing an event. Dropped.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_index(
                Index::drop()
                    .name("idx_event_link_time")
                    .table("transform_event_record")
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_index(
                Index::create()
                    .name("idx_event_link_time")
                    .table("transform_event_record")
                    .col("url_map_id")
                    .col("record_time")
                    .take(),
            )
            .await
    }
}
