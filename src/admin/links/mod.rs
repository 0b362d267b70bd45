//! The links pages: list with search and filters, create, disable and enable.

pub mod bulk;
pub mod form;
pub mod page;
pub mod selection;

use crate::admin::access::auth::CurrentUser;
use crate::admin::error::AdminError;
use crate::admin::pages::see_other;
use crate::admin::pages::{Frame, render};
use crate::db::entities::domain_conf;
use crate::db::entities::url_map::{self, LinkStatus};
use crate::i18n::{Message, Says};
use crate::rules::{ShortCode, Tag, TargetUrl};
use crate::services::domains;
use crate::services::links::listing::{self, LinkFilter, Order, Paging, StatusFilter};
use crate::services::links::{self, LinkChanges, LinkEdit, LinkError, NewLink};
use crate::state::AppState;
use actix_web::http::{StatusCode, header};
use actix_web::{HttpResponse, web};
use askama::Template;
use form::{Errors, LinkForm, campaign_edit, field_of, with_utm};
use std::collections::HashMap;

const PAGE_SIZE: u64 = 50;

/// The list's filter as its form and query string carry it; [`FilterForm::filter`] reads it.
#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(default)]
pub struct FilterForm {
    pub q: String,
    /// "active", "disabled", "expired", or anything else for all.
    pub status: String,
    /// A domain id, or empty for all.
    pub domain: String,
    pub creator: String,
    /// A tag, or empty for all.
    pub tag: String,
    /// "expiry" for soonest expiry first, "clicks" for most clicked first; newest first
    /// otherwise.
    pub sort: String,
}

impl FilterForm {
    pub fn filter(&self) -> LinkFilter {
        LinkFilter {
            text: listing::text(&self.q),
            status: StatusFilter::named(&self.status),
            domain_id: self.domain.trim().parse().ok(),
            creator: listing::text(&self.creator),
            by_expiry: self.sort == "expiry",
            by_clicks: self.sort == "clicks",
            tag: listing::text(&self.tag).and_then(|tag| Tag::parse(&tag).ok()),
        }
    }

    /// The filter as a query string, for links to further pages and to the export.
    pub fn query_string(&self) -> String {
        url::form_urlencoded::Serializer::new(String::new())
            .append_pair("q", self.q.trim())
            .append_pair("status", &self.status)
            .append_pair("domain", &self.domain)
            .append_pair("creator", self.creator.trim())
            .append_pair("tag", self.tag.trim())
            .append_pair("sort", &self.sort)
            .finish()
    }
}

#[derive(serde::Deserialize, Default)]
#[serde(default)]
pub struct ListQuery {
    #[serde(flatten)]
    filter: FilterForm,
    /// Newest first pages by keyset: links with a smaller id than this. Stays fast at any
    /// depth, unlike OFFSET.
    before: String,
    /// Soonest-expiry pages are numbered (that order is for the few links that expire).
    page: String,
}

pub struct Row {
    pub code: String,
    pub short_url: String,
    pub target: String,
    /// The target as people read it (percent-encoded text decoded).
    pub target_shown: String,
    pub description: String,
    pub active: bool,
    pub expired: bool,
    pub created: String,
    pub expires: String,
    /// Whether the signed-in person may disable or enable it (operators: their own links).
    pub changeable: bool,
    pub tags: Vec<String>,
    /// Page views today, over 7 days and in all.
    pub glance: crate::stats::report::Glance,
    /// The last 14 days as a small inline chart.
    pub spark: String,
}

pub struct DomainOption {
    pub id: String,
    pub host: String,
}

#[derive(Template)]
#[template(path = "admin/links.html")]
struct ListPage {
    frame: Frame,
    rows: Vec<Row>,
    filter: FilterForm,
    filtered: bool,
    domains: Vec<DomainOption>,
    /// Every tag in use, with its number of links.
    tags: Vec<(String, i64)>,
    /// How many links match the filter.
    total: u64,
    next: Option<String>,
    export: String,
}

