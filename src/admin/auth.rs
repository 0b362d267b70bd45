//! Signing in and out, the signed-in user, CSRF tokens and sign-in throttling.

use super::error::AdminError;
use super::pages::{Frame, render};
use crate::db::entities::{login_failures, users};
use crate::rules::{Role, Username};
use crate::services::audit::{self, Actor, Entry};
use crate::services::secret::random_hex;
use crate::services::users::verify_password;
use crate::state::AppState;
use actix_session::{Session, SessionExt};
use actix_web::dev::Payload;
use actix_web::http::StatusCode;
use actix_web::{FromRequest, HttpRequest, HttpResponse, web};
use askama::Template;
use chrono::TimeDelta;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, DatabaseConnection, DbErr, EntityTrait, PaginatorTrait,
    QueryFilter, Set,
};
use std::future::Future;
use std::pin::Pin;
use std::sync::LazyLock;

/// A session lasts at most this long after sign-in, however active.
pub const ABSOLUTE_LIFETIME: TimeDelta = TimeDelta::hours(12);
/// Failed sign-ins counted over this window…
const THROTTLE_WINDOW: TimeDelta = TimeDelta::minutes(15);
/// …refuse further tries for one account after this many,
const MAX_FAILURES_PER_ACCOUNT: u64 = 5;
/// …and from one address after this many (any accounts).
const MAX_FAILURES_PER_IP: u64 = 20;

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
        false => users::Entity::find_by_id(uid).one(db).await?,
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
        role: user.role.parse().unwrap_or(Role::Operator),
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

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SignInError {
    /// The same answer for an unknown user, a wrong password and a disabled account, so
    /// that the form does not reveal which accounts exist.
    #[error("wrong user name or password")]
    Invalid,
    #[error("too many failed sign-ins; try again in {minutes} minutes")]
    Throttled { minutes: i64 },
}

/// Checks a sign-in attempt against throttling, the password and the account's state, and
/// records a failure.
pub async fn attempt_sign_in(
    db: &DatabaseConnection,
    name: &str,
    password: &str,
    ip: &str,
) -> Result<Result<users::Model, SignInError>, DbErr> {
    let name = name.trim().to_ascii_lowercase();
    let since = crate::db::now() - THROTTLE_WINDOW;
    let account_failures = login_failures::Entity::find()
        .filter(login_failures::Column::Username.eq(&name))
        .filter(login_failures::Column::At.gt(since))
        .count(db)
        .await?;
    let ip_failures = login_failures::Entity::find()
        .filter(login_failures::Column::Ip.eq(ip))
        .filter(login_failures::Column::At.gt(since))
        .count(db)
        .await?;
    if account_failures >= MAX_FAILURES_PER_ACCOUNT || ip_failures >= MAX_FAILURES_PER_IP {
        return Ok(Err(SignInError::Throttled {
            minutes: THROTTLE_WINDOW.num_minutes(),
        }));
    }
    let user = match Username::parse(&name) {
        Ok(username) => crate::services::users::find(db, &username).await?,
        Err(_) => None,
    };
    // Verify against a real hash even for unknown users, so timing reveals nothing.
    let hash = user
        .as_ref()
        .map_or(DUMMY_HASH.as_str(), |u| u.password_hash.as_str());
    let password_ok = verify_password(hash, password);
    match user {
        Some(user) if password_ok && !user.disabled => Ok(Ok(user)),
        _ => {
            login_failures::ActiveModel {
                username: Set(name.chars().take(64).collect()),
                ip: Set(ip.to_owned()),
                at: Set(crate::db::now()),
                ..Default::default()
            }
            .insert(db)
            .await?;
            Ok(Err(SignInError::Invalid))
        }
    }
}

/// An argon2id hash of a random password nobody knows.
static DUMMY_HASH: LazyLock<String> = LazyLock::new(|| {
    let password = crate::rules::Password::parse(&random_hex(16)).expect("32 characters");
    crate::services::users::hash_password(&password)
});

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
    let db = &state.core.db;
    match attempt_sign_in(db, &form.username, &form.password, &ip).await? {
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
            users::ActiveModel {
                id: Set(user.id),
                last_login_at: Set(Some(crate::db::now())),
                ..Default::default()
            }
            .update(db)
            .await?;
            audit::record(
                db,
                &Actor::User(user.username.clone()),
                Entry {
                    action: "user.sign_in",
                    target_kind: "user",
                    target_id: &user.username,
                    before: None,
                    after: Some(serde_json::json!({ "ip": ip })),
                },
            )
            .await?;
            Ok(super::pages::see_other("/admin/links"))
        }
        Err(err) => {
            let status = match err {
                SignInError::Invalid => StatusCode::UNAUTHORIZED,
                SignInError::Throttled { .. } => StatusCode::TOO_MANY_REQUESTS,
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
