//! `place_name`: what a stored country, province or city is called in each language of the
//! UI, with its ISO code, so that an English page shows `Beijing` and a Chinese one `北京`
//! whatever `INKLINK_GEOIP_LANG` stored, and the map finds a place's outline.
//!
//! Keyed by (`level`: 0 country, 1 province, 2 city; `stored`: the name as clicks store it).
//! Rows are learned from the GeoIP database as clicks are enriched, so the table holds at most
//! the places that database knows.

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
        let (bin, tail) = match manager.get_database_backend() {
            DbBackend::MySql => (
                "CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
                " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
            ),
            _ => ("", ""),
        };
        manager
            .get_connection()
            .execute_unprepared(&format!(
                "CREATE TABLE place_name (\
                 level SMALLINT NOT NULL, \
                 stored VARCHAR(128) {bin} NOT NULL, \
                 code VARCHAR(16) NULL, \
                 en VARCHAR(128) {bin} NOT NULL, \
                 zh VARCHAR(128) {bin} NOT NULL, \
                 PRIMARY KEY (level, stored)){tail}"
            ))
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .get_connection()
            .execute_unprepared("DROP TABLE place_name")
            .await?;
        Ok(())
    }
}
