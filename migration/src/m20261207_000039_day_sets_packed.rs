//! A link's day's small day sets packed in its row of `visit_day_values` (`sets`, see
//! `day_pack` for the format), beside its breakdown values. Counting wrote each set as a row of
//! `visit_day_bits`, about six a link's day (visitors, addresses, and one for each value of the
//! hour, the referrer and the campaign parameters), and over many links nearly every click of a
//! burst is another link's day: those rows cost SQLite 38–49 µs of CPU a link's day
//! (bench/breakdown_layout.py). Packed in a row of their own beside the values they cost
//! 16.7–34.7 µs, in the values' row, written with them, 6.7–30.1 (bench/packed_row.py). A set
//! that grows large, and every all-links set, stays a row of its own, with its additions apart.
//!
//! `apart` says that some of the link's day's sets may be rows of their own: a reader looks for
//! the sets it does not find in `sets` there too. The sets already stored stay where they are:
//! each of their links' days is marked `apart`. Going down, the packed sets are written back as
//! rows of their own.

use crate::day_pack;
use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::{ConnectionTrait, DbBackend, Statement};

#[derive(DeriveMigrationName)]
pub struct Migration;

/// The all-links sets' `url_map_id` (`stats::dimension::ALL_LINKS`).
const ALL_LINKS: i64 = -1;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        let backend = manager.get_database_backend();
        let columns: &[&str] = match backend {
            DbBackend::Sqlite => &["apart smallint NOT NULL DEFAULT 0", "sets blob"],
            DbBackend::MySql => &["apart smallint NOT NULL DEFAULT 0", "sets longblob"],
            _ => &["apart smallint NOT NULL DEFAULT 0", "sets bytea"],
        };
        for column in columns {
            db.execute_unprepared(&format!("ALTER TABLE visit_day_values ADD COLUMN {column}"))
                .await?;
        }
        let days = |table: &str| {
            format!("SELECT stat_date, url_map_id FROM {table} WHERE url_map_id <> {ALL_LINKS}")
        };
        let tail = match backend {
            DbBackend::MySql => "ON DUPLICATE KEY UPDATE apart = 1",
            // `WHERE true`: SQLite would take `ON` for a join's without it.
            _ => "WHERE true ON CONFLICT (stat_date, url_map_id) DO UPDATE SET apart = 1",
        };
        db.execute_unprepared(&format!(
            "INSERT INTO visit_day_values (stat_date, url_map_id, vals, apart) \
             SELECT stat_date, url_map_id, '[]', 1 FROM ({} UNION {}) d {tail}",
            days("visit_day_bits"),
            days("visit_day_added")
        ))
        .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        let backend = manager.get_database_backend();
        // The day as text, and back, so that this crate needs no date type.
        let (day, back) = match backend {
            DbBackend::Sqlite => ("stat_date", "?"),
            DbBackend::MySql => ("DATE_FORMAT(stat_date, '%Y-%m-%d')", "CAST(? AS DATE)"),
            _ => ("to_char(stat_date, 'YYYY-MM-DD')", "CAST(? AS date)"),
        };
        let sql = format!(
            "SELECT {day} AS day, url_map_id, sets FROM visit_day_values WHERE sets IS NOT NULL"
        );
        let mut sets: Vec<(String, i64, String, String, Vec<u8>)> = Vec::new();
        for row in db
            .query_all_raw(Statement::from_string(backend, sql))
            .await?
        {
            let day: String = row.try_get("", "day")?;
            let link: i64 = row.try_get("", "url_map_id")?;
            let packed: Vec<u8> = row.try_get("", "sets")?;
            for set in day_pack::entries(&packed).map_err(DbErr::Custom)? {
                let (kind, value) = (set.kind.to_owned(), set.value.to_owned());
                sets.push((day.clone(), link, kind, value, set.members.to_vec()));
            }
        }
        for chunk in sets.chunks(200) {
            let rows: Vec<String> = (0..chunk.len())
                .map(|at| {
                    // PostgreSQL numbers its parameters.
                    let mark = |k: usize| match backend {
                        DbBackend::Postgres => format!("${}", at * 5 + k),
                        _ => "?".to_owned(),
                    };
                    let day = back.replace('?', &mark(4));
                    format!(
                        "({}, {}, {}, {day}, {})",
                        mark(1),
                        mark(2),
                        mark(3),
                        mark(5)
                    )
                })
                .collect();
            let sql = format!(
                "INSERT INTO visit_day_bits (url_map_id, kind, value, stat_date, members) \
                 VALUES {}",
                rows.join(", ")
            );
            let mut values: Vec<sea_orm::Value> = Vec::with_capacity(chunk.len() * 5);
            for (day, link, kind, value, members) in chunk {
                values.extend([
                    (*link).into(),
                    kind.as_str().into(),
                    value.as_str().into(),
                    day.as_str().into(),
                    members.clone().into(),
                ]);
            }
            db.execute_raw(Statement::from_sql_and_values(backend, sql, values))
                .await?;
        }
        // The rows made only to mark sets hold no values: the version before reads them as
        // none.
        for column in ["sets", "apart"] {
            db.execute_unprepared(&format!(
                "ALTER TABLE visit_day_values DROP COLUMN {column}"
            ))
            .await?;
        }
        Ok(())
    }
}
