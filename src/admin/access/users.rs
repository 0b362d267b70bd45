//! The users page (admins only): add people, disable or enable them, reset passwords, change
//! roles.

use crate::admin::access::auth::AdminUser;
use crate::admin::error::AdminError;
use crate::admin::pages::see_other;
use crate::admin::pages::{Frame, render};
use crate::i18n::{Message, Says};
use crate::rules::{Password, Role, Username};
use crate::services::users::{self, UserChange, UserChangeError, UserError};
use crate::state::AppState;
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use askama::Template;

pub struct Row {
    pub id: i64,
    pub name: String,
    pub is_admin: bool,
    pub disabled: bool,
    pub last_login: Message,
    pub is_me: bool,
    /// Signs in with a second factor (an admin may reset it).
    pub two_factor: bool,
    pub display_name: Option<String>,
    /// The single sign-on provider's subject for them, when linked.
    pub subject: Option<String>,
}

#[derive(Template)]
#[template(path = "admin/users.html")]
struct UsersPage {
    frame: Frame,
    /// Single sign-on is set up: users can be linked to the provider's subjects.
    sso: bool,
    rows: Vec<Row>,
    error: Option<crate::i18n::Message>,
    new_name: String,
}

async fn page(
    state: &AppState,
    user: &AdminUser,
    error: Option<crate::i18n::Message>,
    new_name: String,
) -> Result<UsersPage, AdminError> {
    let mut subjects = match &state.core.sso {
        Some(provider) => crate::services::sso::subjects(&state.core, &provider.issuer).await?,
        None => Default::default(),
    };
    let rows = users::list(&state.core.db)
        .await?
        .into_iter()
        .map(|u| Row {
            subject: subjects.remove(&u.id),
            is_me: u.id == user.0.id,
            id: u.id,
            is_admin: u.role == Role::Admin,
            disabled: u.disabled,
            two_factor: u.has_second_factor(),
            display_name: u.display_name.clone(),
            last_login: u
                .last_login_at
                .map(|at| Message::plain(crate::admin::pages::human_time(at, user.0.tz)))
                .unwrap_or_else(|| Message::new(t!("never"))),
            name: u.username,
        })
        .collect();
    let flash = if error.is_none() {
        user.0.take_flash()
    } else {
        None
    };
    Ok(UsersPage {
        frame: Frame::new(&user.0, flash, "users"),
        sso: state.core.sso.is_some(),
        rows,
        error,
        new_name,
    })
}

pub async fn list(user: AdminUser, state: web::Data<AppState>) -> Result<HttpResponse, AdminError> {
    let page = page(&state, &user, None, String::new()).await?;
    Ok(render(StatusCode::OK, &page))
}

#[derive(serde::Deserialize, Default)]
#[serde(default)]
pub struct AddForm {
    csrf: String,
    name: String,
    password: String,
    role: String,
}

pub async fn add(
    user: AdminUser,
    state: web::Data<AppState>,
    form: web::Form<AddForm>,
) -> Result<HttpResponse, AdminError> {
    user.0.check_csrf(&form.csrf)?;
    let parsed = Username::parse(&form.name)
        .and_then(|name| Password::parse(&form.password).map(|password| (name, password)))
        .map_err(|err| err.says())
        .and_then(|(name, password)| {
            form.role
                .parse::<Role>()
                .map(|role| (name, password, role))
                .map_err(|err| err.says())
        });
    let outcome = match parsed {
        Err(message) => Err(message),
        Ok((name, password, role)) => {
            match users::add(&state.core.db, &name, &password, role, &user.0.actor()).await {
                Ok(added) => Ok(added),
                Err(UserError::Db(err)) => return Err(AdminError::Db(err)),
                Err(other) => Err(other.says()),
            }
        }
    };
    match outcome {
        Ok(added) => {
            user.0.flash(
                Message::new(t!("Added {} ({})"))
                    .data("", &added.username)
                    .word("", added.role.words()),
            );
            Ok(see_other("/admin/users"))
        }
        Err(message) => {
            let page = page(&state, &user, Some(message), form.name.clone()).await?;
            Ok(render(StatusCode::UNPROCESSABLE_ENTITY, &page))
        }
    }
}

