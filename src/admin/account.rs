//! The signed-in person's own settings: the time zone the admin UI shows times in.

use super::auth::CurrentUser;
use super::error::AdminError;
use super::pages::{Frame, render, see_other};
use crate::services::users;
use crate::state::AppState;
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use askama::Template;

/// Zones offered in the form's list (any IANA name is accepted).
const COMMON_ZONES: &[&str] = &[
    "Asia/Shanghai",
    "Asia/Hong_Kong",
    "Asia/Taipei",
    "Asia/Singapore",
    "Asia/Tokyo",
    "Asia/Seoul",
    "Asia/Kolkata",
    "Asia/Dubai",
    "Europe/London",
    "Europe/Berlin",
    "Europe/Moscow",
    "America/New_York",
    "America/Chicago",
    "America/Los_Angeles",
    "America/Sao_Paulo",
    "Australia/Sydney",
    "UTC",
];

#[derive(Template)]
#[template(path = "admin/account.html")]
struct AccountPage {
    frame: Frame,
    time_zone: String,
    default_zone: String,
    zones: &'static [&'static str],
    error: Option<String>,
}

async fn page(
    state: &AppState,
    user: &CurrentUser,
    typed: Option<String>,
    error: Option<String>,
) -> Result<AccountPage, AdminError> {
    let stored = users::by_id(&state.core.db, user.id)
        .await?
        .and_then(|u| u.time_zone)
        .unwrap_or_default();
    let flash = if error.is_none() {
        user.take_flash()
    } else {
        None
    };
    Ok(AccountPage {
        frame: Frame::new(user, flash, "account"),
        time_zone: typed.unwrap_or(stored),
        default_zone: state.core.settings.timezone.name().to_owned(),
        zones: COMMON_ZONES,
        error,
    })
}

pub async fn form(
    user: CurrentUser,
    state: web::Data<AppState>,
) -> Result<HttpResponse, AdminError> {
    let page = page(&state, &user, None, None).await?;
    Ok(render(StatusCode::OK, &page))
}

#[derive(serde::Deserialize, Default)]
#[serde(default)]
pub struct AccountForm {
    csrf: String,
    time_zone: String,
}

pub async fn save(
    user: CurrentUser,
    state: web::Data<AppState>,
    form: web::Form<AccountForm>,
) -> Result<HttpResponse, AdminError> {
    user.check_csrf(&form.csrf)?;
    let typed = form.time_zone.trim();
    let zone = match typed {
        "" => None,
        name => match name.parse::<chrono_tz::Tz>() {
            Ok(tz) => Some(tz),
            Err(_) => {
                let message = format!(
                    "'{name}' is not a time zone; use an IANA name such as Asia/Shanghai or Europe/Berlin"
                );
                let page = page(&state, &user, Some(name.to_owned()), Some(message)).await?;
                return Ok(render(StatusCode::UNPROCESSABLE_ENTITY, &page));
            }
        },
    };
    users::set_time_zone(&state.core.db, user.id, zone, &user.actor()).await?;
    user.flash(match zone {
        Some(tz) => format!("Times are shown in {} from now on", tz.name()),
        None => format!(
            "Times are shown in the server's time zone ({}) from now on",
            state.core.settings.timezone.name()
        ),
    });
    Ok(see_other("/admin/account"))
}
