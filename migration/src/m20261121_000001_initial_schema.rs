//! The whole data model of SPEC "Data model". Later features add columns, not tables.
//!
//! Timestamps are stored as UTC without a zone (`timestamp` on PostgreSQL, `datetime(6)` on
//! MySQL, text on SQLite): the three drivers agree on `NaiveDateTime`, while their zoned types
//! differ (and MySQL's `timestamp` ends in 2038, too soon for link expiries).

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DbBackend;

#[derive(DeriveMigrationName)]
pub struct Migration;

/// Builds column definitions that differ per backend.
struct Cols(DbBackend);

impl Cols {
    fn id(&self, name: &'static str) -> ColumnDef {
        ColumnDef::new(name)
            .big_integer()
            .not_null()
            .auto_increment()
            .primary_key()
            .take()
    }

    fn time(&self, name: &'static str) -> ColumnDef {
        let mut col = ColumnDef::new(name);
        match self.0 {
            DbBackend::MySql => col.custom("datetime(6)"),
            _ => col.date_time(),
        };
        col
    }

    fn string(&self, name: &'static str, len: u32) -> ColumnDef {
        ColumnDef::new(name).string_len(len).not_null().take()
    }

    /// A string compared byte for byte on every backend. PostgreSQL and SQLite already do;
    /// MySQL's default collations fold case, which would make `abc` and `ABC` one link.
    fn binary_string(&self, name: &'static str, len: u32) -> ColumnDef {
        if self.0 != DbBackend::MySql {
            return self.string(name, len);
        }
        // The collation must follow the type directly, before NOT NULL or UNIQUE.
        ColumnDef::new(name)
            .custom(format!(
                "varchar({len}) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
            ))
            .not_null()
            .take()
    }

    fn table(&self, name: &'static str) -> TableCreateStatement {
        let mut table = Table::create().table(name).take();
        if self.0 == DbBackend::MySql {
            // Do not inherit a latin1 default from a hand-made database.
            table
                .engine("InnoDB")
                .character_set("utf8mb4")
                .collate("utf8mb4_unicode_ci");
        }
        table
    }
}

fn bigint(name: &'static str) -> ColumnDef {
    ColumnDef::new(name).big_integer().not_null().take()
}

fn flag(name: &'static str) -> ColumnDef {
    ColumnDef::new(name)
        .boolean()
        .not_null()
        .default(false)
        .take()
}

