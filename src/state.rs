//! What the front ends share: the core every one of them (CLI included) acts through, and the
//! state a running server adds to it. Both are built in `startup`.

use crate::analytics::Analytics;
use crate::config::Settings;
use crate::db::allocator::BlockAllocator;
use crate::net::rate_limit::RateLimits;
use crate::resolver::{LinkCache, LinkResolver};
use crate::rules::CodeGenerator;
use sea_orm::DatabaseConnection;
use std::sync::Arc;

/// The database, the settings, the code generator, and this process's cache of links, which
/// the services that change a link keep true.
pub struct Inklink {
    pub db: DatabaseConnection,
    pub settings: Arc<Settings>,
    pub codes: CodeGenerator,
    pub allocator: BlockAllocator,
    pub link_cache: LinkCache,
    /// Signs the admin session cookie; derived from the secret, so every instance agrees.
    pub cookie_key: [u8; 64],
    /// Keys the visitor hash of click events; derived from the secret, so every instance
    /// counts the same visitor once.
    pub visitor_key: [u8; 16],
}

/// A running server's state, shared by every handler.
pub struct AppState {
    pub core: Arc<Inklink>,
    pub resolver: LinkResolver,
    pub analytics: Arc<Analytics>,
    pub api_limits: RateLimits,
}
