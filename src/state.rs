//! What the front ends share: the core every one of them (CLI included) acts through, and the
//! state a running server adds to it. Both are built in `startup`.

use crate::clicks::Ingest;
use crate::config::Settings;
use crate::db::allocator::BlockAllocator;
use crate::net::rate_limit::RateLimits;
use crate::resolver::{LinkCache, LinkResolver};
use crate::rules::{CodeGenerator, CodeLength};
use crate::stats::kept::FinishedDays;
use sea_orm::DatabaseConnection;
use std::sync::Arc;

/// The database, the settings, the code generator, and this process's cache of links, which
/// the services that change a link keep true.
pub struct Inklink {
    pub db: DatabaseConnection,
    pub settings: Arc<Settings>,
    /// Codes of the configured length (`INKLINK_CODE_LENGTH`).
    pub codes: CodeGenerator,
    pub allocator: BlockAllocator,
    /// Codes of every other length a link may ask for, each with its own sequence.
    pub other_lengths: Vec<(CodeGenerator, BlockAllocator)>,
    pub link_cache: LinkCache,
    /// Signs the admin session cookie; derived from the secret, so every instance agrees.
    pub cookie_key: [u8; 64],
    /// Keys the visitor hash of click events; derived from the secret, so every instance
    /// counts the same visitor once.
    pub visitor_key: [u8; 16],
    /// Keys the permutation that turns a campaign recipient's number into its `r` parameter.
    pub param_key: [u8; 16],
    /// Seals users' two-factor secrets in the database (`services::two_factor`).
    pub totp_key: [u8; 32],
    /// What dashboards read of finished days (range UV and IP, page views per link), kept
    /// between requests.
    pub kept: FinishedDays,
    /// The default domain's health when it is not healthy: every admin page shows it.
    /// Refreshed by each instance's health task from the database.
    pub domain_alert: std::sync::RwLock<Option<DomainAlert>>,
    /// The single sign-on provider, when one is set up (`INKLINK_OIDC_ISSUER`).
    pub sso: Option<crate::net::oidc::Provider>,
}

/// A default domain that probes found suspect or blocked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DomainAlert {
    pub host: String,
    /// `suspect` or `blocked`.
    pub state: &'static str,
    pub reason: crate::i18n::Message,
}

impl Inklink {
    /// The generator and sequence for codes of `length` (`None`: the configured length).
    pub fn sequence(&self, length: Option<CodeLength>) -> (&CodeGenerator, &BlockAllocator) {
        length
            .and_then(|length| {
                self.other_lengths
                    .iter()
                    .find(|(codes, _)| codes.format().length == length.get())
            })
            .map_or((&self.codes, &self.allocator), |(codes, allocator)| {
                (codes, allocator)
            })
    }
}

/// A running server's state, shared by every handler.
pub struct AppState {
    pub core: Arc<Inklink>,
    pub resolver: LinkResolver,
    pub clicks: Arc<Ingest>,
    pub api_limits: RateLimits,
}