fn index(table: &'static str, name: &'static str, cols: &[&'static str]) -> IndexCreateStatement {
    let mut idx = Index::create().name(name).table(table).take();
    for col in cols {
        idx.col(*col);
    }
    idx
}

const TABLES: [&str; 10] = [
    "audit_log",
    "api_keys",
    "users",
    "visit_statistics_breakdown",
    "visit_statistics",
    "transform_event_record",
    "url_map",
    "domain_conf",
    "settings",
    "id_allocator",
];

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    /// All or nothing where the database allows it (PostgreSQL, SQLite; MySQL commits each
    /// DDL statement regardless), so that a concurrent start never sees half a schema.
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let c = Cols(manager.get_database_backend());

        manager
            .create_table(
                c.table("settings")
                    .col(c.string("name", 64).primary_key())
                    .col(ColumnDef::new("value").text().not_null())
                    .col(c.time("updated_at").not_null())
                    .take(),
            )
            .await?;

        manager
            .create_table(
                c.table("id_allocator")
                    .col(c.string("name", 64).primary_key())
                    .col(bigint("next_id"))
                    .take(),
            )
            .await?;

        manager
            .create_table(
                c.table("domain_conf")
                    .col(c.id("id"))
                    .col(c.string("host", 255).unique_key())
                    .col(c.string("protocol", 8))
                    .col(c.string("status", 16))
                    .col(flag("is_default"))
                    .col(ColumnDef::new("replaced_by_id").big_integer().null())
                    .col(ColumnDef::new("created_by").string_len(128).null())
                    .col(ColumnDef::new("updated_by").string_len(128).null())
                    .col(c.time("created_at").not_null())
                    .col(c.time("updated_at").not_null())
                    .take(),
            )
            .await?;

        manager
            .create_table(
                c.table("url_map")
                    .col(c.id("id"))
                    .col(c.binary_string("compression_code", 64).unique_key())
                    .col(ColumnDef::new("long_url").text().not_null())
                    .col(c.string("long_url_digest", 64))
                    .col(bigint("domain_id"))
                    .col(ColumnDef::new("description").text().null())
                    .col(c.string("url_status", 16))
                    .col(ColumnDef::new("redirect_status").small_integer().null())
                    .col(c.time("expires_at").null())
                    .col(c.string("strategy", 16))
                    .col(ColumnDef::new("creator").string_len(128).null())
                    .col(ColumnDef::new("editor").string_len(128).null())
                    .col(c.time("created_at").not_null())
                    .col(c.time("edited_at").not_null())
                    .col(flag("deleted"))
                    .col(ColumnDef::new("version").integer().not_null().default(1))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_url_map_domain")
                            .from("url_map", "domain_id")
                            .to("domain_conf", "id"),
                    )
                    .take(),
            )
            .await?;
        for idx in [
            index(
                "url_map",
                "idx_url_map_digest",
                &["long_url_digest", "domain_id"],
            ),
            index("url_map", "idx_url_map_domain", &["domain_id", "id"]),
            index("url_map", "idx_url_map_created", &["created_at"]),
            index("url_map", "idx_url_map_creator", &["creator"]),
        ] {
            manager.create_index(idx).await?;
        }

        manager
            .create_table(
                c.table("transform_event_record")
                    .col(c.id("id"))
                    .col(c.time("record_time").not_null())
                    .col(c.binary_string("compression_code", 64))
                    .col(ColumnDef::new("url_map_id").big_integer().null())
                    .col(ColumnDef::new("host").string_len(255).null())
                    .col(ColumnDef::new("client_ip").string_len(45).null())
                    .col(ColumnDef::new("unique_identity").string_len(64).null())
                    .col(ColumnDef::new("user_agent").text().null())
                    .col(ColumnDef::new("referer").text().null())
                    .col(ColumnDef::new("query_string").text().null())
                    .col(ColumnDef::new("country").string_len(128).null())
                    .col(ColumnDef::new("province").string_len(128).null())
                    .col(ColumnDef::new("city").string_len(128).null())
                    .col(ColumnDef::new("browser").string_len(64).null())
                    .col(ColumnDef::new("browser_version").string_len(64).null())
                    .col(ColumnDef::new("os").string_len(64).null())
                    .col(ColumnDef::new("os_version").string_len(64).null())
                    .col(ColumnDef::new("device").string_len(32).null())
                    .col(flag("is_bot"))
                    .col(c.string("transform_status", 16))
                    .col(ColumnDef::new("failure_reason").string_len(16).null())
                    .take(),
            )
            .await?;
        for idx in [
            index("transform_event_record", "idx_event_time", &["record_time"]),
            index(
                "transform_event_record",
                "idx_event_link_time",
                &["url_map_id", "record_time"],
            ),
        ] {
            manager.create_index(idx).await?;
        }

        // url_map_id 0 holds the visits to codes that match no link.
        manager
            .create_table(
                c.table("visit_statistics")
                    .col(c.id("id"))
                    .col(ColumnDef::new("stat_date").date().not_null())
                    .col(bigint("url_map_id"))
                    .col(bigint("pv").default(0))
                    .col(bigint("uv").default(0))
                    .col(bigint("ip_count").default(0))
                    .col(bigint("effective").default(0))
                    .col(bigint("ineffective").default(0))
                    .col(c.time("updated_at").not_null())
                    .take(),
            )
            .await?;
        manager
            .create_index(
                index(
                    "visit_statistics",
                    "uq_visit_statistics_day_link",
                    &["stat_date", "url_map_id"],
                )
                .unique()
                .take(),
            )
            .await?;
        manager
            .create_index(index(
                "visit_statistics",
                "idx_visit_statistics_link_day",
                &["url_map_id", "stat_date"],
            ))
            .await?;

        manager
            .create_table(
                c.table("visit_statistics_breakdown")
                    .col(c.id("id"))
                    .col(ColumnDef::new("stat_date").date().not_null())
                    .col(bigint("url_map_id"))
                    .col(c.string("dimension", 16))
                    .col(c.binary_string("value", 255))
                    .col(bigint("pv").default(0))
                    .col(bigint("uv").default(0))
                    .take(),
            )
            .await?;
        manager
            .create_index(
                index(
                    "visit_statistics_breakdown",
                    "uq_breakdown_day_link_dim_value",
                    &["stat_date", "url_map_id", "dimension", "value"],
                )
                .unique()
                .take(),
            )
            .await?;
        manager
            .create_index(index(
                "visit_statistics_breakdown",
                "idx_breakdown_link_dim_day",
                &["url_map_id", "dimension", "stat_date"],
            ))
            .await?;

        manager
            .create_table(
                c.table("users")
                    .col(c.id("id"))
                    .col(c.string("username", 64).unique_key())
                    .col(c.string("password_hash", 255))
                    .col(c.string("role", 16))
                    .col(flag("disabled"))
                    .col(c.time("last_login_at").null())
                    .col(c.time("created_at").not_null())
                    .col(c.time("updated_at").not_null())
                    .take(),
            )
            .await?;

        manager
            .create_table(
                c.table("api_keys")
                    .col(c.id("id"))
                    .col(c.string("name", 128))
                    .col(c.binary_string("prefix", 16).unique_key())
                    .col(c.string("secret_sha256", 64).unique_key())
                    .col(c.string("role", 16))
                    .col(c.time("expires_at").null())
                    .col(flag("revoked"))
                    .col(c.time("last_used_at").null())
                    .col(ColumnDef::new("created_by").string_len(128).null())
                    .col(c.time("created_at").not_null())
                    .take(),
            )
            .await?;

        manager
            .create_table(
                c.table("audit_log")
                    .col(c.id("id"))
                    .col(c.time("at").not_null())
                    .col(c.string("actor", 128))
                    .col(c.string("actor_kind", 16))
                    .col(c.string("action", 64))
                    .col(c.string("target_kind", 32))
                    .col(c.string("target_id", 255))
                    .col(ColumnDef::new("before_state").text().null())
                    .col(ColumnDef::new("after_state").text().null())
                    .take(),
            )
            .await?;
        for idx in [
            index("audit_log", "idx_audit_at", &["at"]),
            index(
                "audit_log",
                "idx_audit_target",
                &["target_kind", "target_id"],
            ),
            index("audit_log", "idx_audit_actor", &["actor", "at"]),
        ] {
            manager.create_index(idx).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in TABLES {
            manager
                .drop_table(Table::drop().table(table).if_exists().take())
                .await?;
        }
        Ok(())
    }
}
