//! inklink: a self-hosted short-link service.
//!
//! Where things live: `rules` (codes, URL and host rules: pure functions), `db` (schema
//! entities, connections, the id allocator), `services` (operations on stored data shared by
//! every front end), `redirect` (the public hot path), `web` (the HTTP server and public pages), `admin` (the admin UI),
//! `cli` (the command line), `config` (flags, environment, inklink.toml).

pub mod admin;
pub mod analytics;
pub mod api;
pub mod charts;
pub mod cli;
pub mod config;
pub mod context;
pub mod db;
pub mod digest;
pub mod redirect;
pub mod rules;
pub mod services;
pub mod telemetry;
pub mod web;

pub use context::Inklink;
