//! Start-up: opening the core (database, migrations, secret, first domain) for every command,
//! and building the server with every background task it runs.

use crate::admin::access::session_store::DbSessionStore;
use crate::clicks::Ingest;
use crate::config::Settings;
use crate::db::{self, allocator::BlockAllocator};
use crate::net::rate_limit::RateLimits;
use crate::resolver::{LinkCache, LinkResolver};
use crate::routes::{self, Frontends};
use crate::rules::{CodeFormat, CodeGenerator, CodeLength, DomainHost};
use crate::services::{domains, secret};
use crate::state::{AppState, Inklink};
use crate::stats::Statistics;
use crate::stats::kept::FinishedDays;
use actix_web::cookie::Key;
use actix_web::dev::{Server, ServerHandle};
use actix_web::{App, HttpServer, web};
use sea_orm::{DatabaseConnection, DbErr};
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

/// Ids per allocator block: few round trips, little waste on restart.
const ID_BLOCK: i64 = 512;

#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    // The causes below are written into the message, not chained as sources: `main` prints
    // the whole chain, which would show each twice.
    #[error("cannot connect to the database {url}: {}", db::connect_failure(.cause))]
    Connect { url: String, cause: DbErr },
    #[error("database migration failed: {0}")]
    Migrate(DbErr),
    #[error("database error during start-up: {0}")]
    Db(#[from] DbErr),
    #[error("cannot listen on {addr}: {}", listen_failure(.cause))]
    Listen {
        addr: std::net::SocketAddr,
        cause: std::io::Error,
    },
    #[error(
        "the spool directory {dir} is not usable ({cause}); clicks could not be kept there while the database is away. Set INKLINK_SPOOL_DIR to a directory inklink can write"
    )]
    Spool { dir: String, cause: std::io::Error },
    #[error(
        "there is no inklink database at {path} (INKLINK_DATABASE_URL is {url}); run the command where the server's database is, set INKLINK_DATABASE_URL, or create a database with `inklink migrate`"
    )]
    NoDatabase { path: String, url: String },
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("single sign-on: {0}")]
    SingleSignOn(String),
}

fn listen_failure(cause: &std::io::Error) -> String {
    match cause.kind() {
        std::io::ErrorKind::AddrInUse => format!(
            "{cause}; another program (perhaps another inklink) serves there: stop it, or set \
             INKLINK_LISTEN to another address"
        ),
        std::io::ErrorKind::PermissionDenied => format!(
            "{cause}; ports below 1024 need privileges: listen on a higher port (such as \
             127.0.0.1:8080) behind a reverse proxy"
        ),
        _ => cause.to_string(),
    }
}

/// For the commands that work on an existing database: a SQLite file must be there already
/// (connecting would create an empty one, and a short URL printed from it would never work).
pub fn existing_sqlite_file(url: &str) -> Result<(), StartupError> {
    match db::sqlite_file(url) {
        Some(path) if !path.exists() => {
            let shown = std::env::current_dir()
                .map(|dir| dir.join(&path))
                .unwrap_or(path);
            Err(StartupError::NoDatabase {
                path: shown.display().to_string(),
                url: redact(url),
            })
        }
        _ => Ok(()),
    }
}

