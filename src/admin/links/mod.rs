//! The links pages: list with search and filters, create, disable and enable.

pub mod bulk;
pub mod page;
pub mod qr;
pub mod selection;

use crate::admin::access::auth::CurrentUser;
use crate::admin::error::AdminError;
use crate::admin::pages::see_other;
use crate::admin::pages::{Frame, render};
use crate::db::entities::domain_conf;
use crate::db::entities::url_map::{self, LinkStatus, Strategy};
use crate::rules::{
    AltTargets, CodeLength, DomainHost, InAppApps, LinkPassword, RedirectStatus, ShortCode, Tag,
    TargetUrl, VisitLimit,
};
use crate::services::domains;
use crate::services::links::listing::{self, LinkFilter, Order, Paging, StatusFilter};
use crate::services::links::{self, Campaign, LinkChanges, LinkEdit, LinkError, NewLink};
use crate::services::tags::Utm;
use crate::state::AppState;
use actix_web::http::{StatusCode, header};
use actix_web::{HttpResponse, web};
use askama::Template;
use chrono::{DateTime, NaiveDateTime, Utc};
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
            status: match self.status.as_str() {
                "active" => Some(StatusFilter::Active),
                "disabled" => Some(StatusFilter::Disabled),
                "expired" => Some(StatusFilter::Expired),
                _ => None,
            },
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
pub struct ListQuery {
    #[serde(flatten)]
    filter: FilterForm,
    /// Newest first pages by keyset: links with a smaller id than this. Stays fast at any
    /// depth, unlike OFFSET.
    #[serde(default)]
    before: String,
    /// Soonest-expiry pages are numbered (that order is for the few links that expire).
    #[serde(default)]
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
    /// Tags separated by commas.
    #[serde(default)]
    tags: String,
    /// Campaign settings (the new-link form only).
    #[serde(default)]
    length: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    max_visits: String,
    #[serde(default)]
    valid_from: String,
    #[serde(default)]
    fallback_url: String,
    #[serde(default)]
    in_app_page: String,
    #[serde(default)]
    targets: String,
    #[serde(default)]
    utm_source: String,
    #[serde(default)]
    utm_medium: String,
    #[serde(default)]
    utm_campaign: String,
    #[serde(default)]
    utm_term: String,
    #[serde(default)]
    utm_content: String,
    /// The edit form: remove the visitor password.
    #[serde(default)]
    remove_password: String,
}

