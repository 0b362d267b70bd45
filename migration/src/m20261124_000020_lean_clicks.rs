//! A lean click store. A click was a wide row of text (user agent, referrer, place, browser
//! names, time, key and visitor as text): 420 bytes or more with its indexes. It is now a
//! narrow row of numbers and short binary values, and the texts that repeat are kept once,
//! in dictionaries:
//!
//! - `click_agent`: a user agent with what was read from it (browser, OS, device);
//! - `click_place`: country, province and city;
//! - `click_referer`: a referrer and its host;
//! - `click_outcome`: how the redirect ended (status, reason, alternative target);
//! - `click_text`: short codes, hosts and query strings.
//!
//! Each dictionary row is found by `digest`, a hash of its values computed by the server, and
//! carries `seen`, the last day (UTC, days since 1970) a click used it, so that a purge can
//! delete what only purged clicks used.
//!
//! `click` is keyed by (`at`, `event_key`): `at` is the click's time in microseconds since
//! 1970 (UTC), `event_key` the 16 bytes that make a click unique (a click written twice is
//! stored once). On SQLite and MySQL the table is stored in that key's order, so the key is
//! also the time index. Addresses and visitors are binary.
//!
//! The events of `transform_event_record` are moved over by the server at its first start
//! after this migration (the dictionaries' digests are computed in Rust), which then drops the
//! old table.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::{ConnectionTrait, DbBackend};

#[derive(DeriveMigrationName)]
pub struct Migration;

const DICTIONARIES: [(&str, &[&str]); 5] = [
    (
        "click_agent",
        &[
            "user_agent",
            "browser",
            "browser_version",
            "os",
            "os_version",
            "device",
        ],
    ),
    ("click_place", &["country", "province", "city"]),
    ("click_referer", &["referer", "referer_host"]),
    (
        "click_outcome",
        &["transform_status", "failure_reason", "target_rule"],
    ),
    ("click_text", &["value"]),
];

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let backend = manager.get_database_backend();
        let db = manager.get_connection();
        let (id, text, engine) = match backend {
            DbBackend::MySql => (
                "id INT NOT NULL AUTO_INCREMENT PRIMARY KEY",
                "TEXT",
                " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
            ),
            DbBackend::Postgres => ("id SERIAL PRIMARY KEY", "TEXT", ""),
            _ => ("id INTEGER PRIMARY KEY AUTOINCREMENT", "TEXT", ""),
        };
        for (table, columns) in DICTIONARIES {
            let values: Vec<String> = columns.iter().map(|c| format!("{c} {text} NULL")).collect();
            db.execute_unprepared(&format!(
                "CREATE TABLE {table} ({id}, digest BIGINT NOT NULL, seen INTEGER NOT NULL, {}){engine}",
                values.join(", ")
            ))
            .await?;
            db.execute_unprepared(&format!(
                "CREATE UNIQUE INDEX uq_{table}_digest ON {table} (digest)"
            ))
            .await?;
            db.execute_unprepared(&format!("CREATE INDEX idx_{table}_seen ON {table} (seen)"))
                .await?;
        }
        // Columns in an order that wastes no alignment padding on PostgreSQL.
        let (bytes, key, tail) = match backend {
            DbBackend::MySql => ("VARBINARY(64)", "VARBINARY(64)", engine),
            DbBackend::Postgres => ("BYTEA", "BYTEA", ""),
            _ => ("BLOB", "BLOB", " WITHOUT ROWID"),
        };
        db.execute_unprepared(&format!(
            "CREATE TABLE click (\
             at BIGINT NOT NULL, \
             link BIGINT NULL, \
             code INTEGER NOT NULL, \
             host INTEGER NULL, \
             agent INTEGER NULL, \
             referer INTEGER NULL, \
             query INTEGER NULL, \
             place INTEGER NULL, \
             outcome INTEGER NOT NULL, \
             bot BOOLEAN NOT NULL, \
             counted BOOLEAN NOT NULL DEFAULT FALSE, \
             event_key {key} NOT NULL, \
             ip {bytes} NOT NULL, \
             visitor {bytes} NULL, \
             PRIMARY KEY (at, event_key)){tail}"
        ))
        .await?;
        // Only the few clicks not yet counted are indexed where the database can say so.
        let uncounted = match backend {
            DbBackend::MySql => "CREATE INDEX idx_click_uncounted ON click (counted, at)",
            _ => "CREATE INDEX idx_click_uncounted ON click (at, event_key) WHERE counted = FALSE",
        };
        db.execute_unprepared(uncounted).await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        db.execute_unprepared("DROP TABLE click").await?;
        for (table, _) in DICTIONARIES {
            db.execute_unprepared(&format!("DROP TABLE {table}"))
                .await?;
        }
        Ok(())
    }
}
