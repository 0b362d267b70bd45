//! A sign-in between its password and its second step: nothing is stored, a signed cookie
//! says which user passed the password, under which session epoch, until when, which step is
//! next and where they were going.

use crate::admin::error::AdminError;
use crate::admin::pages::see_other;
use crate::db::entities::users;
use crate::state::AppState;
use actix_web::cookie::{Cookie, CookieJar, Key, SameSite};
use actix_web::{HttpRequest, HttpResponse};

/// The signed cookie of a sign-in waiting for its second step.
pub const PENDING_COOKIE: &str = "inklink_2fa";
/// Time to type the code after the password.
const PENDING_SECONDS: i64 = 300;

/// What the password step leads to.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// A code from the app the user enrolled.
    Code,
    /// Enrolling an app first (`INKLINK_REQUIRE_2FA`).
    Enrol,
}

pub struct Pending {
    pub user: i64,
    pub epoch: i32,
    pub step: Step,
    pub next: String,
}

fn pending_value(user: &users::Model, step: Step, next: &str) -> String {
    let expires = chrono::Utc::now().timestamp() + PENDING_SECONDS;
    let step = match step {
        Step::Code => "code",
        Step::Enrol => "enrol",
    };
    format!("{}|{}|{expires}|{step}|{next}", user.id, user.session_epoch)
}

pub fn read_pending(req: &HttpRequest, key: &Key) -> Option<Pending> {
    let mut jar = CookieJar::new();
    jar.add_original(req.cookie(PENDING_COOKIE)?);
    let value = jar.signed(key).get(PENDING_COOKIE)?.value().to_owned();
    let mut parts = value.splitn(5, '|');
    let user = parts.next()?.parse().ok()?;
    let epoch = parts.next()?.parse().ok()?;
    let expires: i64 = parts.next()?.parse().ok()?;
    let step = match parts.next()? {
        "code" => Step::Code,
        "enrol" => Step::Enrol,
        _ => return None,
    };
    let next = parts.next()?.to_owned();
    (expires > chrono::Utc::now().timestamp()).then_some(Pending {
        user,
        epoch,
        step,
        next,
    })
}

/// After a right password: remember who, and ask for the code (or the enrolment).
pub fn ask(
    key: &Key,
    user: &users::Model,
    step: Step,
    next: &str,
    state: &AppState,
) -> Result<HttpResponse, AdminError> {
    let mut jar = CookieJar::new();
    jar.signed_mut(key).add(
        Cookie::build(PENDING_COOKIE, pending_value(user, step, next))
            .path("/admin")
            .http_only(true)
            .same_site(SameSite::Lax)
            .secure(state.core.settings.secure_cookie)
            .max_age(actix_web::cookie::time::Duration::seconds(PENDING_SECONDS))
            .finish(),
    );
    let cookie = jar
        .get(PENDING_COOKIE)
        .cloned()
        .expect("the cookie just added");
    let mut response = see_other(match step {
        Step::Code => "/admin/login/code",
        Step::Enrol => "/admin/login/enrol",
    });
    response
        .add_cookie(&cookie)
        .map_err(|err| AdminError::Session(err.to_string()))?;
    Ok(response)
}
