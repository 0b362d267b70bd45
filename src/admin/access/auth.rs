//! Signing in and out (the checks and throttling are `services::signin`), the signed-in user
//! and CSRF tokens.

use super::cookies::{
    FLIGHT_COOKIE, LOGIN_COOKIE, PENDING_COOKIE, read_signed, signed_cookie, spent, with_cookies,
};
use super::pending::{self, Step};
use crate::admin::error::AdminError;
use crate::admin::pages::{Frame, render};
use crate::digest::constant_time_eq;
use crate::i18n::{Lang, Message, Says};
use crate::rules::Role;
use crate::services::secret::random_hex;
use crate::services::signin::{self, SignInError};
use crate::services::sso::password_allowed;
use crate::services::{Actor, Principal};
use crate::state::AppState;
use actix_session::{Session, SessionExt};
use actix_web::cookie::{Cookie, Key};
use actix_web::dev::Payload;
use actix_web::http::StatusCode;
use actix_web::{FromRequest, HttpRequest, HttpResponse, web};
use askama::Template;
use chrono::TimeDelta;
use sea_orm::DatabaseConnection;
use std::future::Future;
use std::pin::Pin;

/// A session lasts at most this long after sign-in, however active.
pub const ABSOLUTE_LIFETIME: TimeDelta = TimeDelta::hours(12);

const UID: &str = "uid";
const SIGNED_IN_AT: &str = "signed_in_at";
/// The user's session epoch at sign-in; a password change raises it and so ends the session.
const EPOCH: &str = "epoch";
const CSRF: &str = "csrf";
const FLASH: &str = "flash";
const UNDO: &str = "undo";
const COPY: &str = "copy";

/// The person behind a request to an admin page.
#[derive(Clone)]
pub struct CurrentUser {
    pub id: i64,
    /// The sign-in name (what the audit log records).
    pub name: String,
    /// How pages greet them: their display name, else the sign-in name.
    pub shown: String,
    pub role: Role,
    pub csrf: String,
    /// The time zone pages show this user times in (their choice, else INKLINK_TIMEZONE).
    pub tz: chrono_tz::Tz,
    /// The language pages show this user (their choice, else their browser's).
    pub lang: Lang,
    /// The default domain's trouble, if any (a banner on every page).
    pub alert: Option<crate::state::DomainAlert>,
    session: Session,
}

impl CurrentUser {
    pub fn is_admin(&self) -> bool {
        self.role == Role::Admin
    }

    /// The form's token must be this session's: a page on another site cannot know it.
    pub fn check_csrf(&self, token: &str) -> Result<(), AdminError> {
        match constant_time_eq(self.csrf.as_bytes(), token.as_bytes()) {
            true => Ok(()),
            false => Err(AdminError::Csrf),
        }
    }

    /// A message for the next page, kept as its structure so that it is drawn in the
    /// language of whoever reads it, its values as they are.
    pub fn flash(&self, message: Message) {
        let _ = self.session.insert(FLASH, message);
    }

    pub fn take_flash(&self) -> Option<Message> {
        self.session
            .remove_as::<Message>(FLASH)
            .and_then(Result::ok)
    }

    /// The next page offers to undo disabling this link.
    pub fn offer_undo(&self, code: &str) {
        let _ = self.session.insert(UNDO, code.to_owned());
    }

    /// The next page offers to copy this short URL (the link just created).
    pub fn offer_copy(&self, url: &str) {
        let _ = self.session.insert(COPY, url.to_owned());
    }

    pub fn take_copy(&self) -> Option<String> {
        self.session.remove_as::<String>(COPY).and_then(Result::ok)
    }

    pub fn take_undo(&self) -> Option<String> {
        self.session.remove_as::<String>(UNDO).and_then(Result::ok)
    }

    pub fn actor(&self) -> Actor {
        Actor::User(Principal {
            id: self.id,
            name: self.name.clone(),
            role: self.role,
        })
    }
}

impl FromRequest for CurrentUser {
    type Error = AdminError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, Self::Error>>>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let session = req.get_session();
        let state = req.app_data::<web::Data<AppState>>().cloned();
        // A page asked for while signed out is where sign-in leads back to.
        let asked = (req.method() == actix_web::http::Method::GET)
            .then(|| req.uri().path_and_query().map(|p| p.as_str().to_owned()))
            .flatten();
        Box::pin(async move {
            let state = state.expect("AppState is registered");
            let alert = state
                .core
                .domain_alert
                .read()
                .map(|alert| alert.clone())
                .unwrap_or_default();
            match signed_in_user(&state.core.db, session, state.core.settings.timezone, alert).await
            {
                Err(AdminError::SignedOut) => Err(match asked {
                    Some(path) => AdminError::SignedOutFrom(path),
                    None => AdminError::SignedOut,
                }),
                other => other,
            }
        })
    }
}

