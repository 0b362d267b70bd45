//! inklink: a self-hosted short-link service.
//!
//! Where things live, lowest layer first (a module uses only modules listed before it; the
//! `.ci/layers` check keeps it so):
//! - `digest`, `i18n`: digests, and the two languages (`t!`, the texts people read);
//! - `rules`: pure functions and the types that carry validated input (codes, URLs, hosts,
//!   names, statuses);
//! - `net`: client address, admin host list, rate limits; `config`: flags, environment and
//!   inklink.toml; `telemetry`: logging, as configured;
//! - `db`: entities, connections, the id allocator;
//! - `background`: threads of lower priority; `metrics`: the counters of `/metrics`;
//! - `clickstore`: the click tables (what a stored click is, writing, reading back, purging);
//! - `clicks` (ingest: capture, queue, journal, enrichment, writer, spool) and `stats`
//!   (counting, day sets, kept ranges, reports, retention), which cannot use each other;
//! - `resolver`: code → link through this process's cache;
//! - `state`: what every front end shares (`Inklink`) and a running server adds (`AppState`);
//! - `services`: every operation on stored data, with its transaction, audit entry and cache
//!   invalidation; the CLI, the admin UI and the API all call these;
//! - `charts`: SVG charts;
//! - front ends: `redirect` (the public hot path), `public` (home, health, assets, error
//!   pages), `api` (REST), `admin` (the web UI);
//! - `routes`: the one route table; `startup`: opening the core and building the server with
//!   its background tasks; `cli`: the command line.

pub mod digest;
#[macro_use]
pub mod i18n;
pub mod rules;

pub mod config;
pub mod net;
pub mod telemetry;

pub mod background;
pub mod metrics;

pub mod db;

pub mod clickstore;

pub mod clicks;
pub mod stats;

pub mod resolver;
pub mod state;

pub mod services;

pub mod charts;

pub mod api;
pub mod public;
pub mod redirect;

pub mod admin;

pub mod routes;
pub mod startup;

pub mod cli;

pub use state::Inklink;