pub async fn list(
    user: CurrentUser,
    state: web::Data<AppState>,
    query: web::Query<ListQuery>,
) -> Result<HttpResponse, AdminError> {
    let db = &state.core.db;
    let ListQuery {
        filter: form,
        before,
        page,
    } = query.into_inner();
    let filter = form.filter();
    let order = filter.page_order();
    let numbered = order != Order::Newest;
    let page_number = page
        .parse::<u64>()
        .unwrap_or(1)
        .clamp(1, listing::MAX_OFFSET / PAGE_SIZE);
    let paging = match numbered {
        true => Paging::Offset((page_number - 1) * PAGE_SIZE),
        false => Paging::Before(before.parse::<i64>().ok()),
    };
    let mut links = listing::list(db, &filter, order, paging, PAGE_SIZE + 1).await?;
    let more = links.len() as u64 > PAGE_SIZE;
    links.truncate(PAGE_SIZE as usize);
    let next = more.then(|| match numbered {
        true => format!("{}&page={}", form.query_string(), page_number + 1),
        false => format!(
            "{}&before={}",
            form.query_string(),
            links.last().map_or(0, |link| link.id)
        ),
    });
    let all = domains::list(db).await?;
    let tz = user.tz;
    let options = all
        .iter()
        .map(|d| DomainOption {
            id: d.id.to_string(),
            host: d.host.clone(),
        })
        .collect();
    let by_id: HashMap<i64, domain_conf::Model> = all.into_iter().map(|d| (d.id, d)).collect();
    let now = crate::db::now();
    let actor = user.actor();
    let ids: Vec<i64> = links.iter().map(|link| link.id).collect();
    let mut tags_of = crate::services::tags::tags_of(db, &ids).await?;
    let mut glances = crate::stats::report::glance(db, &ids, crate::stats::days::today(tz)).await?;
    let rows = links
        .into_iter()
        .map(|link| Row {
            glance: glances.remove(&link.id).unwrap_or_default(),
            spark: String::new(),
            tags: tags_of.remove(&link.id).unwrap_or_default(),
            changeable: links::may_change(&actor, &link).is_ok(),
            short_url: domains::effective(&by_id, link.domain_id)
                .map(|domain| domains::short_url(domain, &link.compression_code))
                .unwrap_or_default(),
            target_shown: TargetUrl::readable(&link.long_url),
            target: link.long_url,
            description: link.description.unwrap_or_default(),
            active: link.url_status == LinkStatus::Active,
            expired: link.expires_at.is_some_and(|at| at <= now),
            created: crate::admin::pages::human_time(link.created_at, tz),
            expires: link
                .expires_at
                .map(|at| crate::admin::pages::human_time(at, tz))
                .unwrap_or_default(),
            code: link.compression_code.to_string(),
        })
        .map(|mut row: Row| {
            row.spark = crate::charts::sparkline(&row.glance.last14, &row.short_url, user.lang);
            row
        })
        .collect();
    let mut frame = Frame::new(&user, user.take_flash(), "links");
    frame.undo = user.take_undo();
    frame.copy = user.take_copy();
    let page = ListPage {
        frame,
        rows,
        export: form.query_string(),
        filtered: filter.narrows(),
        total: listing::count(db, &filter).await?,
        tags: crate::services::tags::list(db).await?,
        filter: form,
        domains: options,
        next,
    };
    Ok(render(StatusCode::OK, &page))
}

#[derive(Template)]
#[template(path = "admin/link_form.html")]
struct FormPage {
    frame: Frame,
    form: LinkForm,
    domains: Vec<String>,
    errors: HashMap<&'static str, Message>,
    timezone: String,
    lengths: Vec<u8>,
    password_set: bool,
    /// The tags in use, offered as the field is typed.
    known_tags: Vec<String>,
}

impl FormPage {
    fn error(&self, field: &str) -> Option<&Message> {
        self.errors.get(field)
    }

    /// The campaign settings start folded, unless one is set or refused.
    fn campaign_open(&self) -> bool {
        self.password_set
            || self.form.campaign_set()
            || CAMPAIGN_FIELDS
                .iter()
                .any(|field| self.error(field).is_some())
    }
}

async fn form_page(
    state: &AppState,
    user: &CurrentUser,
    form: LinkForm,
    errors: HashMap<&'static str, Message>,
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
        timezone: user.tz.name().to_owned(),
        lengths: (4..=12).collect(),
        password_set: false,
        known_tags: known_tags(state).await?,
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
        length: state.core.settings.code_length.to_string(),
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
    let mut form = form.into_inner();
    form.settle();
    let mut errors = Errors::new();
    let new = match form.read(&state, user.tz).await? {
        Ok(new) => {
            let target =
                with_utm(&state, new.target.clone(), &form, &new.tags, &mut errors).await?;
            target.map(|target| NewLink { target, ..new })
        }
        Err(found) => {
            errors = found;
            None
        }
    };
    if let Some(new) = new {
        match links::create(&state.core, new, &user.actor()).await {
            Ok(saved) => {
                user.flash(Message::new(t!("Created {}")).data("", saved.short_url()));
                user.offer_copy(&saved.short_url());
                return Ok(see_other("/admin/links"));
            }
            Err(err) => {
                let (field, message) = field_of(err)?;
                errors.insert(field, message);
            }
        }
    }
    let page = form_page(&state, &user, form, errors).await?;
    Ok(render(StatusCode::UNPROCESSABLE_ENTITY, &page))
}