async fn signed_in_user(
    db: &DatabaseConnection,
    session: Session,
    default_tz: chrono_tz::Tz,
    alert: Option<crate::state::DomainAlert>,
) -> Result<CurrentUser, AdminError> {
    let read = |key| {
        session
            .get::<i64>(key)
            .map_err(|err| AdminError::Session(err.to_string()))
    };
    let (Some(uid), Some(signed_in_at)) = (read(UID)?, read(SIGNED_IN_AT)?) else {
        return Err(AdminError::SignedOut);
    };
    let expired = chrono::DateTime::from_timestamp(signed_in_at, 0)
        .is_none_or(|at| chrono::Utc::now() - at > ABSOLUTE_LIFETIME);
    let user = match expired {
        true => None,
        false => crate::services::users::by_id(db, uid).await?,
    };
    let epoch = session
        .get::<i32>(EPOCH)
        .map_err(|err| AdminError::Session(err.to_string()))?
        .unwrap_or(0);
    let Some(user) = user.filter(|user| !user.disabled && user.session_epoch == epoch) else {
        session.purge();
        return Err(AdminError::SignedOut);
    };
    let csrf = session
        .get::<String>(CSRF)
        .map_err(|err| AdminError::Session(err.to_string()))?
        .ok_or(AdminError::SignedOut)?;
    Ok(CurrentUser {
        id: user.id,
        role: user.role,
        tz: user
            .time_zone
            .as_deref()
            .and_then(|name| name.parse().ok())
            .unwrap_or(default_tz),
        lang: match user.language.as_deref().and_then(Lang::from_tag) {
            Some(chosen) => {
                chosen.set_current();
                chosen
            }
            None => Lang::current(),
        },
        shown: user.shown_name().to_owned(),
        name: user.username,
        csrf,
        alert,
        session,
    })
}

/// A signed-in admin; operators get 403.
pub struct AdminUser(pub CurrentUser);

impl FromRequest for AdminUser {
    type Error = AdminError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, Self::Error>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let user = CurrentUser::from_request(req, payload);
        Box::pin(async move {
            let user = user.await?;
            match user.is_admin() {
                true => Ok(AdminUser(user)),
                false => Err(AdminError::Forbidden),
            }
        })
    }
}

#[derive(Template)]
#[template(path = "admin/login.html")]
struct LoginPage<'a> {
    lang: Lang,
    csrf: &'a str,
    username: &'a str,
    error: Option<Message>,
    /// The admin page to go to after signing in.
    next: &'a str,
    /// The single sign-on provider's name, when one is set up.
    sso: Option<&'a str>,
    /// Whether everyone may sign in with a password (else only break-glass users, behind a
    /// fold).
    passwords: bool,
}

#[derive(serde::Deserialize, Default)]
#[serde(default)]
pub struct NextQuery {
    next: String,
}

/// The token of a valid login cookie on `req` (signed by us, so not planted by another site).
pub(super) fn login_token(req: &HttpRequest, key: &Key) -> Option<String> {
    let token = read_signed(req, key, LOGIN_COOKIE)?;
    (token.len() == 64).then_some(token)
}

/// The visitor's address (behind a trusted proxy, the one it names): what sign-in throttles.
pub(super) fn client_ip(req: &HttpRequest, state: &AppState) -> String {
    state
        .core
        .settings
        .trusted_proxies
        .client_ip_of(req)
        .map(|ip| ip.to_string())
        .unwrap_or_default()
}

/// The sign-in pages' token, when the form posted it back: the form came from this site.
pub(super) fn posted_login_token(
    req: &HttpRequest,
    state: &AppState,
    posted: &str,
) -> Result<String, AdminError> {
    let key = Key::from(&state.core.cookie_key);
    let token = login_token(req, &key).ok_or(AdminError::Csrf)?;
    match constant_time_eq(token.as_bytes(), posted.as_bytes()) {
        true => Ok(token),
        false => Err(AdminError::Csrf),
    }
}

fn login_cookie(token: &str, key: &Key, secure: bool) -> Cookie<'static> {
    signed_cookie(key, LOGIN_COOKIE, token.to_owned(), None, secure)
}

pub async fn login_form(
    req: HttpRequest,
    state: web::Data<AppState>,
    query: web::Query<NextQuery>,
) -> Result<HttpResponse, AdminError> {
    login_answer(&req, &state, StatusCode::OK, "", None, &query.next)
}

/// The sign-in page (with `error`, if any), and the cookie its form's token travels in.
pub(super) fn login_answer(
    req: &HttpRequest,
    state: &AppState,
    status: StatusCode,
    username: &str,
    error: Option<Message>,
    next: &str,
) -> Result<HttpResponse, AdminError> {
    let key = Key::from(&state.core.cookie_key);
    let token = login_token(req, &key).unwrap_or_else(|| random_hex(32));
    let mut response = render(
        status,
        &LoginPage {
            lang: Lang::current(),
            csrf: &token,
            username,
            error,
            next: crate::admin::pages::local_next(next).unwrap_or(""),
            sso: state.core.sso.as_ref().map(|sso| sso.name.as_str()),
            passwords: state.core.settings.password_signin,
        },
    );
    let cookie = login_cookie(&token, &key, state.core.settings.secure_cookie);
    response
        .add_cookie(&cookie)
        .map_err(|err| AdminError::Session(err.to_string()))?;
    Ok(response)
}

