//! The links pages: list with search and filters, create, disable and enable.

use super::auth::CurrentUser;
use super::error::AdminError;
use super::pages::{Frame, render};
use crate::db::entities::domain_conf;
use crate::db::entities::url_map::{self, LinkStatus, Strategy};
use crate::rules::{DomainHost, RedirectStatus, ShortCode};
use crate::services::domains;
use crate::services::links::{self, LinkError, NewLink};
use crate::web::AppState;
use actix_web::http::{StatusCode, header};
use actix_web::{HttpResponse, web};
use askama::Template;
use chrono::NaiveDateTime;
use sea_orm::{ColumnTrait, Condition, EntityTrait, QueryFilter, QueryOrder, QuerySelect};
use std::collections::HashMap;

const PAGE_SIZE: u64 = 50;

#[derive(serde::Deserialize, Default)]
pub struct ListQuery {
    #[serde(default)]
    q: String,
    #[serde(default)]
    status: String,
    /// Keyset pagination: links with a smaller id than this (newest first). Stays fast at any
    /// depth, unlike OFFSET.
    before: Option<i64>,
}

pub struct Row {
    pub code: String,
    pub short_url: String,
    pub target: String,
    pub description: String,
    pub active: bool,
    pub expired: bool,
    pub created: String,
}

#[derive(Template)]
#[template(path = "admin/links.html")]
struct ListPage {
    frame: Frame,
    rows: Vec<Row>,
    q: String,
    status: String,
    next: Option<i64>,
}

pub async fn list(
    user: CurrentUser,
    state: web::Data<AppState>,
    query: web::Query<ListQuery>,
) -> Result<HttpResponse, AdminError> {
    let db = &state.core.db;
    let mut select = url_map::Entity::find().filter(url_map::Column::Deleted.eq(false));
    match query.status.as_str() {
        "active" => select = select.filter(url_map::Column::UrlStatus.eq(LinkStatus::Active)),
        "disabled" => select = select.filter(url_map::Column::UrlStatus.eq(LinkStatus::Disabled)),
        _ => {}
    }
    let q = query.q.trim();
    if !q.is_empty() {
        select = select.filter(
            Condition::any()
                .add(url_map::Column::CompressionCode.contains(q))
                .add(url_map::Column::LongUrl.contains(q))
                .add(url_map::Column::Description.contains(q)),
        );
    }
    if let Some(before) = query.before {
        select = select.filter(url_map::Column::Id.lt(before));
    }
    let mut links = select
        .order_by_desc(url_map::Column::Id)
        .limit(PAGE_SIZE + 1)
        .all(db)
        .await?;
    let next = (links.len() as u64 > PAGE_SIZE).then(|| {
        links.truncate(PAGE_SIZE as usize);
        links.last().map(|link| link.id)
    });
    let domains: HashMap<i64, domain_conf::Model> = domains::list(db)
        .await?
        .into_iter()
        .map(|domain| (domain.id, domain))
        .collect();
    let now = crate::db::now();
    let rows = links
        .into_iter()
        .map(|link| Row {
            short_url: domains::effective(&domains, link.domain_id)
                .map(|domain| domains::short_url(domain, &link.compression_code))
                .unwrap_or_default(),
            target: link.long_url,
            description: link.description.unwrap_or_default(),
            active: link.url_status == LinkStatus::Active,
            expired: link.expires_at.is_some_and(|at| at <= now),
            created: link.created_at.format("%Y-%m-%d %H:%M UTC").to_string(),
            code: link.compression_code,
        })
        .collect();
    let page = ListPage {
        frame: Frame::new(&user, user.take_flash(), "links"),
        rows,
        q: q.to_owned(),
        status: query.status.clone(),
        next: next.flatten(),
    };
    Ok(render(StatusCode::OK, &page))
}

#[derive(serde::Deserialize, Default, Clone)]
pub struct LinkForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    url: String,
    #[serde(default)]
    code: String,
    #[serde(default)]
    domain: String,
    #[serde(default)]
    description: String,
    /// `YYYY-MM-DDTHH:MM` from a datetime-local input, in UTC.
    #[serde(default)]
    expires: String,
    #[serde(default)]
    redirect_status: String,
}

#[derive(Template)]
#[template(path = "admin/link_form.html")]
struct FormPage {
    frame: Frame,
    form: LinkForm,
    domains: Vec<String>,
    errors: HashMap<&'static str, String>,
}

impl FormPage {
    fn error(&self, field: &str) -> &str {
        self.errors.get(field).map_or("", String::as_str)
    }
}

async fn form_page(
    state: &AppState,
    user: &CurrentUser,
    form: LinkForm,
    errors: HashMap<&'static str, String>,
) -> Result<FormPage, AdminError> {
    let domains = domains::list(&state.core.db)
        .await?
        .into_iter()
        .filter(|d| d.status == domain_conf::DomainStatus::Active)
        .map(|d| d.host)
        .collect();
    Ok(FormPage {
        frame: Frame::new(user, None, "links"),
        form,
        domains,
        errors,
    })
}

