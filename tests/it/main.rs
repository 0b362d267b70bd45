//! The integration suite: one binary, a module per feature. Every test gets its own fresh
//! database — a SQLite file, or a new database on the server in INKLINK_TEST_DATABASE_URL.

mod admin;
mod agents;
mod analytics;
mod api;
mod batches;
mod bootstrap;
mod browser;
mod campaign;
mod cli;
mod clicks;
mod codes;
mod day_sets;
mod event_insert;
mod events;
mod first_start;
mod hardening;
mod health;
mod hosts;
mod i18n;
mod links;
mod redirect;
mod rules;
mod sms;
mod sso;
mod support;
mod tags;
mod two_factor;
mod two_instances;
mod webhooks;
