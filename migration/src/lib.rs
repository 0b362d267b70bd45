//! Schema migrations for inklink. Append-only once landed: never edit a migration that has
//! shipped, add a new one.

// The landed migration files say `use sea_orm_migration::prelude::*`, and sea-orm's
// `DeriveMigrationName` writes `sea_orm_migration::…`: they were written against the
// sea-orm-migration crate. This crate answers to that name, so that they stay as they shipped
// (migrations are append-only) while `runner` does the work.
extern crate self as sea_orm_migration;

pub mod day_pack;
mod runner;

pub use prelude::*;
pub use runner::{Migration, MigrationStatus};
pub use sea_orm;

/// What a migration file uses.
pub mod prelude {
    pub use crate::runner::{MigrationName, MigrationTrait, MigratorTrait, SchemaManager};
    pub use async_trait;
    pub use sea_orm::{
        self, ConnectionTrait, DbErr, DeriveIden, DeriveMigrationName,
        sea_query::{self, *},
    };
}

/// Named by `DeriveMigrationName`'s code.
pub mod util {
    /// A migration's name: its file's name without `.rs`.
    pub fn get_file_stem(path: &str) -> &str {
        let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
        name.strip_suffix(".rs").unwrap_or(name)
    }
}

mod m20261121_000001_initial_schema;
mod m20261121_000002_admin_sessions;
mod m20261121_000003_link_expiry_index;
mod m20261121_000004_event_keys;
mod m20261121_000005_api_key_names;
mod m20261121_000006_link_edited_index;
mod m20261121_000007_drop_event_link_index;
mod m20261123_000008_user_session_epoch;
mod m20261123_000009_login_throttle;
mod m20261123_000010_link_creator_principal;
mod m20261123_000011_event_purge;
mod m20261123_000012_visit_day_sets;
mod m20261123_000013_campaign_links;
mod m20261123_000014_link_tags;
mod m20261123_000015_user_time_zone;
mod m20261124_000016_user_language;
mod m20261124_000017_event_tally;
mod m20261124_000018_visitor_bitmaps;
mod m20261124_000019_visit_day_stamps;
mod m20261124_000020_lean_clicks;
mod m20261124_000021_click_waiting;
mod m20261126_000022_campaign_batches;
mod m20261126_000023_click_carrier;
mod m20261126_000024_two_factor;
mod m20261126_000025_display_names;
mod m20261126_000026_webhooks;
mod m20261126_000027_domain_health;
mod m20261126_000028_single_sign_on;
mod m20261126_000029_domain_filing;
mod m20261127_000030_place_names;
mod m20261127_000031_health_reason_messages;
mod m20261127_000032_webhook_error_messages;
mod m20261128_000033_clicks_out_when_stored;
mod m20261128_000034_day_sets_by_day_and_link;
mod m20261203_000035_day_rows_keyed_by_day;
mod m20261206_000036_day_set_additions;
mod m20261207_000037_recent_visitor_numbers;
mod m20261207_000038_day_values_packed;
mod m20261207_000039_day_sets_packed;

pub struct Migrator;

#[async_trait::async_trait]
impl MigratorTrait for Migrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        vec![
            Box::new(m20261121_000001_initial_schema::Migration),
            Box::new(m20261121_000002_admin_sessions::Migration),
            Box::new(m20261121_000003_link_expiry_index::Migration),
            Box::new(m20261121_000004_event_keys::Migration),
            Box::new(m20261121_000005_api_key_names::Migration),
            Box::new(m20261121_000006_link_edited_index::Migration),
            Box::new(m20261121_000007_drop_event_link_index::Migration),
            Box::new(m20261123_000008_user_session_epoch::Migration),
            Box::new(m20261123_000009_login_throttle::Migration),
            Box::new(m20261123_000010_link_creator_principal::Migration),
            Box::new(m20261123_000011_event_purge::Migration),
            Box::new(m20261123_000012_visit_day_sets::Migration),
            Box::new(m20261123_000013_campaign_links::Migration),
            Box::new(m20261123_000014_link_tags::Migration),
            Box::new(m20261123_000015_user_time_zone::Migration),
            Box::new(m20261124_000016_user_language::Migration),
            Box::new(m20261124_000017_event_tally::Migration),
            Box::new(m20261124_000018_visitor_bitmaps::Migration),
            Box::new(m20261124_000019_visit_day_stamps::Migration),
            Box::new(m20261124_000020_lean_clicks::Migration),
            Box::new(m20261124_000021_click_waiting::Migration),
            Box::new(m20261126_000022_campaign_batches::Migration),
            Box::new(m20261126_000023_click_carrier::Migration),
            Box::new(m20261126_000024_two_factor::Migration),
            Box::new(m20261126_000025_display_names::Migration),
            Box::new(m20261126_000026_webhooks::Migration),
            Box::new(m20261126_000027_domain_health::Migration),
            Box::new(m20261126_000028_single_sign_on::Migration),
            Box::new(m20261126_000029_domain_filing::Migration),
            Box::new(m20261127_000030_place_names::Migration),
            Box::new(m20261127_000031_health_reason_messages::Migration),
            Box::new(m20261127_000032_webhook_error_messages::Migration),
            Box::new(m20261128_000033_clicks_out_when_stored::Migration),
            Box::new(m20261128_000034_day_sets_by_day_and_link::Migration),
            Box::new(m20261203_000035_day_rows_keyed_by_day::Migration),
            Box::new(m20261206_000036_day_set_additions::Migration),
            Box::new(m20261207_000037_recent_visitor_numbers::Migration),
            Box::new(m20261207_000038_day_values_packed::Migration),
            Box::new(m20261207_000039_day_sets_packed::Migration),
        ]
    }
}