/// Connects, applies pending migrations, loads (or creates) the secret, and on an empty
/// database adds the first domain `localhost:<listen port>`.
pub async fn open(settings: Settings) -> Result<Inklink, StartupError> {
    let db = connect(&settings).await?;
    db::migrate_up(&db).await.map_err(StartupError::Migrate)?;
    let moved = crate::clickstore::upgrade::move_old_clicks(&db)
        .await
        .map_err(StartupError::Migrate)?;
    if moved > 0 {
        tracing::info!(clicks = moved, "clicks moved into the lean click store");
    }
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
    visitor_key
        .copy_from_slice(&crate::digest::derive_key(secret.as_bytes(), b"inklink/visitor")[..16]);
    let mut param_key = [0u8; 16];
    param_key.copy_from_slice(
        &crate::digest::derive_key(secret.as_bytes(), b"inklink/recipient-param")[..16],
    );
    let totp_key = crate::digest::derive_key(secret.as_bytes(), b"inklink/totp-seal");
    let sso = crate::services::sso::provider(&settings).map_err(StartupError::SingleSignOn)?;
    Ok(Inklink {
        sso,
        db,
        cookie_key,
        visitor_key,
        param_key,
        totp_key,
        codes: CodeGenerator::new(format, secret.as_bytes()),
        allocator: BlockAllocator::new(db::allocator::SEQUENCE, ID_BLOCK),
        other_lengths: CodeLength::all()
            .filter(|length| length.get() != settings.code_length)
            .map(|length| {
                let format = CodeFormat::new(length.get(), settings.code_check_char);
                (
                    CodeGenerator::new(format, secret.as_bytes()),
                    BlockAllocator::new(db::allocator::sequence_of_length(length.get()), ID_BLOCK),
                )
            })
            .collect(),
        link_cache: LinkCache::new(settings.cache_capacity as usize),
        kept: FinishedDays::new(settings.timezone),
        domain_alert: Default::default(),
        settings: Arc::new(settings),
    })
}