/// The link behind a path segment, with the URL it is shown under now.
pub async fn find(state: &AppState, code: &str) -> Result<(url_map::Model, String), AdminError> {
    let code = ShortCode::parse(code).map_err(|_| AdminError::NotFound)?;
    let link = links::find_by_code(&state.core.db, &code)
        .await?
        .ok_or(AdminError::NotFound)?;
    let all = domains::by_id(&state.core.db).await?;
    let short_url = domains::effective(&all, link.domain_id)
        .map(|domain| domains::short_url(domain, &link.compression_code))
        .unwrap_or_default();
    Ok((link, short_url))
}

#[derive(Template)]
#[template(path = "admin/link_edit.html")]
struct EditPage {
    frame: Frame,
    code: String,
    short_url: String,
    version: i32,
    form: LinkForm,
    errors: HashMap<&'static str, Message>,
    creator: String,
    created: String,
    timezone: String,
    /// No code length on the edit form: the code stays.
    lengths: Vec<u8>,
    password_set: bool,
    known_tags: Vec<String>,
}

impl EditPage {
    fn error(&self, field: &str) -> Option<&Message> {
        self.errors.get(field)
    }

    /// The campaign settings start folded, unless one is set or refused.
    fn campaign_open(&self) -> bool {
        self.password_set
            || self.form.campaign_set()
            || CAMPAIGN_FIELDS
                .iter()
                .any(|field| self.error(field).is_some())
    }
}

/// The fields of the folded campaign settings.
const CAMPAIGN_FIELDS: [&str; 7] = [
    "length",
    "password",
    "max_visits",
    "valid_from",
    "fallback_url",
    "in_app_page",
    "targets",
];

/// The tags in use, for the tags field's suggestions.
async fn known_tags(state: &AppState) -> Result<Vec<String>, AdminError> {
    Ok(crate::services::tags::suggestions(&state.core.db).await?)
}

fn edit_page(
    user: &CurrentUser,
    link: &url_map::Model,
    short_url: String,
    form: LinkForm,
    errors: HashMap<&'static str, Message>,
    tz: chrono_tz::Tz,
    known_tags: Vec<String>,
) -> EditPage {
    EditPage {
        frame: Frame::new(user, user.take_flash(), "links"),
        code: link.compression_code.to_string(),
        short_url,
        version: link.version,
        form,
        errors,
        creator: link.creator.clone().unwrap_or_default(),
        timezone: tz.name().to_owned(),
        created: crate::admin::pages::human_time(link.created_at, tz),
        lengths: Vec::new(),
        password_set: link.password_hash.is_some(),
        known_tags,
    }
}

pub async fn edit_form(
    user: CurrentUser,
    state: web::Data<AppState>,
    code: web::Path<String>,
) -> Result<HttpResponse, AdminError> {
    let (link, short_url) = find(&state, &code).await?;
    let form = LinkForm {
        url: TargetUrl::readable(&link.long_url),
        description: link.description.clone().unwrap_or_default(),
        expires: link
            .expires_at
            .map(|at| crate::admin::pages::input_time(at, user.tz))
            .unwrap_or_default(),
        redirect_status: link
            .redirect_status
            .map(|s| s.to_string())
            .unwrap_or_default(),
        tags: crate::services::tags::tags_of(&state.core.db, &[link.id])
            .await?
            .remove(&link.id)
            .unwrap_or_default()
            .join(", "),
        max_visits: link.max_visits.map(|n| n.to_string()).unwrap_or_default(),
        valid_from: link
            .valid_from
            .map(|at| crate::admin::pages::input_time(at, user.tz))
            .unwrap_or_default(),
        fallback_url: link.fallback_url.clone().unwrap_or_default(),
        in_app_page: link.in_app_page.clone().unwrap_or_default(),
        targets: link.alt_targets.clone().unwrap_or_default(),
        ..LinkForm::default()
    };
    let tags = known_tags(&state).await?;
    let page = edit_page(&user, &link, short_url, form, HashMap::new(), user.tz, tags);
    Ok(render(StatusCode::OK, &page))
}

#[derive(serde::Deserialize)]
pub struct EditForm {
    #[serde(flatten)]
    fields: LinkForm,
    #[serde(default)]
    version: i32,
}

