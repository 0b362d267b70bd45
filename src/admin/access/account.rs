//! The signed-in person's own settings: the language of the pages and the time zone they show
//! times in.

use crate::admin::access::auth::CurrentUser;
use crate::admin::error::AdminError;
use crate::admin::pages::{Frame, render, see_other};
use crate::i18n::Message;
use crate::i18n::Says;
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
    /// `en`, `zh-CN`, or empty (the browser's).
    language: String,
    default_zone: String,
    zones: &'static [&'static str],
    error: Option<crate::i18n::Message>,
    display_name: String,
    /// What was wrong with the display name typed.
    name_error: Option<crate::i18n::Message>,
}

async fn page(
    state: &AppState,
    user: &CurrentUser,
    typed: Option<String>,
    error: Option<crate::i18n::Message>,
) -> Result<AccountPage, AdminError> {
    let row = users::by_id(&state.core.db, user.id).await?;
    let language = row
        .as_ref()
        .and_then(|u| u.language.clone())
        .unwrap_or_default();
    let display_name = row
        .as_ref()
        .and_then(|u| u.display_name.clone())
        .unwrap_or_default();
    let stored = row.and_then(|u| u.time_zone).unwrap_or_default();
    let flash = if error.is_none() {
        user.take_flash()
    } else {
        None
    };
    Ok(AccountPage {
        frame: Frame::new(user, flash, "account"),
        time_zone: typed.unwrap_or(stored),
        language,
        default_zone: state.core.settings.timezone.name().to_owned(),
        zones: COMMON_ZONES,
        error,
        display_name,
        name_error: None,
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
    language: String,
    display_name: String,
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
                let message = Message::new(t!(
                    "'{name}' is not a time zone; use an IANA name such as Asia/Shanghai or Europe/Berlin"
                ))
                .data("name", name);
                let page = page(&state, &user, Some(name.to_owned()), Some(message)).await?;
                return Ok(render(StatusCode::UNPROCESSABLE_ENTITY, &page));
            }
        },
    };
    let display_name = match crate::rules::DisplayName::parse(&form.display_name) {
        Ok(name) => name,
        Err(err) => {
            let mut page = page(&state, &user, Some(typed.to_owned()), None).await?;
            page.display_name = form.display_name.clone();
            page.name_error = Some(err.says());
            return Ok(render(StatusCode::UNPROCESSABLE_ENTITY, &page));
        }
    };
    users::set_preference(
        &state.core.db,
        user.id,
        users::Preference::DisplayName(display_name),
        &user.actor(),
    )
    .await?;
    let language = crate::i18n::Lang::from_tag(&form.language);
    users::set_preference(
        &state.core.db,
        user.id,
        users::Preference::TimeZone(zone),
        &user.actor(),
    )
    .await?;
    users::set_preference(
        &state.core.db,
        user.id,
        users::Preference::Language(language),
        &user.actor(),
    )
    .await?;
    user.flash(match zone {
        Some(tz) => Message::new(t!("Times are shown in {} from now on")).data("", tz.name()),
        None => Message::new(t!(
            "Times are shown in the server's time zone ({}) from now on"
        ))
        .data("", state.core.settings.timezone.name()),
    });
    let mut response = see_other("/admin/account");
    remember(&mut response, language)?;
    Ok(response)
}

/// The cookie follows the setting: pages that do not know who is looking (sign-in, visitor
/// pages) and requests before the session is read use it too.
fn remember(
    response: &mut HttpResponse,
    language: Option<crate::i18n::Lang>,
) -> Result<(), AdminError> {
    let cookie = match language {
        Some(lang) => lang.cookie(),
        None => {
            let mut spent = crate::i18n::Lang::En.cookie();
            spent.make_removal();
            spent
        }
    };
    response
        .add_cookie(&cookie)
        .map_err(|err| AdminError::Session(err.to_string()))
}

#[derive(serde::Deserialize, Default)]
#[serde(default)]
pub struct LanguageForm {
    csrf: String,
    lang: String,
}

/// The switch on every page: this person's pages in that language from now on, on every
/// device they sign in from.
pub async fn set_language(
    req: actix_web::HttpRequest,
    user: CurrentUser,
    state: web::Data<AppState>,
    form: web::Form<LanguageForm>,
) -> Result<HttpResponse, AdminError> {
    user.check_csrf(&form.csrf)?;
    let lang = crate::i18n::Lang::from_tag(&form.lang).ok_or_else(|| {
        AdminError::BadRequest(
            Message::new(t!("'{}' is not a language of inklink")).data("", &form.lang),
        )
    })?;
    users::set_preference(
        &state.core.db,
        user.id,
        users::Preference::Language(Some(lang)),
        &user.actor(),
    )
    .await?;
    let back = crate::i18n::Lang::back_to(&req, "/admin/links");
    let back = crate::admin::pages::local_next(&back).unwrap_or("/admin/links");
    let mut response = see_other(back);
    remember(&mut response, Some(lang))?;
    Ok(response)
}
