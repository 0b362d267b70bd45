//! What every front end needs to act on inklink's data: the database, the settings and the
//! code generator.

use crate::config::Settings;
use crate::db::{self, allocator::BlockAllocator};
use crate::rules::{CodeFormat, CodeGenerator, DomainHost, TargetUrl, TargetUrlError, UrlRules};
use crate::services::{domains, secret};
use sea_orm::{DatabaseConnection, DbErr};
use std::sync::Arc;

/// Ids per allocator block: few round trips, little waste on restart.
const ID_BLOCK: i64 = 512;

#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error("cannot connect to the database {url}: {source}")]
    Connect { url: String, source: DbErr },
    #[error("database migration failed: {0}")]
    Migrate(DbErr),
    #[error("database error during start-up: {0}")]
    Db(#[from] DbErr),
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: std::net::SocketAddr,
        source: std::io::Error,
    },
}

pub struct Inklink {
    pub db: DatabaseConnection,
    pub settings: Arc<Settings>,
    pub codes: CodeGenerator,
    pub allocator: BlockAllocator,
    /// Signs the admin session cookie; derived from the secret, so every instance agrees.
    pub cookie_key: [u8; 64],
    /// Keys the visitor hash of click events; derived from the secret, so every instance
    /// counts the same visitor once.
    pub visitor_key: [u8; 16],
}

impl Inklink {
    /// Connects, applies pending migrations, loads (or creates) the secret, and on an empty
    /// database adds the first domain `localhost:<listen port>`.
    pub async fn open(settings: Settings) -> Result<Self, StartupError> {
        let db = connect(&settings).await?;
        db::migrate_up(&db).await.map_err(StartupError::Migrate)?;
        let secret = secret::load_or_create(&db, settings.secret.as_deref()).await?;
        // Port 0 means "any free port", unknown until the server binds.
        let first = match settings.listen.port() {
            0 => "localhost".to_owned(),
            port => format!("localhost:{port}"),
        };
        let first = DomainHost::parse(&first).expect("localhost is a valid host");
        domains::ensure_first(&db, &first).await?;
        let format = CodeFormat::new(settings.code_length, settings.code_check_char);
        let mut cookie_key = [0u8; 64];
        cookie_key[..32].copy_from_slice(&crate::digest::derive_key(
            secret.as_bytes(),
            b"inklink/cookie-1",
        ));
        cookie_key[32..].copy_from_slice(&crate::digest::derive_key(
            secret.as_bytes(),
            b"inklink/cookie-2",
        ));
        let mut visitor_key = [0u8; 16];
        visitor_key.copy_from_slice(
            &crate::digest::derive_key(secret.as_bytes(), b"inklink/visitor")[..16],
        );
        Ok(Self {
            db,
            cookie_key,
            visitor_key,
            codes: CodeGenerator::new(format, secret.as_bytes()),
            allocator: BlockAllocator::new(db::allocator::SEQUENCE, ID_BLOCK),
            settings: Arc::new(settings),
        })
    }

    /// Reads a target URL the way every front end must: under the configured length limit and
    /// never on one of our own domains.
    pub async fn parse_target(
        &self,
        input: &str,
    ) -> Result<Result<TargetUrl, TargetUrlError>, DbErr> {
        let own_hosts = domains::own_hosts(&self.db).await?;
        let rules = UrlRules {
            max_length: self.settings.max_url_length as usize,
            own_hosts: &own_hosts,
        };
        Ok(TargetUrl::parse(input, &rules))
    }
}

pub async fn connect(settings: &Settings) -> Result<DatabaseConnection, StartupError> {
    db::connect(&settings.database_url, settings.db_max_connections)
        .await
        .map_err(|source| StartupError::Connect {
            url: redact(&settings.database_url),
            source,
        })
}

/// The database URL without its password, for messages.
pub fn redact(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() => {
            let _ = parsed.set_password(Some("***"));
            parsed.to_string()
        }
        _ => url.to_owned(),
    }
}