#[derive(Template)]
#[template(path = "admin/link_form.html")]
struct FormPage {
    frame: Frame,
    form: LinkForm,
    domains: Vec<String>,
    errors: HashMap<&'static str, String>,
    timezone: String,
    lengths: Vec<u8>,
    password_set: bool,
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
        timezone: user.tz.name().to_owned(),
        lengths: (4..=12).collect(),
        password_set: false,
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

/// The fields create and edit share, read into domain types; each mistake is kept per field.
struct Parsed {
    target: Option<TargetUrl>,
    tags: Vec<Tag>,
    description: Option<String>,
    expires_at: Option<DateTime<Utc>>,
    redirect_status: Option<RedirectStatus>,
    errors: HashMap<&'static str, String>,
}

async fn parse_common(
    state: &AppState,
    form: &LinkForm,
    tz: chrono_tz::Tz,
) -> Result<Parsed, AdminError> {
    let mut errors: HashMap<&'static str, String> = HashMap::new();
    let typed = TargetUrl::with_default_scheme(&form.url);
    let target = match links::parse_target(&state.core, &typed).await {
        Ok(target) => Some(target),
        Err(LinkError::Db(err)) => return Err(err.into()),
        Err(err) => {
            errors.insert("url", err.to_string());
            None
        }
    };
    let expires_at = match form.expires.trim() {
        "" => None,
        text => NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M")
            .map_err(|_| "give a date and time such as 2026-12-31T23:59".to_owned())
            .and_then(|local| crate::services::links::bulk::local_to_utc(local, tz))
            .map_err(|message| errors.insert("expires", message))
            .ok(),
    };
    let redirect_status = match form.redirect_status.trim() {
        "" => None,
        text => text
            .parse::<RedirectStatus>()
            .map_err(|err| errors.insert("redirect_status", err.to_string()))
            .ok(),
    };
    let tags = Tag::parse_list(&form.tags)
        .map_err(|err| errors.insert("tags", err.to_string()))
        .unwrap_or_default();
    Ok(Parsed {
        target,
        tags,
        description: Some(form.description.trim().to_owned()).filter(|d| !d.is_empty()),
        expires_at,
        redirect_status,
        errors,
    })
}

/// The edit form's campaign fields as a change of what differs from `link`: an emptied field
/// removes the setting; the password stays unless a new one is typed or its removal ticked.
fn campaign_edit(
    form: &LinkForm,
    campaign: Campaign,
    link: &url_map::Model,
) -> links::CampaignEdit {
    let changed = |now: Option<String>, stored: &Option<String>| now != *stored;
    links::CampaignEdit {
        password: match (form.remove_password == "yes", campaign.password) {
            (true, _) if link.password_hash.is_some() => Some(None),
            (_, Some(password)) => Some(Some(password)),
            _ => None,
        },
        max_visits: (campaign.max_visits.map(VisitLimit::get) != link.max_visits)
            .then_some(campaign.max_visits),
        valid_from: (campaign.valid_from.map(crate::db::to_stored) != link.valid_from)
            .then_some(campaign.valid_from),
        fallback: changed(
            campaign.fallback.as_ref().map(ToString::to_string),
            &link.fallback_url,
        )
        .then_some(campaign.fallback),
        in_app: changed(
            campaign.in_app.map(|apps| apps.to_string()),
            &link.in_app_page,
        )
        .then_some(campaign.in_app),
        targets: changed(campaign.targets.to_stored(), &link.alt_targets)
            .then_some(campaign.targets),
    }
}

/// The UTM builder: the parameters filled in are written into the target URL (replacing a
/// value the URL already has for the same parameter). When none is filled in, the preset of
/// the first of the link's tags that has one applies.
async fn with_utm(
    state: &AppState,
    target: TargetUrl,
    form: &LinkForm,
    tags: &[Tag],
    errors: &mut HashMap<&'static str, String>,
) -> Result<Option<TargetUrl>, AdminError> {
    let typed = Utm {
        source: form.utm_source.clone(),
        medium: form.utm_medium.clone(),
        campaign: form.utm_campaign.clone(),
        term: form.utm_term.clone(),
        content: form.utm_content.clone(),
    };
    let utm = match typed.is_empty() {
        false => typed,
        true => match crate::services::tags::preset_for(&state.core.db, tags).await? {
            Some(preset) => preset,
            None => return Ok(Some(target)),
        },
    };
    let pairs = utm.pairs();
    let mut url = url::Url::parse(target.as_str()).expect("a target URL parses");
    let kept: Vec<(String, String)> = url
        .query_pairs()
        .filter(|(key, _)| !pairs.iter().any(|(name, _)| key == name))
        .map(|(key, value)| (key.into_owned(), value.into_owned()))
        .collect();
    url.query_pairs_mut()
        .clear()
        .extend_pairs(kept)
        .extend_pairs(pairs);
    match links::parse_target(&state.core, url.as_str()).await {
        Ok(target) => Ok(Some(target)),
        Err(LinkError::Db(err)) => Err(err.into()),
        Err(err) => {
            errors.insert("url", err.to_string());
            Ok(None)
        }
    }
}

/// The campaign fields of the new-link form; each mistake is kept per field.
async fn parse_campaign(
    state: &AppState,
    form: &LinkForm,
    tz: chrono_tz::Tz,
    errors: &mut HashMap<&'static str, String>,
) -> Result<(Option<CodeLength>, Campaign), AdminError> {
    let rules_hosts = domains::own_hosts(&state.core.db).await?;
    let rules = crate::rules::UrlRules {
        max_length: state.core.settings.max_url_length as usize,
        own_hosts: &rules_hosts,
    };
    let mut note = |field: &'static str, message: String| {
        errors.insert(field, message);
    };
    let length = match form.length.trim() {
        "" => None,
        text => CodeLength::parse(text)
            .map_err(|err| note("length", err.to_string()))
            .ok(),
    };
    let mut campaign = Campaign::default();
    if !form.password.is_empty() {
        campaign.password = LinkPassword::parse(&form.password)
            .map_err(|err| note("password", err.to_string()))
            .ok();
    }
    if !form.max_visits.trim().is_empty() {
        campaign.max_visits = VisitLimit::parse(&form.max_visits)
            .map_err(|err| note("max_visits", err.to_string()))
            .ok();
    }
    if !form.valid_from.trim().is_empty() {
        campaign.valid_from =
            NaiveDateTime::parse_from_str(form.valid_from.trim(), "%Y-%m-%dT%H:%M")
                .map_err(|_| "give a date and time such as 2026-12-31T09:00".to_owned())
                .and_then(|local| crate::services::links::bulk::local_to_utc(local, tz))
                .map_err(|message| note("valid_from", message))
                .ok();
    }
    if !form.fallback_url.trim().is_empty() {
        campaign.fallback = TargetUrl::parse(form.fallback_url.trim(), &rules)
            .map_err(|err| note("fallback_url", err.to_string()))
            .ok();
    }
    match form.in_app_page.trim() {
        "" | "domain" => {}
        text => {
            campaign.in_app = InAppApps::parse(text)
                .map_err(|err| note("in_app_page", err.to_string()))
                .ok();
        }
    }
    campaign.targets = AltTargets::parse_lines(form.targets.lines(), &rules)
        .map_err(|err| note("targets", err.to_string()))
        .unwrap_or_default();
    Ok((length, campaign))
}

