//! The second step of signing in (a code from an authenticator app, or a recovery code), the
//! enrolment that `INKLINK_REQUIRE_2FA` asks of users without one, and enrolling or turning
//! it off from "Your settings". The checks are `services::two_factor`'s.
//!
//! Between the password and the code, nothing is stored but a signed cookie (`pending`). No
//! path reaches a session without the code: the session is only made by `start_session`, which
//! the password step calls only for users without a second factor (when none is required).

use super::auth::{
    AdminUser, CurrentUser, client_ip, login_token, posted_login_token, start_session,
};
use super::pending::{Pending, Step, read_pending};
use crate::admin::error::AdminError;
use crate::admin::pages::{Frame, render, see_other};
use crate::db::entities::users;
use crate::i18n::Lang;
use crate::i18n::Message;
use crate::i18n::Says;
use crate::rules::totp::{SecondFactor, TotpSecret};
use crate::services::two_factor::{self, TwoFactorError};
use crate::state::AppState;
use actix_web::cookie::Key;
use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;

/// The user a valid pending cookie of `step` names, if they may still sign in.
async fn pending_user(
    req: &HttpRequest,
    state: &AppState,
    step: Step,
) -> Result<Option<(Pending, users::Model)>, AdminError> {
    let key = Key::from(&state.core.cookie_key);
    let Some(pending) = read_pending(req, &key).filter(|p| p.step == step) else {
        return Ok(None);
    };
    let user = crate::services::users::by_id(&state.core.db, pending.user)
        .await?
        .filter(|u| !u.disabled && u.session_epoch == pending.epoch);
    Ok(user.map(|user| (pending, user)))
}

/// The name authenticator apps show beside the account.
const ISSUER: &str = "inklink";

/// The QR code and the secret typed by hand, for enrolling `secret` as `account`.
fn qr(secret: &TotpSecret, account: &str) -> String {
    crate::admin::qr::svg(&secret.uri(ISSUER, account)).unwrap_or_default()
}

/// The sign-in pages of the second step (no session yet: the plain layout).
#[derive(Template)]
#[template(path = "admin/second_factor.html")]
struct StepPage<'a> {
    lang: Lang,
    csrf: &'a str,
    error: Option<crate::i18n::Message>,
    /// `code`, `enrol` or `codes` (the recovery codes, once).
    mode: &'static str,
    qr: String,
    secret: String,
    codes: Vec<String>,
    next: &'a str,
}

#[derive(serde::Deserialize, Default)]
#[serde(default)]
pub struct StepForm {
    csrf: String,
    code: String,
    secret: String,
}

fn step_page<'a>(csrf: &'a str, mode: &'static str) -> StepPage<'a> {
    StepPage {
        lang: Lang::current(),
        csrf,
        error: None,
        mode,
        qr: String::new(),
        secret: String::new(),
        codes: Vec::new(),
        next: "",
    }
}

fn to_login() -> HttpResponse {
    see_other("/admin/login")
}

pub async fn code_form(
    req: HttpRequest,
    state: web::Data<AppState>,
) -> Result<HttpResponse, AdminError> {
    let key = Key::from(&state.core.cookie_key);
    let (Some(csrf), Some(_)) = (
        login_token(&req, &key),
        pending_user(&req, &state, Step::Code).await?,
    ) else {
        return Ok(to_login());
    };
    Ok(render(StatusCode::OK, &step_page(&csrf, "code")))
}

pub async fn code_submit(
    req: HttpRequest,
    session: actix_session::Session,
    state: web::Data<AppState>,
    form: web::Form<StepForm>,
) -> Result<HttpResponse, AdminError> {
    let csrf = posted_login_token(&req, &state, &form.csrf)?;
    let Some((pending, user)) = pending_user(&req, &state, Step::Code).await? else {
        return Ok(to_login());
    };
    let ip = client_ip(&req, &state);
    let checked = match SecondFactor::parse(&form.code) {
        Ok(factor) => two_factor::check(&state.core, &user, &factor, &ip).await,
        Err(err) => Err(err.into()),
    };
    match checked {
        Ok(()) => start_session(&state, &session, &user, &ip, &pending.next).await,
        Err(TwoFactorError::Db(err)) => Err(err.into()),
        Err(err) => {
            let status = match err {
                TwoFactorError::Throttled { .. } => StatusCode::TOO_MANY_REQUESTS,
                _ => StatusCode::UNAUTHORIZED,
            };
            let mut page = step_page(&csrf, "code");
            page.error = Some(err.says());
            Ok(render(status, &page))
        }
    }
}