#[derive(serde::Deserialize, Default)]
#[serde(default)]
pub struct LoginForm {
    csrf: String,
    username: String,
    password: String,
    next: String,
}

pub async fn login(
    req: HttpRequest,
    session: Session,
    state: web::Data<AppState>,
    form: web::Form<LoginForm>,
) -> Result<HttpResponse, AdminError> {
    posted_login_token(&req, &state, &form.csrf)?;
    // Behind a reverse proxy the peer is the proxy; throttle by the visitor behind it.
    let ip = client_ip(&req, &state);
    let signed = match password_allowed(&state.core.settings, &form.username) {
        true => signin::sign_in(&state.core.db, &form.username, &form.password, &ip).await,
        false => Err(SignInError::PasswordOff),
    };
    match signed {
        Ok(user) => first_factor_passed(&state, &session, &user, &ip, &form.next).await,
        Err(SignInError::Db(err)) => Err(err.into()),
        Err(err) => {
            let status = match err {
                SignInError::Throttled { .. } => StatusCode::TOO_MANY_REQUESTS,
                SignInError::PasswordOff => StatusCode::FORBIDDEN,
                _ => StatusCode::UNAUTHORIZED,
            };
            login_answer(
                &req,
                &state,
                status,
                &form.username,
                Some(err.says()),
                &form.next,
            )
        }
    }
}

/// The password (or the single sign-on provider) said who this is: a second factor, when on
/// (or required), comes next; else the session starts.
pub(super) async fn first_factor_passed(
    state: &AppState,
    session: &Session,
    user: &crate::db::entities::users::Model,
    ip: &str,
    next: &str,
) -> Result<HttpResponse, AdminError> {
    let key = Key::from(&state.core.cookie_key);
    let next = crate::admin::pages::local_next(next).unwrap_or("");
    let step = match (user.has_second_factor(), state.core.settings.require_2fa) {
        (true, _) => Some(Step::Code),
        (false, true) => Some(Step::Enrol),
        (false, false) => None,
    };
    match step {
        Some(step) => pending::ask(&key, user, step, next, state),
        None => start_session(state, session, user, ip, next).await,
    }
}

/// Signs `user` in on this browser, every step passed: a new session, the sign-in recorded,
/// and on to `next` (or the links).
pub(super) async fn start_session(
    state: &AppState,
    session: &Session,
    user: &crate::db::entities::users::Model,
    ip: &str,
    next: &str,
) -> Result<HttpResponse, AdminError> {
    signin::record(&state.core.db, user, ip).await?;
    // A new session id at sign-in: a session id planted before it is worthless after.
    session.renew();
    let fresh_csrf = random_hex(32);
    let insert = |key: &str, value: serde_json::Value| {
        session
            .insert(key, value)
            .map_err(|err| AdminError::Session(err.to_string()))
    };
    insert(UID, user.id.into())?;
    insert(SIGNED_IN_AT, chrono::Utc::now().timestamp().into())?;
    insert(EPOCH, user.session_epoch.into())?;
    insert(CSRF, fresh_csrf.into())?;
    let mut response = crate::admin::pages::see_other(
        crate::admin::pages::local_next(next).unwrap_or("/admin/links"),
    );
    // The language they chose before follows them to every page.
    if let Some(chosen) = user.language.as_deref().and_then(Lang::from_tag) {
        response
            .add_cookie(&chosen.cookie())
            .map_err(|err| AdminError::Session(err.to_string()))?;
    }
    with_cookies(
        response,
        [LOGIN_COOKIE, PENDING_COOKIE, FLIGHT_COOKIE].map(spent),
    )
}

#[derive(serde::Deserialize)]
pub struct CsrfForm {
    #[serde(default)]
    pub csrf: String,
}

pub async fn logout(
    user: CurrentUser,
    form: web::Form<CsrfForm>,
) -> Result<HttpResponse, AdminError> {
    user.check_csrf(&form.csrf)?;
    // Deletes the stored session: the old cookie opens nothing any more.
    user.session.purge();
    Ok(crate::admin::pages::see_other("/admin/login"))
}

impl Frame {
    pub fn new(user: &CurrentUser, flash: Option<Message>, section: &'static str) -> Self {
        Self {
            user: user.shown.clone(),
            is_admin: user.is_admin(),
            lang: user.lang,
            csrf: user.csrf.clone(),
            flash,
            undo: None,
            copy: None,
            section,
            alert: user.alert.clone(),
        }
    }
}
