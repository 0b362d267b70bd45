//! The operations on stored data that every front end (CLI, admin UI, REST API) shares.

pub mod api_keys;
pub mod audit;
pub mod batches;
pub mod domains;
pub mod events;
pub mod health;
pub mod links;
pub mod outbox;
pub mod secret;
pub mod signin;
pub mod sms;
pub mod sso;
pub mod tags;
pub mod two_factor;
pub mod users;
pub mod visitors;
pub mod webhooks;

pub use audit::{Actor, Principal};