pub async fn new_form(
    user: CurrentUser,
    state: web::Data<AppState>,
) -> Result<HttpResponse, AdminError> {
    let default = domains::default_domain(&state.core.db).await?;
    let form = LinkForm {
        domain: default.map(|d| d.host).unwrap_or_default(),
        redirect_status: String::new(),
        ..LinkForm::default()
    };
    let page = form_page(&state, &user, form, HashMap::new()).await?;
    Ok(render(StatusCode::OK, &page))
}

pub async fn create(
    user: CurrentUser,
    state: web::Data<AppState>,
    form: web::Form<LinkForm>,
) -> Result<HttpResponse, AdminError> {
    user.check_csrf(&form.csrf)?;
    let form = form.into_inner();
    let mut errors: HashMap<&'static str, String> = HashMap::new();
    let target = match state.core.parse_target(&form.url).await? {
        Ok(target) => Some(target),
        Err(err) => {
            errors.insert("url", err.to_string());
            None
        }
    };
    let code = match form.code.trim() {
        "" => None,
        code => ShortCode::parse(code)
            .map_err(|err| errors.insert("code", err.to_string()))
            .ok(),
    };
    let domain = match form.domain.trim() {
        "" => None,
        host => DomainHost::parse(host)
            .map_err(|err| errors.insert("domain", err.to_string()))
            .ok(),
    };
    let expires_at = match form.expires.trim() {
        "" => None,
        text => NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M")
            .map(|at| at.and_utc())
            .map_err(|_| {
                errors.insert(
                    "expires",
                    "give a date and time such as 2026-12-31T23:59".into(),
                )
            })
            .ok(),
    };
    let redirect_status = match form.redirect_status.trim() {
        "" => None,
        text => text
            .parse::<RedirectStatus>()
            .map_err(|err| errors.insert("redirect_status", err.to_string()))
            .ok(),
    };
    if let (Some(target), true) = (target, errors.is_empty()) {
        let new = NewLink {
            custom_code: code,
            domain,
            description: Some(form.description.trim().to_owned()).filter(|d| !d.is_empty()),
            expires_at,
            redirect_status,
            strategy: Strategy::Sequence,
            reuse: false,
            ..NewLink::to(target)
        };
        match links::create(&state.core, new, &user.actor()).await {
            Ok(saved) => {
                state.resolver.forget(&saved.link.compression_code);
                user.flash(format!("Created {}", saved.short_url()));
                return Ok(HttpResponse::SeeOther()
                    .insert_header((header::LOCATION, "/admin/links"))
                    .finish());
            }
            Err(err) => {
                let field = match &err {
                    LinkError::CodeTaken(_) | LinkError::InvalidCode(_) => "code",
                    LinkError::UnknownDomain(_)
                    | LinkError::DomainDisabled(_)
                    | LinkError::NoDefaultDomain => "domain",
                    LinkError::ExpiryInPast(_) => "expires",
                    LinkError::DescriptionTooLong(_) => "description",
                    LinkError::Db(err) => return Err(AdminError::Db(err.clone())),
                    _ => "url",
                };
                errors.insert(field, err.to_string());
            }
        }
    }
    let page = form_page(&state, &user, form, errors).await?;
    Ok(render(StatusCode::UNPROCESSABLE_ENTITY, &page))
}

#[derive(serde::Deserialize)]
pub struct StatusForm {
    #[serde(default)]
    csrf: String,
}

async fn change_status(
    user: CurrentUser,
    state: web::Data<AppState>,
    code: &str,
    csrf: &str,
    status: LinkStatus,
) -> Result<HttpResponse, AdminError> {
    user.check_csrf(csrf)?;
    let code = ShortCode::parse(code).map_err(|_| AdminError::NotFound)?;
    match links::set_status(&state.core.db, &code, status, &user.actor()).await {
        Ok(_) => {}
        Err(LinkError::NotFound(_)) => return Err(AdminError::NotFound),
        Err(LinkError::Db(err)) => return Err(AdminError::Db(err)),
        Err(other) => return Err(AdminError::Session(other.to_string())),
    }
    // At once on this instance; elsewhere within the cache TTL.
    state.resolver.forget(code.as_str());
    let verb = match status {
        LinkStatus::Active => "Enabled",
        LinkStatus::Disabled => "Disabled",
    };
    user.flash(format!("{verb} {code}"));
    Ok(HttpResponse::SeeOther()
        .insert_header((header::LOCATION, "/admin/links"))
        .finish())
}

pub async fn disable(
    user: CurrentUser,
    state: web::Data<AppState>,
    code: web::Path<String>,
    form: web::Form<StatusForm>,
) -> Result<HttpResponse, AdminError> {
    change_status(user, state, &code, &form.csrf, LinkStatus::Disabled).await
}

pub async fn enable(
    user: CurrentUser,
    state: web::Data<AppState>,
    code: web::Path<String>,
    form: web::Form<StatusForm>,
) -> Result<HttpResponse, AdminError> {
    change_status(user, state, &code, &form.csrf, LinkStatus::Active).await
}
