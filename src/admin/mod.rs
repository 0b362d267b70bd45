//! The admin web UI under `/admin`: server-rendered pages behind a database-backed session.

pub mod access;
pub mod api_docs;
pub mod audit;
pub mod batches;
pub mod dashboard;
pub mod domains;
pub mod download;
pub mod error;
pub mod links;
pub mod pages;
pub mod qr;
pub mod sms;
pub mod tags;
pub mod webhooks;

use crate::net::hosts::AdminHosts;
use access::session_store::DbSessionStore;
use access::{account, auth, keys, second_factor, sso, users};
use actix_session::SessionMiddleware;
use actix_session::config::{PersistentSession, TtlExtensionPolicy};
use actix_web::cookie::{Key, SameSite};
use actix_web::http::header;
use actix_web::middleware::DefaultHeaders;
use actix_web::{HttpResponse, web};
use links::{bulk, page as link_page, selection};

/// A session unused for this long ends.
pub const IDLE_TIMEOUT: actix_web::cookie::time::Duration =
    actix_web::cookie::time::Duration::hours(2);
pub const SESSION_COOKIE: &str = "inklink_session";

/// Headers on every admin page: no inline script, no framing, no sniffing, no caching.
fn security_headers() -> DefaultHeaders {
    DefaultHeaders::new()
        .add((
            header::CONTENT_SECURITY_POLICY,
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'; object-src 'none'",
        ))
        .add((header::X_FRAME_OPTIONS, "DENY"))
        .add((header::REFERRER_POLICY, "same-origin"))
        .add((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .add((header::CACHE_CONTROL, "no-store"))
}

pub fn session_middleware(
    store: DbSessionStore,
    key: Key,
    secure_cookie: bool,
) -> SessionMiddleware<DbSessionStore> {
    SessionMiddleware::builder(store, key)
        .cookie_name(SESSION_COOKIE.to_owned())
        .cookie_http_only(true)
        .cookie_same_site(SameSite::Lax)
        .cookie_secure(secure_cookie)
        .cookie_path("/admin".to_owned())
        .session_lifecycle(
            PersistentSession::default()
                .session_ttl(IDLE_TIMEOUT)
                .session_ttl_extension_policy(TtlExtensionPolicy::OnEveryRequest),
        )
        .build()
}

pub fn routes(
    cfg: &mut web::ServiceConfig,
    hosts: &AdminHosts,
    store: DbSessionStore,
    key: Key,
    secure_cookie: bool,
) {
    cfg.service(
        web::scope("/admin")
            .guard(hosts.guard())
            .wrap(session_middleware(store, key, secure_cookie))
            .wrap(security_headers())
            .wrap(actix_web::middleware::from_fn(secure_cookie_over_https))
            .wrap(actix_web::middleware::from_fn(unavailable_page))
            .wrap(actix_web::middleware::from_fn(in_language))
            // Extractor failures get the admin error page, not actix's plain-text message.
            .app_data(
                web::PathConfig::default().error_handler(|_, _| error::AdminError::NotFound.into()),
            )
            // What the deserializer says is English about Rust types: logged, not shown.
            .app_data(web::QueryConfig::default().error_handler(|err, _| {
                tracing::info!(error = %err, "an admin address could not be read");
                error::AdminError::BadRequest(crate::i18n::Message::new(t!(
                    "the address has a value that is not valid; go back and follow the link again"
                )))
                .into()
            }))
            .app_data(web::FormConfig::default().error_handler(|err, _| {
                tracing::info!(error = %err, "an admin form could not be read");
                error::AdminError::BadRequest(crate::i18n::Message::new(t!(
                    "the form could not be read; go back, reload the page and try again"
                )))
                .into()
            }))
            .route("", web::get().to(to_links))
            .route("/", web::get().to(to_links))
            .route("/login", web::get().to(auth::login_form))
            .route("/login", web::post().to(auth::login))
            .route("/login/code", web::get().to(second_factor::code_form))
            .route("/login/code", web::post().to(second_factor::code_submit))
            .route("/login/enrol", web::get().to(second_factor::enrol_form))
            .route("/login/enrol", web::post().to(second_factor::enrol_submit))
            .route("/sso", web::get().to(sso::start))
            .route("/sso/callback", web::get().to(sso::callback))
            .route("/logout", web::post().to(auth::logout))
            .route("/links", web::get().to(links::list))
            .route("/links", web::post().to(links::create))
            .route("/links/new", web::get().to(links::new_form))
            .route("/links/import", web::get().to(bulk::form))
            .route("/links/import", web::post().to(bulk::upload))
            .route("/links/import/template.csv", web::get().to(bulk::template))
            .route("/links/export.csv", web::get().to(bulk::export))
            .route("/links/selection", web::post().to(selection::apply))
            .route("/links/{code}", web::get().to(link_page::show))
            .route("/links/{code}/edit", web::get().to(links::edit_form))
            .route("/links/{code}/edit", web::post().to(links::update))
            .route("/links/{code}/delete", web::get().to(links::delete_form))
            .route("/links/{code}/delete", web::post().to(links::delete))
            .route("/account", web::get().to(account::form))
            .route("/account", web::post().to(account::save))
            .route(
                "/account/two-factor",
                web::get().to(second_factor::settings),
            )
            .route(
                "/account/two-factor",
                web::post().to(second_factor::settings_enrol),
            )
            .route(
                "/account/two-factor/off",
                web::post().to(second_factor::settings_disable),
            )
            .route("/language", web::post().to(account::set_language))
            .route("/tags", web::get().to(tags::list))
            .route("/tags/{tag}/preset", web::post().to(tags::set_preset))
            .route("/tags/{tag}/stats", web::get().to(dashboard::tag))
            .route("/tags/{tag}/stats.csv", web::get().to(dashboard::tag_csv))
            .route("/batches", web::get().to(batches::list))
            .route("/batches", web::post().to(batches::create))
            .route("/batches/{id}", web::get().to(batches::show))
            .route(
                "/batches/{id}/receipts",
                web::post().to(batches::upload_receipts),
            )
            .route(
                "/batches/{id}/messages.csv",
                web::get().to(batches::messages_csv),
            )
            .route(
                "/batches/{id}/recipients.csv",
                web::get().to(batches::recipients_csv),
            )
            .route("/sms", web::get().to(sms::form))
            .route("/sms", web::post().to(sms::compose))
            .route("/dashboard", web::get().to(dashboard::global))
            .route("/dashboard.csv", web::get().to(dashboard::global_csv))
            .route("/links/{code}/stats", web::get().to(dashboard::link))
            .route(
                "/links/{code}/stats.csv",
                web::get().to(dashboard::link_csv),
            )
            .route("/links/{code}/qr.svg", web::get().to(links::qr_svg))
            .route("/links/{code}/qr.png", web::get().to(links::qr_png))
            .route("/links/{code}/disable", web::post().to(links::disable))
            .route("/links/{code}/enable", web::post().to(links::enable))
            .route("/domains", web::get().to(domains::list))
            .route("/domains", web::post().to(domains::add))
            .route("/domains/{id}/{action}", web::post().to(domains::change))
            .route("/webhooks", web::get().to(webhooks::list))
            .route("/webhooks", web::post().to(webhooks::create))
            .route("/webhooks/{id}", web::get().to(webhooks::show))
            .route("/webhooks/{id}/{action}", web::post().to(webhooks::change))
            .route("/users", web::get().to(users::list))
            .route("/users", web::post().to(users::add))
            .route(
                "/users/{id}/two-factor-reset",
                web::post().to(second_factor::reset),
            )
            .route("/users/{id}/{action}", web::post().to(users::change))
            .route("/audit", web::get().to(audit::list))
            .route("/keys", web::get().to(keys::list))
            .route("/keys", web::post().to(keys::add))
            .route("/keys/{id}/revoke", web::post().to(keys::revoke))
            .route("/api", web::get().to(api_docs::page))
            .default_service(web::to(|| async {
                Err::<HttpResponse, _>(error::AdminError::NotFound)
            })),
    );
}

async fn to_links() -> HttpResponse {
    pages::see_other("/admin/links")
}

/// The session layer fails before or after a handler when the database is away; visitors
/// then get the 503 page, as on the redirect path and the API, not an empty 500. (The error is
/// replaced, not answered here: the request cannot be kept while the scope routes it.)
async fn unavailable_page(
    req: actix_web::dev::ServiceRequest,
    next: actix_web::middleware::Next<impl actix_web::body::MessageBody + 'static>,
) -> Result<actix_web::dev::ServiceResponse<impl actix_web::body::MessageBody>, actix_web::Error> {
    next.call(req).await.map_err(|err| {
        if err.as_response_error().status_code().is_server_error() {
            tracing::error!(error = %err, "admin request failed below the page");
            error::AdminError::Unavailable.into()
        } else {
            err
        }
    })
}

/// Answers the request in its language (cookie, else `Accept-Language`; the signed-in
/// person's setting replaces it once known), error pages included.
async fn in_language(
    req: actix_web::dev::ServiceRequest,
    next: actix_web::middleware::Next<impl actix_web::body::MessageBody + 'static>,
) -> Result<actix_web::dev::ServiceResponse<impl actix_web::body::MessageBody>, actix_web::Error> {
    let lang = crate::i18n::Lang::of(req.request());
    lang.scope(next.call(req)).await.map_err(|err| {
        // An error from a layer below is drawn later, outside this request: it keeps the
        // language with it.
        InLanguage { lang, err }.into()
    })
}

#[derive(Debug)]
struct InLanguage {
    lang: crate::i18n::Lang,
    err: actix_web::Error,
}

impl std::fmt::Display for InLanguage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.err.fmt(f)
    }
}