pub async fn enrol_form(
    req: HttpRequest,
    state: web::Data<AppState>,
) -> Result<HttpResponse, AdminError> {
    let key = Key::from(&state.core.cookie_key);
    let (Some(csrf), Some((_, user))) = (
        login_token(&req, &key),
        pending_user(&req, &state, Step::Enrol).await?,
    ) else {
        return Ok(to_login());
    };
    let secret = TotpSecret::random();
    let mut page = step_page(&csrf, "enrol");
    page.qr = qr(&secret, &user.username);
    page.secret = secret.base32();
    Ok(render(StatusCode::OK, &page))
}

pub async fn enrol_submit(
    req: HttpRequest,
    session: actix_session::Session,
    state: web::Data<AppState>,
    form: web::Form<StepForm>,
) -> Result<HttpResponse, AdminError> {
    let csrf = posted_login_token(&req, &state, &form.csrf)?;
    let Some((pending, user)) = pending_user(&req, &state, Step::Enrol).await? else {
        return Ok(to_login());
    };
    let Some(secret) = TotpSecret::from_base32(&form.secret) else {
        return Ok(to_login());
    };
    let actor = crate::services::Actor::User(crate::services::Principal {
        id: user.id,
        name: user.username.clone(),
        role: user.role,
    });
    let enabled = match SecondFactor::parse(&form.code) {
        Ok(factor) => two_factor::enable(&state.core, &user, &secret, &factor, &actor).await,
        Err(err) => Err(err.into()),
    };
    match enabled {
        Ok(codes) => {
            let ip = client_ip(&req, &state);
            let signed_in = start_session(&state, &session, &user, &ip, &pending.next).await?;
            // The recovery codes, once, then on to where they were going.
            let mut page = step_page(&csrf, "codes");
            page.codes = codes;
            let next = crate::admin::pages::local_next(&pending.next).unwrap_or("/admin/links");
            page.next = next;
            let mut response = render(StatusCode::OK, &page);
            for cookie in signed_in.cookies() {
                response
                    .add_cookie(&cookie.into_owned())
                    .map_err(|err| AdminError::Session(err.to_string()))?;
            }
            Ok(response)
        }
        Err(TwoFactorError::Db(err)) => Err(err.into()),
        Err(err) => {
            let mut page = step_page(&csrf, "enrol");
            page.qr = qr(&secret, &user.username);
            page.secret = secret.base32();
            page.error = Some(err.says());
            Ok(render(StatusCode::UNPROCESSABLE_ENTITY, &page))
        }
    }
}

/// "Your settings" → two-factor sign-in: enrol an app, see the recovery codes once, or turn
/// it off.
#[derive(Template)]
#[template(path = "admin/two_factor.html")]
struct SettingsPage {
    frame: Frame,
    on: bool,
    left: i64,
    qr: String,
    secret: String,
    codes: Vec<String>,
    error: Option<crate::i18n::Message>,
}

fn settings_page(user: &CurrentUser, on: bool) -> SettingsPage {
    SettingsPage {
        frame: Frame::new(user, user.take_flash(), "account"),
        on,
        left: 0,
        qr: String::new(),
        secret: String::new(),
        codes: Vec::new(),
        error: None,
    }
}

async fn me(state: &AppState, user: &CurrentUser) -> Result<users::Model, AdminError> {
    crate::services::users::by_id(&state.core.db, user.id)
        .await?
        .ok_or(AdminError::SignedOut)
}