/// Which field a service error belongs to; database failures are not the user's.
fn field_of(err: LinkError) -> Result<(&'static str, String), AdminError> {
    let field = match err {
        LinkError::NotFound(_) | LinkError::Db(_) => return Err(err.into()),
        LinkError::CodeTaken(_) | LinkError::InvalidCode(_) | LinkError::CustomWithoutCode => {
            "code"
        }
        LinkError::UnknownDomain(_) | LinkError::DomainDisabled(_) | LinkError::NoDefaultDomain => {
            "domain"
        }
        LinkError::ExpiryInPast(_) => "expires",
        LinkError::OpensAfterExpiry(_) => "valid_from",
        LinkError::DescriptionTooLong(_) => "description",
        _ => "url",
    };
    Ok((field, err.to_string()))
}

pub async fn create(
    user: CurrentUser,
    state: web::Data<AppState>,
    form: web::Form<LinkForm>,
) -> Result<HttpResponse, AdminError> {
    user.check_csrf(&form.csrf)?;
    let form = form.into_inner();
    let mut parsed = parse_common(&state, &form, user.tz).await?;
    let code = match form.code.trim() {
        "" => None,
        code => ShortCode::parse(code)
            .map_err(|err| parsed.errors.insert("code", err.to_string()))
            .ok(),
    };
    let domain = match form.domain.trim() {
        "" => None,
        host => DomainHost::parse(host)
            .map_err(|err| parsed.errors.insert("domain", err.to_string()))
            .ok(),
    };
    let target = match parsed.target.clone() {
        Some(target) => with_utm(&state, target, &form, &parsed.tags, &mut parsed.errors).await?,
        None => None,
    };
    let (length, campaign) = parse_campaign(&state, &form, user.tz, &mut parsed.errors).await?;
    if let (Some(target), true) = (target, parsed.errors.is_empty()) {
        let new = NewLink {
            custom_code: code,
            domain,
            description: parsed.description.clone(),
            expires_at: parsed.expires_at,
            redirect_status: parsed.redirect_status,
            strategy: Strategy::Sequence,
            reuse: false,
            length,
            campaign,
            tags: parsed.tags.clone(),
            ..NewLink::to(target)
        };
        match links::create(&state.core, new, &user.actor()).await {
            Ok(saved) => {
                user.flash(format!("Created {}", saved.short_url()));
                return Ok(see_other("/admin/links"));
            }
            Err(err) => {
                let (field, message) = field_of(err)?;
                parsed.errors.insert(field, message);
            }
        }
    }
    let page = form_page(&state, &user, form, parsed.errors).await?;
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
    errors: HashMap<&'static str, String>,
    creator: String,
    created: String,
    timezone: String,
    /// No code length on the edit form: the code stays.
    lengths: Vec<u8>,
    password_set: bool,
}

impl EditPage {
    fn error(&self, field: &str) -> &str {
        self.errors.get(field).map_or("", String::as_str)
    }
}

fn edit_page(
    user: &CurrentUser,
    link: &url_map::Model,
    short_url: String,
    form: LinkForm,
    errors: HashMap<&'static str, String>,
    tz: chrono_tz::Tz,
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
    let page = edit_page(&user, &link, short_url, form, HashMap::new(), user.tz);
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
    let EditForm { fields, version } = form.into_inner();
    let mut parsed = parse_common(&state, &fields, user.tz).await?;
    let (_, campaign) = parse_campaign(&state, &fields, user.tz, &mut parsed.errors).await?;
    if let (Some(target), true) = (parsed.target.clone(), parsed.errors.is_empty()) {
        let changes = LinkChanges {
            target,
            description: parsed.description.clone(),
            expires_at: parsed.expires_at,
            redirect_status: parsed.redirect_status,
        };
        let code = ShortCode::parse(&link.compression_code).map_err(|_| AdminError::NotFound)?;
        let edit = LinkEdit {
            changes: Some(changes),
            tags: Some(parsed.tags.clone()),
            campaign: campaign_edit(&fields, campaign, &link),
            ..LinkEdit::default()
        };
        match links::edit(&state.core, &code, Some(version), edit, &user.actor()).await {
            Ok(_) => {
                user.flash(format!("Saved {short_url}"));
                return Ok(see_other("/admin/links"));
            }
            Err(err @ LinkError::Stale(_)) => {
                parsed.errors.insert("form", err.to_string());
            }
            Err(err) => {
                let (field, message) = field_of(err)?;
                parsed.errors.insert(field, message);
            }
        }
    }
    let page = edit_page(&user, &link, short_url, fields, parsed.errors, user.tz);
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
    user.flash(format!("Deleted {code}"));
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
    let svg = crate::admin::links::qr::svg(&short_url).ok_or(AdminError::NotFound)?;
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
    let png = crate::admin::links::qr::png(&short_url, scale).ok_or(AdminError::NotFound)?;
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
    user.flash(match status {
        LinkStatus::Active => format!("Enabled {code}"),
        LinkStatus::Disabled => format!("Disabled {code}"),
    });
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
