//! Signing in through the single sign-on provider: the start (to the provider, with a signed
//! cookie holding the state, nonce and PKCE verifier) and the callback. The flow's checks are
//! `services::sso`'s; a passed callback goes on like a right password (a second factor next,
//! when the user has one or one is required).

use super::auth::{client_ip, first_factor_passed, login_answer};
use super::cookies::{FLIGHT_COOKIE, read_signed, signed_cookie, spent, with_cookies};
use crate::admin::error::AdminError;
use crate::i18n::Says;
use crate::net::oidc::{FLIGHT_SECONDS, Flight, OidcError};
use crate::services::sso::SsoError;
use crate::state::AppState;
use actix_web::cookie::Key;
use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};

#[derive(serde::Deserialize, Default)]
#[serde(default)]
pub struct StartQuery {
    next: String,
}

/// `https://host` or `http://host` as the browser reached the admin UI (the provider's
/// redirect back goes there unless INKLINK_PUBLIC_URL says otherwise). Only a trusted proxy is
/// believed about https, as for the session cookie; the host is the request's own.
fn origin(req: &HttpRequest, state: &AppState) -> String {
    let settings = &state.core.settings;
    let https = settings.secure_cookie || settings.trusted_proxies.is_https(req);
    let scheme = if https { "https" } else { "http" };
    let host = req
        .headers()
        .get(actix_web::http::header::HOST)
        .and_then(|host| host.to_str().ok())
        .unwrap_or("localhost");
    format!("{scheme}://{host}")
}

fn refused(
    req: &HttpRequest,
    state: &AppState,
    err: &SsoError,
) -> Result<HttpResponse, AdminError> {
    let status = match err {
        SsoError::Db(_) => StatusCode::SERVICE_UNAVAILABLE,
        SsoError::Provider(OidcError::Unreachable(_) | OidcError::BadProvider(_)) => {
            StatusCode::BAD_GATEWAY
        }
        SsoError::NoUser(_) | SsoError::Disabled => StatusCode::FORBIDDEN,
        SsoError::Throttled { .. } => StatusCode::TOO_MANY_REQUESTS,
        _ => StatusCode::BAD_REQUEST,
    };
    tracing::warn!(error = %err, "single sign-on refused");
    let response = login_answer(req, state, status, "", Some(err.says()), "")?;
    with_cookies(response, [spent(FLIGHT_COOKIE)])
}

pub async fn start(
    req: HttpRequest,
    state: web::Data<AppState>,
    query: web::Query<StartQuery>,
) -> Result<HttpResponse, AdminError> {
    let Some(sso) = state.core.sso.as_ref() else {
        return Err(AdminError::NotFound);
    };
    let next = crate::admin::pages::local_next(&query.next).unwrap_or("");
    let (to, flight) = match sso.begin(&origin(&req, &state), next).await {
        Ok(begun) => begun,
        Err(err) => return refused(&req, &state, &err.into()),
    };
    let cookie = signed_cookie(
        &Key::from(&state.core.cookie_key),
        FLIGHT_COOKIE,
        flight.to_cookie(),
        Some(FLIGHT_SECONDS),
        state.core.settings.secure_cookie,
    );
    with_cookies(crate::admin::pages::see_other(&to), [cookie])
}

#[derive(serde::Deserialize, Default)]
#[serde(default)]
pub struct Callback {
    code: String,
    state: String,
    error: String,
    error_description: String,
}

fn flight_of(req: &HttpRequest, key: &Key) -> Option<Flight> {
    Flight::from_cookie(&read_signed(req, key, FLIGHT_COOKIE)?)
}

pub async fn callback(
    req: HttpRequest,
    session: actix_session::Session,
    state: web::Data<AppState>,
    query: web::Query<Callback>,
) -> Result<HttpResponse, AdminError> {
    let Some(sso) = state.core.sso.as_ref() else {
        return Err(AdminError::NotFound);
    };
    // Refused at the provider (the person said no, or the provider refused the request):
    // nothing signs in, whatever the state.
    if !query.error.is_empty() {
        let reason = match query.error_description.is_empty() {
            true => &query.error,
            false => &query.error_description,
        };
        let reason = reason.chars().take(200).collect();
        return refused(&req, &state, &OidcError::Refused(reason).into());
    }
    let key = Key::from(&state.core.cookie_key);
    // The state must be the one this browser's cookie holds: a callback started elsewhere
    // (someone else's code, signing this browser in as them) is refused.
    let Some(flight) = flight_of(&req, &key).filter(|flight| {
        crate::digest::constant_time_eq(flight.state.as_bytes(), query.state.as_bytes())
    }) else {
        return refused(&req, &state, &SsoError::Stale);
    };
    let origin = origin(&req, &state);
    let ip = client_ip(&req, &state);
    match crate::services::sso::finish(&state.core, sso, &flight, &query.code, &origin, &ip).await {
        Ok(user) => {
            let response = first_factor_passed(&state, &session, &user, &ip, &flight.next).await?;
            with_cookies(response, [spent(FLIGHT_COOKIE)])
        }
        Err(SsoError::Db(err)) => Err(err.into()),
        Err(err) => refused(&req, &state, &err),
    }
}
