//! Server-side admin sessions (so that sign-out really ends a session, across restarts and
//! instances) and failed sign-ins (so that throttling holds across instances).

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
            .collate("utf8mb4_unicode_ci");
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
                table(backend, "admin_sessions")
                    // SHA-256 of the cookie's session key: a copy of the table opens no session.
                    .col(
                        ColumnDef::new("key_hash")
                            .string_len(64)
                            .not_null()
                            .primary_key(),
                    )
                    .col(ColumnDef::new("state").text().not_null())
                    .col(time(backend, "expires_at"))
                    .col(time(backend, "created_at"))
                    .take(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_admin_sessions_expires")
                    .table("admin_sessions")
                    .col("expires_at")
                    .take(),
            )
            .await?;
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
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for name in ["login_failures", "admin_sessions"] {
            manager
                .drop_table(Table::drop().table(name).if_exists().take())
                .await?;
        }
        Ok(())
    }
}