impl actix_web::ResponseError for InLanguage {
    fn status_code(&self) -> actix_web::http::StatusCode {
        self.err.as_response_error().status_code()
    }

    fn error_response(&self) -> HttpResponse {
        self.lang
            .within(|| self.err.as_response_error().error_response())
    }
}

/// Marks cookies Secure when a trusted proxy says the visitor came over https, so that the
/// session cookie is never sent over plain HTTP afterwards.
async fn secure_cookie_over_https(
    req: actix_web::dev::ServiceRequest,
    next: actix_web::middleware::Next<impl actix_web::body::MessageBody>,
) -> Result<actix_web::dev::ServiceResponse<impl actix_web::body::MessageBody>, actix_web::Error> {
    let https = req
        .app_data::<web::Data<crate::state::AppState>>()
        .is_some_and(|state| state.core.settings.trusted_proxies.is_https(req.request()));
    let mut response = next.call(req).await?;
    if https {
        let headers = response.headers_mut();
        let cookies: Vec<_> = headers.get_all(header::SET_COOKIE).cloned().collect();
        headers.remove(header::SET_COOKIE);
        for cookie in cookies {
            let text = cookie.to_str().unwrap_or_default();
            let secured = if text.contains("; Secure") {
                text.to_owned()
            } else {
                format!("{text}; Secure")
            };
            if let Ok(value) = header::HeaderValue::from_str(&secured) {
                headers.append(header::SET_COOKIE, value);
            }
        }
    }
    Ok(response)
}
