//! A sign-in between its password and its second step: nothing is stored, a signed cookie
//! says which user passed the password, under which session epoch, until when, which step is
//! next and where they were going.

use super::cookies::{PENDING_COOKIE, read_signed, signed_cookie, with_cookies};
use crate::admin::error::AdminError;
use crate::admin::pages::see_other;
use crate::db::entities::users;
use crate::state::AppState;
use actix_web::cookie::Key;
use actix_web::{HttpRequest, HttpResponse};

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
    let value = read_signed(req, key, PENDING_COOKIE)?;
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
    let cookie = signed_cookie(
        key,
        PENDING_COOKIE,
        pending_value(user, step, next),
        Some(PENDING_SECONDS),
        state.core.settings.secure_cookie,
    );
    let response = see_other(match step {
        Step::Code => "/admin/login/code",
        Step::Enrol => "/admin/login/enrol",
    });
    with_cookies(response, [cookie])
}