pub async fn connect(settings: &Settings) -> Result<DatabaseConnection, StartupError> {
    // SQLite writes one at a time and reads on the machine's own cores: more connections
    // only hold more page caches and prepared statements (about 5 MB each under load).
    let default = match settings.database_url.starts_with("sqlite:") {
        true => 8,
        false => 16,
    };
    let connections = settings.db_max_connections.unwrap_or(default);
    db::connect(&settings.database_url, connections)
        .await
        .map_err(|cause| StartupError::Connect {
            url: redact(&settings.database_url),
            cause,
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

pub struct Application {
    port: u16,
    server: Server,
    state: web::Data<AppState>,
    stats: Statistics,
    /// What goes out (webhook deliveries, domain probes), on a thread of its own: ended there
    /// when the server stops or is dropped (see [`crate::background::Stoppable`]).
    outbound: crate::background::Stoppable,
}

/// The server's sockets. `serve` binds them before it opens the database, so that a second
/// `serve` on a taken port fails before it creates a database, an admin user or a password.
pub struct Listeners {
    main: TcpListener,
    metrics: Option<TcpListener>,
}

impl Listeners {
    /// Binds the configured address and, when set, the metrics address.
    pub fn bind(settings: &Settings) -> Result<Self, StartupError> {
        let main = bind(settings.listen)?;
        let metrics = settings.metrics_listen.map(bind).transpose()?;
        Ok(Self { main, metrics })
    }
}

fn bind(addr: std::net::SocketAddr) -> Result<TcpListener, StartupError> {
    TcpListener::bind(addr).map_err(|cause| StartupError::Listen { addr, cause })
}

impl Application {
    /// Serves on sockets bound beforehand by [`Listeners::bind`].
    pub fn build(core: Inklink, listeners: Listeners) -> Result<Self, StartupError> {
        Self::start(Arc::new(core), listeners)
    }

    /// Serves on a listener the caller bound (tests bind port 0); the metrics address, when
    /// set, is bound here.
    pub fn with_listener(core: Arc<Inklink>, listener: TcpListener) -> Result<Self, StartupError> {
        let metrics = core.settings.metrics_listen.map(bind).transpose()?;
        Self::start(
            core,
            Listeners {
                main: listener,
                metrics,
            },
        )
    }

    /// Starts every background task of the server: the link lookups and change watcher, the
    /// click pipeline, and the session purge.
    fn start(core: Arc<Inklink>, listeners: Listeners) -> Result<Self, StartupError> {
        let Listeners {
            main: listener,
            metrics,
        } = listeners;
        let settings = core.settings.clone();
        // Found now, not during an outage, when the clicks would have nowhere to go.
        crate::clicks::spool::check_dir(&settings.spool_dir).map_err(|cause| {
            StartupError::Spool {
                dir: settings.spool_dir.display().to_string(),
                cause,
            }
        })?;
        let resolver = LinkResolver::start(
            core.db.clone(),
            core.link_cache.clone(),
            Duration::from_secs(settings.cache_ttl),
            settings.redirect_status,
        );
        tokio::spawn(carry_on_after_hangup());
        let sessions = DbSessionStore::new(core.db.clone());
        tokio::spawn(purge_sessions(sessions.clone(), core.db.clone()));
        let frontends = Arc::new(Frontends {
            admin_hosts: settings.admin_hosts.clone(),
            sessions,
            cookie_key: Key::from(&core.cookie_key),
            secure_cookie: settings.secure_cookie,
        });
        let port = listener.local_addr()?.port();
        let clicks = Arc::new(Ingest::start(
            &settings,
            core.db.clone(),
            core.visitor_key,
            port,
        )?);
        let stats = Statistics::start(&settings, core.db.clone(), clicks.shared_metrics())?;
        // Recipients' phone numbers are deleted when their retention period ends.
        tokio::spawn(crate::services::batches::retention::run(
            core.db.clone(),
            settings.recipient_retention_days,
        ));
        // Webhooks: stored clicks handed on and the outbox delivered; domain health: probes on
        // one instance at a time, the banner's state on every one.
        let policy = crate::services::webhooks::deliver::Policy {
            allow_private: settings.webhook_allow_private,
            first_retry_ms: i64::from(settings.webhook_retry_seconds) * 1000,
            outbox_limit: u64::from(settings.webhook_outbox_limit),
            keep_days: settings.webhook_keep_days,
        };
        let counters = clicks.shared_metrics();
        let app = core.clone();
        let outbound = crate::background::start(
            "inklink-out",
            crate::background::Priority::Usual,
            move || async move {
                futures_util::future::join(
                    crate::services::webhooks::deliver::run(app.db.clone(), policy, counters),
                    crate::services::health::run(app),
                )
                .await;
            },
        )?;
        let state = web::Data::new(AppState {
            api_limits: RateLimits::new(settings.api_rate_limit),
            core,
            resolver,
            clicks,
        });
        let app_state = state.clone();
        let mut server = HttpServer::new(move || {
            App::new()
                .app_data(app_state.clone())
                .configure(|cfg| routes::configure(cfg, &frontends))
        })
        .listen(listener)?;
        if let Some(metrics) = metrics {
            server = server.listen(metrics)?;
        }
        if let Some(workers) = settings.workers {
            server = server.workers(workers as usize);
        }
        Ok(Self {
            port,
            server: server.run(),
            state,
            stats,
            outbound,
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn state(&self) -> web::Data<AppState> {
        self.state.clone()
    }

    pub fn handle(&self) -> ServerHandle {
        self.server.handle()
    }

    /// Runs until SIGINT/SIGTERM or `handle().stop()`: stops accepting, lets in-flight
    /// requests finish, then writes every queued click before returning.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        let served = self.server.await;
        self.outbound.stop().await;
        self.stats.stop().await;
        self.state.clicks.shutdown().await;
        served
    }
}

/// SIGHUP ends a process that does not handle it, and logrotate-style setups send it to ask
/// for reopened logs. inklink logs to standard error (the service manager's file), so there is
/// nothing to reopen: it says so and goes on serving. SIGTERM and SIGINT stop it gracefully.
async fn carry_on_after_hangup() {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut hangups) = signal(SignalKind::hangup()) else {
        tracing::warn!("cannot handle SIGHUP; it would stop the server");
        return;
    };
    while hangups.recv().await.is_some() {
        tracing::info!("SIGHUP: nothing to reload (logs go to standard error); still serving");
    }
}

/// Expired admin sessions and sign-in counters are useless; clear them out hourly.
async fn purge_sessions(store: DbSessionStore, db: DatabaseConnection) {
    let mut every_hour = tokio::time::interval(Duration::from_secs(3600));
    loop {
        every_hour.tick().await;
        if let Err(err) = store.purge_expired().await {
            tracing::warn!(error = %err, "could not purge expired sessions");
        }
        if let Err(err) = crate::services::signin::purge_expired(&db).await {
            tracing::warn!(error = %err, "could not purge expired sign-in counters");
        }
    }
}
