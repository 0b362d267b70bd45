//! `link.clicked` is now handed on from the click writer, which lists each click it stores in
//! `click_outgoing`, instead of from counting. Clicks stored before the upgrade and not yet
//! counted would be listed by neither, so they are listed here, while a subscription wants
//! clicks (as counting would have listed them).

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
                "INSERT INTO click_outgoing (at, event_key) \
                 SELECT w.at, w.event_key FROM click_waiting w \
                 WHERE EXISTS (SELECT 1 FROM webhook h WHERE h.enabled = TRUE \
                 AND h.events LIKE '%link.clicked%') \
                 AND NOT EXISTS (SELECT 1 FROM click_outgoing o \
                 WHERE o.at = w.at AND o.event_key = w.event_key)",
            )
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // Counting lists the clicks it counts, again: the ones it has yet to count leave.
        manager
            .get_connection()
            .execute_unprepared(
                "DELETE FROM click_outgoing WHERE EXISTS (SELECT 1 FROM click_waiting w \
                 WHERE w.at = click_outgoing.at AND w.event_key = click_outgoing.event_key)",
            )
            .await?;
        Ok(())
    }
}
