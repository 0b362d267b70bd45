//! Who may use the admin UI: signing in and out, sessions, one's own settings, users and API keys.

pub mod account;
pub mod auth;
pub mod cookies;
pub mod keys;
pub mod pending;
pub mod second_factor;
pub mod session_store;
pub mod sso;
pub mod users;
