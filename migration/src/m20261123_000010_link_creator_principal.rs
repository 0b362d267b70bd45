//! Who created a link, as a typed principal (`user`, `api_key` or `cli`, and the id): the
//! creator was a name, and an operator key named like a user (or `cli`) could change that
//! user's links. Existing links are attributed by name where only one principal has it, and
//! by the audit log's record of their creation where a user and a key share a name.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::{ConnectionTrait, DbBackend, Statement};
use std::collections::HashMap;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for column in [
            ColumnDef::new("creator_kind").string_len(16).null().take(),
            ColumnDef::new("creator_id").big_integer().null().take(),
        ] {
            manager
                .alter_table(Table::alter().table("url_map").add_column(column).take())
                .await?;
        }
        attribute_existing(manager).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for column in ["creator_id", "creator_kind"] {
            manager
                .alter_table(Table::alter().table("url_map").drop_column(column).take())
                .await?;
        }
        Ok(())
    }
}

/// Every principal a creator name can stand for.
async fn principals(
    manager: &SchemaManager<'_>,
) -> Result<HashMap<String, Vec<(&'static str, Option<i64>)>>, DbErr> {
    let db = manager.get_connection();
    let backend = manager.get_database_backend();
    let mut by_name: HashMap<String, Vec<(&'static str, Option<i64>)>> = HashMap::new();
    by_name
        .entry("cli".to_owned())
        .or_default()
        .push(("cli", None));
    for (table, name, kind) in [
        ("users", "username", "user"),
        ("api_keys", "name", "api_key"),
    ] {
        let select = Query::select().column("id").column(name).from(table).take();
        for row in db.query_all_raw(build(backend, &select)).await? {
            let id: i64 = row.try_get_by_index(0)?;
            let name: String = row.try_get_by_index(1)?;
            by_name.entry(name).or_default().push((kind, Some(id)));
        }
    }
    Ok(by_name)
}

fn build(backend: DbBackend, statement: &impl QueryStatementWriter) -> Statement {
    let (sql, values) = match backend {
        DbBackend::MySql => statement.build(MysqlQueryBuilder),
        DbBackend::Postgres => statement.build(PostgresQueryBuilder),
        _ => statement.build(SqliteQueryBuilder),
    };
    Statement::from_sql_and_values(backend, sql, values)
}

async fn attribute_existing(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    let db = manager.get_connection();
    let backend = manager.get_database_backend();
    let principals = principals(manager).await?;
    let creators = Query::select()
        .distinct()
        .column("creator")
        .from("url_map")
        .and_where(Expr::col("creator").is_not_null())
        .take();
    for row in db.query_all_raw(build(backend, &creators)).await? {
        let creator: String = row.try_get_by_index(0)?;
        match principals.get(&creator).map(Vec::as_slice) {
            // A name nobody has now (a user or key renamed or removed): no owner but admins.
            None | Some([]) => {}
            Some([(kind, id)]) => {
                let update = Query::update()
                    .table("url_map")
                    .value("creator_kind", *kind)
                    .value("creator_id", *id)
                    .and_where(Expr::col("creator").eq(creator.as_str()))
                    .take();
                db.execute_raw(build(backend, &update)).await?;
            }
            Some(several) => {
                // The audit log recorded each creation with the kind of its actor.
                let created = Query::select()
                    .column("target_id")
                    .column("actor_kind")
                    .from("audit_log")
                    .and_where(Expr::col("action").eq("link.create"))
                    .and_where(Expr::col("actor").eq(creator.as_str()))
                    .take();
                for row in db.query_all_raw(build(backend, &created)).await? {
                    let code: String = row.try_get_by_index(0)?;
                    let kind: String = row.try_get_by_index(1)?;
                    let Some((kind, id)) = several.iter().find(|(k, _)| *k == kind) else {
                        continue;
                    };
                    let update = Query::update()
                        .table("url_map")
                        .value("creator_kind", *kind)
                        .value("creator_id", *id)
                        .and_where(Expr::col("compression_code").eq(code.as_str()))
                        .and_where(Expr::col("creator").eq(creator.as_str()))
                        .take();
                    db.execute_raw(build(backend, &update)).await?;
                }
            }
        }
    }
    Ok(())
}
