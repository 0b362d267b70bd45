//! Campaign links: per-link limits (password, maximum visits, valid-from time, fallback
//! address), the page shown inside in-app browsers such as WeChat, and alternative targets
//! by device and app; per-domain defaults for the in-app page and the fallback; and which
//! target a click was sent to.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

fn link_columns() -> Vec<ColumnDef> {
    vec![
        ColumnDef::new("password_hash")
            .string_len(255)
            .null()
            .take(),
        ColumnDef::new("max_visits").big_integer().null().take(),
        ColumnDef::new("visit_count")
            .big_integer()
            .not_null()
            .default(0)
            .take(),
        ColumnDef::new("valid_from").date_time().null().take(),
        ColumnDef::new("fallback_url").text().null().take(),
        ColumnDef::new("in_app_page").string_len(255).null().take(),
        ColumnDef::new("alt_targets").text().null().take(),
    ]
}

fn domain_columns() -> Vec<ColumnDef> {
    vec![
        ColumnDef::new("in_app_page").string_len(255).null().take(),
        ColumnDef::new("fallback_url").text().null().take(),
    ]
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // One column per statement: SQLite adds only one at a time.
        for (table, columns) in [
            ("url_map", link_columns()),
            ("domain_conf", domain_columns()),
            (
                "transform_event_record",
                vec![ColumnDef::new("target_rule").string_len(16).null().take()],
            ),
        ] {
            for mut column in columns {
                manager
                    .alter_table(Table::alter().table(table).add_column(&mut column).take())
                    .await?;
            }
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for (table, columns) in [
            ("url_map", link_columns()),
            ("domain_conf", domain_columns()),
            (
                "transform_event_record",
                vec![ColumnDef::new("target_rule").string_len(16).null().take()],
            ),
        ] {
            for column in columns {
                manager
                    .alter_table(
                        Table::alter()
                            .table(table)
                            .drop_column(column.get_column_name())
                            .take(),
                    )
                    .await?;
            }
        }
        Ok(())
    }
}
