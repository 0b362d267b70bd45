//! Who visited on each day, as compressed bitmaps of dense numbers instead of one row per
//! visitor: `visit_key` gives every visitor identity and client address a number (per kind,
//! counted up from 0 in `stats_tally`), found by a 64-bit hash of it; `visit_day_bits`
//! holds, per day and link (and for all links), the numbers seen among page views — of
//! visitors and addresses, and of the visitors per value of the dimensions one visitor can
//! have several values of in a day (referrer, hour, campaign parameters). A range's UV and IP
//! are the size of the union of its days' bitmaps.
//!
//! The rows of `visit_day_set` are turned into bitmaps by the first start afterwards (they
//! need the hashing of the application); the sets per value cannot be (they hold hashes of
//! visitor and value), so yesterday and today are counted again from their events, as after
//! the previous upgrade (`stats_tally.recounted`).

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
        let db = manager.get_connection();
        // SQLite keeps an INTEGER PRIMARY KEY as the row's own number: no separate index.
        db.execute_unprepared(match backend {
            DbBackend::Sqlite => {
                "CREATE TABLE visit_key (hash INTEGER PRIMARY KEY, id BIGINT NOT NULL)"
            }
            DbBackend::MySql => {
                "CREATE TABLE visit_key (hash BIGINT NOT NULL PRIMARY KEY, id BIGINT NOT NULL) \
                 ENGINE=InnoDB"
            }
            _ => "CREATE TABLE visit_key (hash BIGINT PRIMARY KEY, id BIGINT NOT NULL)",
        })
        .await?;
        let mut table = Table::create().table("visit_day_bits").take();
        let value = ColumnDef::new("value").string_len(255).not_null().take();
        let (value, members) = if backend == DbBackend::MySql {
            table.engine("InnoDB").character_set("utf8mb4");
            (
                // Values compare byte for byte, as in the breakdown.
                ColumnDef::new("value")
                    .custom("varchar(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
                    .not_null()
                    .take(),
                ColumnDef::new("members")
                    .custom("LONGBLOB")
                    .not_null()
                    .take(),
            )
        } else {
            (value, ColumnDef::new("members").blob().not_null().take())
        };
        manager
            .create_table(
                table
                    .col(ColumnDef::new("url_map_id").big_integer().not_null())
                    .col(ColumnDef::new("kind").string_len(1).not_null())
                    .col(value)
                    .col(ColumnDef::new("stat_date").date().not_null())
                    .col(members)
                    // A range of days of one set is one stretch of the key.
                    .primary_key(
                        Index::create()
                            .col("url_map_id")
                            .col("kind")
                            .col("value")
                            .col("stat_date"),
                    )
                    .take(),
            )
            .await?;
        // Recounting a day deletes by day alone.
        manager
            .create_index(
                Index::create()
                    .name("idx_visit_day_bits_day")
                    .table("visit_day_bits")
                    .col("stat_date")
                    .take(),
            )
            .await?;
        for column in ["next_visitor", "next_address"] {
            manager
                .alter_table(
                    Table::alter()
                        .table("stats_tally")
                        .add_column(ColumnDef::new(column).big_integer().not_null().default(0))
                        .take(),
                )
                .await?;
        }
        db.execute_unprepared("UPDATE stats_tally SET recounted = FALSE")
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for column in ["next_visitor", "next_address"] {
            manager
                .alter_table(
                    Table::alter()
                        .table("stats_tally")
                        .drop_column(column)
                        .take(),
                )
                .await?;
        }
        for table in ["visit_day_bits", "visit_key"] {
            manager
                .drop_table(Table::drop().table(table).take())
                .await?;
        }
        // The version below counts yesterday and today again into its own sets; earlier
        // days' range counts are gone with the bitmaps (see README, Upgrades).
        manager
            .get_connection()
            .execute_unprepared("UPDATE stats_tally SET recounted = FALSE")
            .await?;
        Ok(())
    }
}