pub async fn update(
    user: CurrentUser,
    state: web::Data<AppState>,
    code: web::Path<String>,
    form: web::Form<EditForm>,
) -> Result<HttpResponse, AdminError> {
    user.check_csrf(&form.fields.csrf)?;
    let (link, short_url) = find(&state, &code).await?;
    let EditForm {
        mut fields,
        version,
    } = form.into_inner();
    fields.settle();
    let mut errors = Errors::new();
    match fields.read(&state, user.tz).await? {
        Err(found) => errors = found,
        Ok(new) => {
            let edit = LinkEdit {
                campaign: campaign_edit(&fields, new.campaign, &link),
                changes: Some(LinkChanges {
                    target: new.target,
                    description: new.description,
                    expires_at: new.expires_at,
                    redirect_status: new.redirect_status,
                }),
                tags: Some(new.tags),
                ..LinkEdit::default()
            };
            let code = &link.compression_code;
            match links::edit(&state.core, code, Some(version), edit, &user.actor()).await {
                Ok(_) => {
                    user.flash(Message::new(t!("Saved {short_url}")).data("short_url", &short_url));
                    return Ok(see_other("/admin/links"));
                }
                Err(err @ LinkError::Stale(_)) => {
                    errors.insert("form", err.says());
                }
                Err(err) => {
                    let (field, message) = field_of(err)?;
                    errors.insert(field, message);
                }
            }
        }
    }
    let tags = known_tags(&state).await?;
    let page = edit_page(&user, &link, short_url, fields, errors, user.tz, tags);
    Ok(render(StatusCode::UNPROCESSABLE_ENTITY, &page))
}

#[derive(Template)]
#[template(path = "admin/link_delete.html")]
struct DeletePage {
    frame: Frame,
    code: String,
    short_url: String,
    target: String,
}

pub async fn delete_form(
    user: CurrentUser,
    state: web::Data<AppState>,
    code: web::Path<String>,
) -> Result<HttpResponse, AdminError> {
    let (link, short_url) = find(&state, &code).await?;
    let page = DeletePage {
        frame: Frame::new(&user, None, "links"),
        code: link.compression_code.to_string(),
        short_url,
        target: TargetUrl::readable(&link.long_url),
    };
    Ok(render(StatusCode::OK, &page))
}

pub async fn delete(
    user: CurrentUser,
    state: web::Data<AppState>,
    code: web::Path<String>,
    form: web::Form<StatusForm>,
) -> Result<HttpResponse, AdminError> {
    user.check_csrf(&form.csrf)?;
    let code = ShortCode::parse(&code).map_err(|_| AdminError::NotFound)?;
    links::delete(&state.core, &code, &user.actor()).await?;
    user.flash(Message::new(t!("Deleted {code}")).data("code", &code));
    Ok(see_other("/admin/links"))
}

#[derive(serde::Deserialize)]
pub struct QrQuery {
    /// Pixels per QR module in the PNG.
    scale: Option<u32>,
}

pub async fn qr_svg(
    _user: CurrentUser,
    state: web::Data<AppState>,
    code: web::Path<String>,
) -> Result<HttpResponse, AdminError> {
    let (_, short_url) = find(&state, &code).await?;
    let svg = crate::admin::qr::svg(&short_url).ok_or(AdminError::NotFound)?;
    Ok(HttpResponse::Ok().content_type("image/svg+xml").body(svg))
}

pub async fn qr_png(
    _user: CurrentUser,
    state: web::Data<AppState>,
    code: web::Path<String>,
    query: web::Query<QrQuery>,
) -> Result<HttpResponse, AdminError> {
    let (link, short_url) = find(&state, &code).await?;
    let scale = query.scale.map(|scale| scale.clamp(1, 40));
    let png = crate::admin::qr::png(&short_url, scale).ok_or(AdminError::NotFound)?;
    Ok(HttpResponse::Ok()
        .content_type("image/png")
        .insert_header((
            header::CONTENT_DISPOSITION,
            format!(
                "attachment; filename=\"inklink-{}.png\"",
                link.compression_code
            ),
        ))
        .body(png))
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
    links::set_status(&state.core, &code, status, &user.actor()).await?;
    let text = match status {
        LinkStatus::Active => t!("Enabled {}"),
        LinkStatus::Disabled => t!("Disabled {}"),
    };
    user.flash(Message::new(text).data("", &code));
    if status == LinkStatus::Disabled {
        user.offer_undo(code.as_str());
    }
    Ok(see_other("/admin/links"))
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