#[derive(serde::Deserialize, Default)]
#[serde(default)]
pub struct ChangeForm {
    csrf: String,
    role: String,
    password: String,
    /// Disabling asks first.
    confirm: String,
    /// The single sign-on subject to link them to.
    subject: String,
}

pub async fn change(
    user: AdminUser,
    state: web::Data<AppState>,
    path: web::Path<(i64, String)>,
    form: web::Form<ChangeForm>,
) -> Result<HttpResponse, AdminError> {
    user.0.check_csrf(&form.csrf)?;
    let (id, action) = path.into_inner();
    if action == "sso" {
        let target = users::by_id(&state.core.db, id)
            .await?
            .ok_or(AdminError::NotFound)?;
        let name = Username::parse(&target.username).map_err(|_| AdminError::NotFound)?;
        let linked = crate::services::sso::link(
            &state.core,
            state.core.sso.as_ref(),
            &name,
            &form.subject,
            &user.0.actor(),
        )
        .await;
        return match linked {
            Ok(()) => {
                user.0.flash(
                    Message::new(t!("{name} signs in through single sign-on as {subject}"))
                        .data("name", name)
                        .data("subject", form.subject.trim()),
                );
                Ok(see_other("/admin/users"))
            }
            Err(crate::services::sso::LinkError::Db(err)) => Err(err.into()),
            Err(err) => {
                let page = page(&state, &user, Some(err.says()), String::new()).await?;
                Ok(render(StatusCode::UNPROCESSABLE_ENTITY, &page))
            }
        };
    }
    if action == "disable" && form.confirm != "yes" {
        let target = users::by_id(&state.core.db, id)
            .await?
            .ok_or(AdminError::NotFound)?;
        return Ok(crate::admin::pages::Confirm {
            frame: Frame::new(&user.0, None, "users"),
            heading: Message::new(t!("Disable {}?")).data("", &target.username),
            lines: vec![
                Message::new(t!(
                    "{} is signed out everywhere at once and cannot sign in until enabled again. Their links keep working."
                ))
                .data("", &target.username),
            ],
            action: format!("/admin/users/{id}/disable"),
            fields: Vec::new(),
            button: Message::new(t!("Disable {}")).data("", &target.username),
            back: "/admin/users",
            listing: Vec::new(),
        }
        .page());
    }
    let change = match action.as_str() {
        "disable" => Ok(UserChange::Disable),
        "enable" => Ok(UserChange::Enable),
        "role" => form
            .role
            .parse::<Role>()
            .map(UserChange::Role)
            .map_err(|err| err.says()),
        "password" => Password::parse(&form.password)
            .map(UserChange::Password)
            .map_err(|err| err.says()),
        _ => return Err(AdminError::NotFound),
    };
    let result = match change {
        Err(message) => Err(message),
        Ok(change) => {
            match users::change(&state.core.db, id, change, Some(user.0.id), &user.0.actor()).await
            {
                Ok(changed) => Ok(changed),
                Err(UserChangeError::NotFound) => return Err(AdminError::NotFound),
                Err(UserChangeError::Db(err)) => return Err(AdminError::Db(err)),
                Err(other) => Err(other.says()),
            }
        }
    };
    match result {
        Ok(changed) => {
            let name = &changed.username;
            let text = match action.as_str() {
                "disable" => t!("Disabled the user {name}"),
                "enable" => t!("Enabled the user {name}"),
                "role" => t!("{name} has a new role"),
                _ => t!("{name} has a new password"),
            };
            user.0.flash(Message::new(text).data("name", name));
            Ok(see_other("/admin/users"))
        }
        Err(message) => {
            let page = page(&state, &user, Some(message), String::new()).await?;
            Ok(render(StatusCode::UNPROCESSABLE_ENTITY, &page))
        }
    }
}
