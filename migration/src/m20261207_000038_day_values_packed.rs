//! A link's day's breakdown values packed in one row (`visit_day_values`): a JSON array of
//! `[dimension, value, pv, uv]`. Counting wrote a row per dimension and value, about eleven a
//! link's day; over many links nearly every click of a burst is another link's day, and those
//! rows cost SQLite 38–65 µs of CPU a link's day (bench/breakdown_layout.py); packed, counting
//! over 100,000 links costs 71–80 µs a click instead of 89–93 (bench/README.md). The all-links
//! rows stay in `visit_statistics_breakdown`, a row per value: there is one of them a day,
//! however many links there are, and the dashboard reads them by dimension over long ranges.
//!
//! The links' rows are packed by the database itself, so that the migration needs no reader
//! of its own; going back down unpacks them the same way.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::{ConnectionTrait, DbBackend};

#[derive(DeriveMigrationName)]
pub struct Migration;

/// The all-links rows' `url_map_id` (`stats::dimension::ALL_LINKS`).
const ALL_LINKS: i64 = -1;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        let backend = manager.get_database_backend();
        db.execute_unprepared(match backend {
            // Kept in the order of its key, as the breakdown was (m20261203_000035).
            DbBackend::Sqlite => {
                "CREATE TABLE visit_day_values (stat_date date_text NOT NULL, \
                 url_map_id integer NOT NULL, vals text NOT NULL, \
                 PRIMARY KEY (stat_date, url_map_id)) WITHOUT ROWID"
            }
            DbBackend::MySql => {
                "CREATE TABLE visit_day_values (stat_date date NOT NULL, \
                 url_map_id bigint NOT NULL, \
                 vals longtext CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL, \
                 PRIMARY KEY (stat_date, url_map_id)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
            }
            _ => {
                "CREATE TABLE visit_day_values (stat_date date NOT NULL, \
                 url_map_id bigint NOT NULL, vals text NOT NULL, \
                 PRIMARY KEY (stat_date, url_map_id))"
            }
        })
        .await?;
        // A link's or a tag's days over a range.
        db.execute_unprepared(
            "CREATE INDEX idx_visit_day_values_link ON visit_day_values (url_map_id, stat_date)",
        )
        .await?;
        let packed = match backend {
            DbBackend::Sqlite => "json_group_array(json_array(dimension, value, pv, uv))",
            DbBackend::MySql => {
                // MariaDB builds the array as it builds `GROUP_CONCAT`, cut at this length.
                db.execute_unprepared("SET SESSION group_concat_max_len = 4294967295")
                    .await?;
                "JSON_ARRAYAGG(JSON_ARRAY(dimension, value, pv, uv))"
            }
            _ => "json_agg(json_build_array(dimension, value, pv, uv))::text",
        };
        db.execute_unprepared(&format!(
            "INSERT INTO visit_day_values (stat_date, url_map_id, vals) \
             SELECT stat_date, url_map_id, {packed} FROM visit_statistics_breakdown \
             WHERE url_map_id <> {ALL_LINKS} GROUP BY stat_date, url_map_id"
        ))
        .await?;
        db.execute_unprepared(&format!(
            "DELETE FROM visit_statistics_breakdown WHERE url_map_id <> {ALL_LINKS}"
        ))
        .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        let each = match manager.get_database_backend() {
            DbBackend::Sqlite => {
                "SELECT v.stat_date, v.url_map_id, json_extract(e.value, '$[0]'), \
                 json_extract(e.value, '$[1]'), json_extract(e.value, '$[2]'), \
                 json_extract(e.value, '$[3]') FROM visit_day_values v, json_each(v.vals) e"
            }
            // Named, not the connection's (which may be utf8mb3, without the emoji).
            DbBackend::MySql => {
                "SELECT v.stat_date, v.url_map_id, e.dimension, e.value, e.pv, e.uv \
                 FROM visit_day_values v, JSON_TABLE(v.vals, '$[*]' COLUMNS (\
                 dimension varchar(16) PATH '$[0]', \
                 value varchar(255) CHARACTER SET utf8mb4 PATH '$[1]', \
                 pv bigint PATH '$[2]', uv bigint PATH '$[3]')) e"
            }
            _ => {
                "SELECT v.stat_date, v.url_map_id, e->>0, e->>1, (e->>2)::bigint, \
                 (e->>3)::bigint FROM visit_day_values v \
                 CROSS JOIN LATERAL json_array_elements(v.vals::json) e"
            }
        };
        db.execute_unprepared(&format!(
            "INSERT INTO visit_statistics_breakdown (stat_date, url_map_id, dimension, value, pv, uv) {each}"
        ))
        .await?;
        manager
            .drop_table(Table::drop().table("visit_day_values").take())
            .await?;
        Ok(())
    }
}
