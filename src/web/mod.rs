//! The HTTP server: state, routes, and start-up.

pub mod assets;
pub mod client;
pub mod health;
pub mod hosts;
pub mod pages;

use crate::admin::{self, session_store::DbSessionStore};
use crate::analytics::Analytics;
use crate::api::{self, auth::RateLimits};
use crate::context::{Inklink, StartupError};
use crate::redirect::{self, resolver::LinkResolver};
use actix_web::cookie::Key;
use actix_web::dev::{Server, ServerHandle};
use actix_web::{App, HttpServer, guard, web};
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

pub struct AppState {
    pub core: Arc<Inklink>,
    pub resolver: LinkResolver,
    pub analytics: Arc<Analytics>,
    pub api_limits: RateLimits,
}

/// A route for GET and HEAD alike (`web::get()` alone turns HEAD away).
fn read() -> actix_web::Route {
    web::route().guard(guard::Any(guard::Get()).or(guard::Head()))
}

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/", read().to(pages::home))
        .route("/healthz", read().to(health::healthz))
        .route("/metrics", read().to(health::metrics))
        // A scope is matched by its prefix, a `/static/{file}` route by a regular expression
        // that every redirect would run first.
        .service(web::scope("/static").route("/{file}", read().to(assets::serve)))
        .route("/robots.txt", read().to(assets::robots))
        .route("/favicon.ico", read().to(assets::favicon))
        // Every other path: a short code or not found. The redirect is the default service,
        // not a `/{code}` route, for the same reason.
        .default_service(web::to(redirect::follow));
}

pub struct Application {
    port: u16,
    server: Server,
    state: web::Data<AppState>,
}

impl Application {
    /// Opens the database and binds the configured address.
    pub async fn build(core: Inklink) -> Result<Self, StartupError> {
        let addr = core.settings.listen;
        let listener =
            TcpListener::bind(addr).map_err(|source| StartupError::Listen { addr, source })?;
        Self::with_listener(Arc::new(core), listener)
            .map_err(|source| StartupError::Listen { addr, source })
    }

    /// Serves on a listener the caller bound (tests bind port 0).
    pub fn with_listener(core: Arc<Inklink>, listener: TcpListener) -> std::io::Result<Self> {
        let settings = core.settings.clone();
        let resolver = LinkResolver::start(
            core.db.clone(),
            settings.cache_capacity as usize,
            Duration::from_secs(settings.cache_ttl),
            settings.redirect_status,
        );
        let store = DbSessionStore::new(core.db.clone());
        tokio::spawn(purge_sessions(store.clone()));
        let key = Key::from(&core.cookie_key);
        let secure_cookie = settings.secure_cookie;
        let admin_hosts = settings.admin_hosts.clone();
        let port = listener.local_addr()?.port();
        let analytics = Arc::new(Analytics::start(&core, port)?);
        let state = web::Data::new(AppState {
            api_limits: RateLimits::new(settings.api_rate_limit),
            core,
            resolver,
            analytics,
        });
        let app_state = state.clone();
        let mut server = HttpServer::new(move || {
            App::new()
                .app_data(app_state.clone())
                .configure(|cfg| {
                    admin::routes(cfg, &admin_hosts, store.clone(), key.clone(), secure_cookie)
                })
                .configure(|cfg| api::routes(cfg, &admin_hosts))
                .configure(routes)
        })
        .listen(listener)?;
        if let Some(workers) = settings.workers {
            server = server.workers(workers as usize);
        }
        Ok(Self {
            port,
            server: server.run(),
            state,
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
        self.state.analytics.shutdown().await;
        served
    }
}

/// Expired admin sessions are useless; clear them out hourly.
async fn purge_sessions(store: DbSessionStore) {
    let mut every_hour = tokio::time::interval(Duration::from_secs(3600));
    loop {
        every_hour.tick().await;
        if let Err(err) = store.purge_expired().await {
            tracing::warn!(error = %err, "could not purge expired sessions");
        }
    }
}
