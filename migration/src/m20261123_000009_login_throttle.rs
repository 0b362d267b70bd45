//! Sign-in throttling by counters that a sign-in reserves before its password is checked (one
//! row per bucket: an account from one address, one address, an account from new addresses,
//! and the addresses an account signed in from before). It replaces the list of failures,
//! which was counted before the check and written after it, so parallel guesses slipped by.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DbBackend;

#[derive(DeriveMigrationName)]
pub struct Migration;

fn time(backend: DbBackend, name: &'static str) -> ColumnDef {
    let mut col = ColumnDef::new(name);
    match backend {
        DbBackend::MySql => col.custom("datetime(6)"),
        _ => col.date_time(),
    };
    col.not_null();
    col
}

fn table(backend: DbBackend, name: &'static str) -> TableCreateStatement {
    let mut table = Table::create().table(name).take();
    if backend == DbBackend::MySql {
        table
            .engine("InnoDB")
            .character_set("utf8mb4")
            .collate("utf8mb4_bin");
    }
    table
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let backend = manager.get_database_backend();
        manager
            .create_table(
                table(backend, "login_throttle")
                    .col(
                        ColumnDef::new("bucket")
                            .string_len(160)
                            .not_null()
                            .primary_key(),
                    )
                    .col(time(backend, "window_start"))
                    .col(ColumnDef::new("attempts").integer().not_null())
                    .take(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_login_throttle_window")
                    .table("login_throttle")
                    .col("window_start")
                    .take(),
            )
            .await?;
        manager
            .drop_table(Table::drop().table("login_failures").take())
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let backend = manager.get_database_backend();
        manager
            .create_table(
                table(backend, "login_failures")
                    .col(
                        ColumnDef::new("id")
                            .big_integer()
                            .not_null()
                            .auto_increment()
                            .primary_key(),
                    )
                    .col(ColumnDef::new("username").string_len(64).not_null())
                    .col(ColumnDef::new("ip").string_len(45).not_null())
                    .col(time(backend, "at"))
                    .take(),
            )
            .await?;
        for (name, col) in [
            ("idx_login_failures_user", "username"),
            ("idx_login_failures_ip", "ip"),
        ] {
            manager
                .create_index(
                    Index::create()
                        .name(name)
                        .table("login_failures")
                        .col(col)
                        .col("at")
                        .take(),
                )
                .await?;
        }
        manager
            .drop_table(Table::drop().table("login_throttle").take())
            .await
    }
}
