//! The API keys page (admins only): create a key (its secret is shown once), see when each was
//! last used, revoke.

use crate::admin::access::auth::AdminUser;
use crate::admin::error::AdminError;
use crate::admin::pages::{Frame, render, see_other};
use crate::i18n::{Message, Says, Text};
use crate::rules::time::{self, DateAlone};
use crate::rules::{KeyName, Role};
use crate::services::api_keys::{self, KeyError};
use crate::state::AppState;
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use askama::Template;

pub struct Row {
    pub id: i64,
    pub name: String,
    pub prefix: String,
    pub role: Text,
    pub created: String,
    pub expires: Message,
    pub last_used: Message,
    /// "active", "expired" or "revoked", and its words.
    pub state: &'static str,
    pub state_words: Text,
}

#[derive(Template)]
#[template(path = "admin/keys.html")]
struct KeysPage {
    frame: Frame,
    rows: Vec<Row>,
    error: Option<crate::i18n::Message>,
    new_name: String,
    /// The secret of the key just created: shown on this response only.
    secret: Option<(String, String)>,
    timezone: String,
}

async fn page(
    state: &AppState,
    user: &AdminUser,
    error: Option<crate::i18n::Message>,
    new_name: String,
    secret: Option<(String, String)>,
) -> Result<KeysPage, AdminError> {
    let tz = user.0.tz;
    let now = crate::db::now();
    let rows = api_keys::list(&state.core.db)
        .await?
        .into_iter()
        .map(|k| {
            let state = if k.revoked {
                ("revoked", t!("revoked"))
            } else if k.expires_at.is_some_and(|at| at <= now) {
                ("expired", t!("expired"))
            } else {
                ("active", t!("active"))
            };
            Row {
                id: k.id,
                state: state.0,
                state_words: state.1,
                prefix: format!("ik_{}_…", k.prefix),
                role: k.role.words(),
                created: crate::admin::pages::human_time(k.created_at, tz),
                expires: k
                    .expires_at
                    .map(|at| Message::plain(crate::admin::pages::human_time(at, tz)))
                    .unwrap_or_else(|| Message::new(t!("never"))),
                last_used: k
                    .last_used_at
                    .map(|at| Message::plain(crate::admin::pages::human_time(at, tz)))
                    .unwrap_or_else(|| Message::new(t!("never"))),
                name: k.name,
            }
        })
        .collect();
    let flash = if error.is_none() && secret.is_none() {
        user.0.take_flash()
    } else {
        None
    };
    Ok(KeysPage {
        frame: Frame::new(&user.0, flash, "keys"),
        rows,
        error,
        new_name,
        secret,
        timezone: tz.name().to_owned(),
    })
}

pub async fn list(user: AdminUser, state: web::Data<AppState>) -> Result<HttpResponse, AdminError> {
    let page = page(&state, &user, None, String::new(), None).await?;
    Ok(render(StatusCode::OK, &page))
}

#[derive(serde::Deserialize, Default)]
#[serde(default)]
pub struct AddForm {
    csrf: String,
    name: String,
    role: String,
    expires: String,
}

pub async fn add(
    user: AdminUser,
    state: web::Data<AppState>,
    form: web::Form<AddForm>,
) -> Result<HttpResponse, AdminError> {
    user.0.check_csrf(&form.csrf)?;
    let tz = user.0.tz;
    let parsed = KeyName::parse(&form.name)
        .map_err(|err| err.says())
        .and_then(|name| {
            form.role
                .parse::<Role>()
                .map(|role| (name, role))
                .map_err(|err| err.says())
        })
        .and_then(|(name, role)| match form.expires.trim() {
            "" => Ok((name, role, None)),
            text => time::parse(text, tz, DateAlone::Ends)
                .map(|at| (name, role, Some(at)))
                .map_err(|err| err.says()),
        });
    let outcome = match parsed {
        Err(message) => Err(message),
        Ok((name, role, expires)) => {
            match api_keys::create(&state.core.db, &name, role, expires, &user.0.actor()).await {
                Ok(issued) => Ok(issued),
                Err(KeyError::Db(err)) => return Err(AdminError::Db(err)),
                Err(other) => Err(other.says()),
            }
        }
    };
    match outcome {
        Ok(issued) => {
            let secret = Some((issued.key.name.clone(), issued.token.as_str().to_owned()));
            let page = page(&state, &user, None, String::new(), secret).await?;
            // The secret is in this page only: nothing may keep a copy of it.
            let mut response = render(StatusCode::OK, &page);
            response.headers_mut().insert(
                actix_web::http::header::CACHE_CONTROL,
                actix_web::http::header::HeaderValue::from_static("no-store"),
            );
            Ok(response)
        }
        Err(message) => {
            let page = page(&state, &user, Some(message), form.name.clone(), None).await?;
            Ok(render(StatusCode::UNPROCESSABLE_ENTITY, &page))
        }
    }
}

#[derive(serde::Deserialize, Default)]
#[serde(default)]
pub struct RevokeForm {
    csrf: String,
    /// Revoking asks first.
    confirm: String,
}

pub async fn revoke(
    user: AdminUser,
    state: web::Data<AppState>,
    id: web::Path<i64>,
    form: web::Form<RevokeForm>,
) -> Result<HttpResponse, AdminError> {
    user.0.check_csrf(&form.csrf)?;
    if form.confirm != "yes" {
        let key = api_keys::list(&state.core.db)
            .await?
            .into_iter()
            .find(|key| key.id == *id)
            .ok_or(AdminError::NotFound)?;
        return Ok(crate::admin::pages::Confirm {
            frame: Frame::new(&user.0, None, "keys"),
            heading: Message::new(t!("Revoke the key {}?")).data("", &key.name),
            lines: vec![Message::new(t!(
                "Every request with this key is refused from then on, by every instance. A revoked key cannot be restored; the system that uses it needs a new one."
            ))],
            action: format!("/admin/keys/{id}/revoke"),
            fields: Vec::new(),
            button: Message::new(t!("Revoke {}")).data("", &key.name),
            back: "/admin/keys",
            listing: Vec::new(),
        }
        .page());
    }
    match api_keys::revoke(&state.core.db, *id, &user.0.actor()).await {
        Ok(key) => {
            user.0
                .flash(Message::new(t!("Revoked the key {}")).data("", &key.name));
            Ok(see_other("/admin/keys"))
        }
        Err(KeyError::NotFound) => Err(AdminError::NotFound),
        Err(KeyError::Db(err)) => Err(AdminError::Db(err)),
        Err(other) => Err(AdminError::Refused(other.says())),
    }
}
