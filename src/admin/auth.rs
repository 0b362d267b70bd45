//! Signing in and out (the checks and throttling are `services::signin`), the signed-in user
//! and CSRF tokens.

use super::error::AdminError;
use super::pages::{Frame, render};
use crate::rules::Role;
use crate::services::audit::Actor;
use crate::services::secret::random_hex;
use crate::services::signin::{self, SignInError};
use crate::state::AppState;
use actix_session::{Session, SessionExt};
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
const CSRF: &str = "csrf";
const FLASH: &str = "flash";

/// The person behind a request to an admin page.
#[derive(Clone)]
pub struct CurrentUser {
    pub id: i64,
    pub name: String,
    pub role: Role,
    pub csrf: String,
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

    pub fn flash(&self, message: impl Into<String>) {
        let _ = self.session.insert(FLASH, message.into());
    }

    pub fn take_flash(&self) -> Option<String> {
        self.session.remove_as::<String>(FLASH).and_then(Result::ok)
    }

    pub fn actor(&self) -> Actor {
        Actor::User(self.name.clone())
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl FromRequest for CurrentUser {
    type Error = AdminError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, Self::Error>>>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let session = req.get_session();
        let state = req.app_data::<web::Data<AppState>>().cloned();
        Box::pin(async move {
            let state = state.expect("AppState is registered");
            signed_in_user(&state.core.db, session).await
        })
    }
}

async fn signed_in_user(
    db: &DatabaseConnection,
    session: Session,
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
    let Some(user) = user.filter(|user| !user.disabled) else {
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
        name: user.username,
        csrf,
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
    csrf: &'a str,
    username: &'a str,
    error: Option<&'a str>,
}

fn session_csrf(session: &Session) -> Result<String, AdminError> {
    if let Some(token) = session
        .get::<String>(CSRF)
        .map_err(|err| AdminError::Session(err.to_string()))?
    {
        return Ok(token);
    }
    let token = random_hex(32);
    session
        .insert(CSRF, &token)
        .map_err(|err| AdminError::Session(err.to_string()))?;
    Ok(token)
}

pub async fn login_form(session: Session) -> Result<HttpResponse, AdminError> {
    let csrf = session_csrf(&session)?;
    Ok(render(
        StatusCode::OK,
        &LoginPage {
            csrf: &csrf,
            username: "",
            error: None,
        },
    ))
}

#[derive(serde::Deserialize)]
pub struct LoginForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    username: String,
    #[serde(default)]
    password: String,
}

pub async fn login(
    req: HttpRequest,
    session: Session,
    state: web::Data<AppState>,
    form: web::Form<LoginForm>,
) -> Result<HttpResponse, AdminError> {
    let csrf = session_csrf(&session)?;
    if !constant_time_eq(csrf.as_bytes(), form.csrf.as_bytes()) {
        return Err(AdminError::Csrf);
    }
    // Behind a reverse proxy the peer is the proxy; throttle by the visitor behind it.
    let ip = state
        .core
        .settings
        .trusted_proxies
        .client_ip_of(&req)
        .map(|ip| ip.to_string())
        .unwrap_or_default();
    match signin::sign_in(&state.core.db, &form.username, &form.password, &ip).await {
        Ok(user) => {
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
            insert(CSRF, fresh_csrf.into())?;
            Ok(super::pages::see_other("/admin/links"))
        }
        Err(SignInError::Db(err)) => Err(err.into()),
        Err(err) => {
            let status = match err {
                SignInError::Throttled { .. } => StatusCode::TOO_MANY_REQUESTS,
                _ => StatusCode::UNAUTHORIZED,
            };
            let message = err.to_string();
            Ok(render(
                status,
                &LoginPage {
                    csrf: &csrf,
                    username: &form.username,
                    error: Some(&message),
                },
            ))
        }
    }
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
    Ok(super::pages::see_other("/admin/login"))
}

impl Frame {
    pub fn new(user: &CurrentUser, flash: Option<String>, section: &'static str) -> Self {
        Self {
            user: user.name.clone(),
            is_admin: user.is_admin(),
            csrf: user.csrf.clone(),
            flash,
            section,
        }
    }
}