pub async fn settings(
    user: CurrentUser,
    state: web::Data<AppState>,
) -> Result<HttpResponse, AdminError> {
    let row = me(&state, &user).await?;
    let on = row.has_second_factor();
    let mut page = settings_page(&user, on);
    if on {
        page.left = two_factor::recovery_codes_left(&state.core, row.id).await?;
    } else {
        let secret = TotpSecret::random();
        page.qr = qr(&secret, &row.username);
        page.secret = secret.base32();
    }
    Ok(render(StatusCode::OK, &page))
}

#[derive(serde::Deserialize, Default)]
#[serde(default)]
pub struct SettingsForm {
    csrf: String,
    code: String,
    secret: String,
    password: String,
}

pub async fn settings_enrol(
    user: CurrentUser,
    state: web::Data<AppState>,
    form: web::Form<SettingsForm>,
) -> Result<HttpResponse, AdminError> {
    user.check_csrf(&form.csrf)?;
    let row = me(&state, &user).await?;
    let Some(secret) = TotpSecret::from_base32(&form.secret) else {
        return Ok(see_other("/admin/account/two-factor"));
    };
    let enabled = match SecondFactor::parse(&form.code) {
        Ok(factor) => two_factor::enable(&state.core, &row, &secret, &factor, &user.actor()).await,
        Err(err) => Err(err.into()),
    };
    match enabled {
        Ok(codes) => {
            let mut page = settings_page(&user, true);
            page.codes = codes;
            page.left = page.codes.len() as i64;
            Ok(render(StatusCode::OK, &page))
        }
        Err(TwoFactorError::Db(err)) => Err(err.into()),
        Err(err) => {
            let on = matches!(err, TwoFactorError::AlreadyOn);
            let mut page = settings_page(&user, on);
            if !on {
                page.qr = qr(&secret, &row.username);
                page.secret = secret.base32();
            }
            page.error = Some(err.says());
            Ok(render(StatusCode::UNPROCESSABLE_ENTITY, &page))
        }
    }
}

pub async fn settings_disable(
    req: HttpRequest,
    user: CurrentUser,
    state: web::Data<AppState>,
    form: web::Form<SettingsForm>,
) -> Result<HttpResponse, AdminError> {
    user.check_csrf(&form.csrf)?;
    let row = me(&state, &user).await?;
    let ip = client_ip(&req, &state);
    let disabled = match SecondFactor::parse(&form.code) {
        Ok(factor) => {
            two_factor::disable(
                &state.core,
                &row,
                &form.password,
                &factor,
                &ip,
                &user.actor(),
            )
            .await
        }
        Err(err) => Err(err.into()),
    };
    match disabled {
        Ok(()) => {
            user.flash(Message::new(t!("Two-factor sign-in is off")));
            Ok(see_other("/admin/account/two-factor"))
        }
        Err(TwoFactorError::Db(err)) => Err(err.into()),
        Err(err) => {
            let status = match err {
                TwoFactorError::Throttled { .. } => StatusCode::TOO_MANY_REQUESTS,
                _ => StatusCode::UNPROCESSABLE_ENTITY,
            };
            let mut page = settings_page(&user, row.has_second_factor());
            page.left = two_factor::recovery_codes_left(&state.core, row.id).await?;
            page.error = Some(err.says());
            Ok(render(status, &page))
        }
    }
}

#[derive(serde::Deserialize, Default)]
#[serde(default)]
pub struct CsrfOnly {
    csrf: String,
}

/// An admin resets another user's second factor (a lost phone and lost recovery codes).
pub async fn reset(
    admin: AdminUser,
    state: web::Data<AppState>,
    id: web::Path<i64>,
    form: web::Form<CsrfOnly>,
) -> Result<HttpResponse, AdminError> {
    let admin = admin.0;
    admin.check_csrf(&form.csrf)?;
    let target = crate::services::users::by_id(&state.core.db, *id)
        .await?
        .ok_or(AdminError::NotFound)?;
    match two_factor::reset(&state.core, &target, &admin.actor()).await {
        Ok(()) => admin.flash(
            Message::new(t!("Two-factor sign-in of {} was reset")).data("", &target.username),
        ),
        Err(TwoFactorError::Db(err)) => return Err(err.into()),
        Err(err) => admin.flash(err.says()),
    }
    Ok(see_other("/admin/users"))
}
