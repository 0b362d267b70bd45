//! The domains page (admins only): add, make default, disable, enable, and rotate a blocked
//! domain to a new one.

use crate::admin::access::auth::AdminUser;
use crate::admin::error::AdminError;
use crate::admin::pages::see_other;
use crate::admin::pages::{Frame, render};
use crate::db::entities::domain_conf::DomainStatus;
use crate::i18n::Message;
use crate::i18n::Says;
use crate::i18n::Text;
use crate::rules::filing::{IcpFiling, SmsTemplates};
use crate::rules::{DomainHost, Protocol};
use crate::services::domains::{self, DomainChangeError, DomainError};
use crate::state::AppState;
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use askama::Template;

pub struct Row {
    pub id: i64,
    pub url: String,
    pub host: String,
    pub active: bool,
    pub is_default: bool,
    pub replaced_by: Option<String>,
    pub links: i64,
    /// The in-app browsers its links show "open in your browser" (empty: none).
    pub in_app: String,
    pub fallback: String,
    /// healthy, suspect, blocked or unknown.
    pub health: &'static str,
    /// Why the domain is in its state, when there is something to say.
    pub reason: Option<Message>,
    /// When it was last checked (empty: never).
    pub checked: String,
    /// The worst state of each of the last 7 days, oldest first.
    pub strip: Vec<(&'static str, Text)>,
    pub standby: bool,
    pub failover: String,
    pub icp: String,
    /// The SMS templates that embed it, one per line.
    pub templates: String,
}

#[derive(Template)]
#[template(path = "admin/domains.html")]
struct DomainsPage {
    frame: Frame,
    rows: Vec<Row>,
    error: Option<crate::i18n::Message>,
    new_host: String,
}

impl DomainsPage {
    fn active_hosts(&self) -> Vec<&Row> {
        self.rows
            .iter()
            .filter(|row| row.active && row.replaced_by.is_none())
            .collect()
    }
}

async fn page(
    state: &AppState,
    user: &AdminUser,
    error: Option<crate::i18n::Message>,
    new_host: String,
) -> Result<DomainsPage, AdminError> {
    let db = &state.core.db;
    let list = domains::list(db).await?;
    let counts = domains::link_counts(db).await?;
    let hosts: std::collections::HashMap<i64, String> =
        list.iter().map(|d| (d.id, d.host.clone())).collect();
    let health = crate::services::health::all(db).await?;
    let now = chrono::Utc::now().timestamp_millis();
    let history = crate::services::health::history(db, now - 8 * 86_400_000).await?;
    let rows = list
        .iter()
        .map(|domain| Row {
            id: domain.id,
            url: domains::short_url(domain, ""),
            host: domain.host.clone(),
            active: domain.status == DomainStatus::Active,
            is_default: domain.is_default,
            replaced_by: domain.replaced_by_id.and_then(|id| hosts.get(&id).cloned()),
            links: counts.get(&domain.id).copied().unwrap_or(0),
            in_app: domain.in_app_page.clone().unwrap_or_default(),
            fallback: domain.fallback_url.clone().unwrap_or_default(),
            health: health
                .get(&domain.id)
                .map_or("unknown", |h| h.state.as_str()),
            reason: health
                .get(&domain.id)
                .filter(|h| !h.reason.is_empty())
                .map(|h| h.reason_shown()),
            checked: health
                .get(&domain.id)
                .and_then(|h| chrono::DateTime::from_timestamp_millis(h.checked_at))
                .map(|t| crate::admin::pages::human_time(t.naive_utc(), user.0.tz))
                .unwrap_or_default(),
            strip: crate::services::health::strip(
                history.get(&domain.id).map_or(&[][..], Vec::as_slice),
                now,
                7,
            )
            .into_iter()
            .map(|s| (s.as_str(), s.words()))
            .collect(),
            standby: domain.standby,
            failover: domain.failover.clone(),
            icp: domain.icp_filing.clone().unwrap_or_default(),
            templates: domain.sms_templates.clone().unwrap_or_default(),
        })
        .collect();
    Ok(DomainsPage {
        frame: Frame::new(
            &user.0,
            if error.is_none() {
                user.0.take_flash()
            } else {
                None
            },
            "domains",
        ),
        rows,
        error,
        new_host,
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
    host: String,
    /// Checkbox: present when ticked.
    http: Option<String>,
    default: Option<String>,
}

pub async fn add(
    user: AdminUser,
    state: web::Data<AppState>,
    form: web::Form<AddForm>,
) -> Result<HttpResponse, AdminError> {
    user.0.check_csrf(&form.csrf)?;
    let protocol = if form.http.is_some() {
        Protocol::Http
    } else {
        Protocol::Https
    };
    let result = match DomainHost::parse(&form.host) {
        Err(err) => Err(err.says()),
        Ok(host) => match domains::add(
            &state.core.db,
            &host,
            protocol,
            form.default.is_some(),
            &user.0.actor(),
        )
        .await
        {
            Ok(domain) => Ok(domain),
            Err(err @ DomainError::Exists(_)) => Err(err.says()),
            Err(DomainError::Db(err)) => return Err(AdminError::Db(err)),
        },
    };
    match result {
        Ok(domain) => {
            user.0
                .flash(Message::new(t!("Added {}")).data("", domains::short_url(&domain, "")));
            Ok(see_other("/admin/domains"))
        }
        Err(message) => {
            let page = page(&state, &user, Some(message), form.host.clone()).await?;
            Ok(render(StatusCode::UNPROCESSABLE_ENTITY, &page))
        }
    }
}

/// What disabling or rotating a domain will do, to be confirmed; `None` when the request
/// cannot be confirmed as it is (no replacement chosen), which the action itself then refuses.
async fn confirmation(
    state: &AppState,
    user: &AdminUser,
    id: i64,
    action: &str,
    replacement: Option<i64>,
) -> Result<Option<HttpResponse>, AdminError> {
    let db = &state.core.db;
    let all = domains::list(db).await?;
    let domain = all
        .iter()
        .find(|d| d.id == id)
        .ok_or(AdminError::NotFound)?;
    let links = domains::link_counts(db)
        .await?
        .get(&id)
        .copied()
        .unwrap_or(0);
    let frame = Frame::new(&user.0, None, "domains");
    let page = match action {
        "disable" => crate::admin::pages::Confirm {
            frame,
            heading: Message::new(t!("Disable {}?")).data("", &domain.host),
            lines: vec![
                Message::new(t!(
                    "No new links can be made on {}. Its {links} links keep redirecting and keep their short URLs."
                ))
                .data("", &domain.host)
                .data("links", links),
            ],
            action: format!("/admin/domains/{id}/disable"),
            fields: Vec::new(),
            button: Message::new(t!("Disable {}")).data("", &domain.host),
            back: "/admin/domains",
            listing: Vec::new(),
        },
        _ => {
            let Some(next) = replacement.and_then(|r| all.iter().find(|d| d.id == r)) else {
                return Ok(None);
            };
            crate::admin::pages::Confirm {
                frame,
                heading: Message::new(t!("Replace {} by {}?"))
                    .data("", &domain.host)
                    .data("", &next.host),
                lines: vec![
                    match links {
                        1 => Message::new(t!(
                            "1 link moves to {}: its short URL becomes {} followed by the code, everywhere it is shown and copied."
                        )),
                        _ => Message::new(t!(
                            "{links} links move to {}: their short URLs become {} followed by the code, everywhere they are shown and copied."
                        ))
                        .data("links", links),
                    }
                    .data("", &next.host)
                    .data("", domains::short_url(next, "")),
                    Message::new(t!(
                        "{} becomes the default domain for new links, and {} is disabled. Requests that still arrive on {} keep redirecting, so messages already sent keep working."
                    ))
                    .data("", &next.host)
                    .data("", &domain.host)
                    .data("", &domain.host),
                ]
                .into_iter()
                .chain(filing_lines(domain, next))
                .collect(),
                action: format!("/admin/domains/{id}/rotate"),
                fields: vec![("replacement", next.id.to_string())],
                button: Message::new(t!("Rotate to {}")).data("", &next.host),
                back: "/admin/domains",
                listing: domains::templates_to_resubmit(domain),
            }
        }
    };
    Ok(Some(page.page()))
}

/// What a rotation from `old` to `next` asks of the sender in China: the approved SMS
/// templates that embed the old domain (listed below these lines), and the new domain's filing.
fn filing_lines(
    old: &crate::db::entities::domain_conf::Model,
    next: &crate::db::entities::domain_conf::Model,
) -> Vec<Message> {
    let mut lines = Vec::new();
    let templates = domains::templates_to_resubmit(old).len();
    if templates > 0 {
        lines.push(
            Message::new(t!(
                "These {templates} approved SMS templates contain {old}: submit them again with {new} before the next send."
            ))
            .data("templates", templates)
            .data("old", &old.host)
            .data("new", &next.host),
        );
    }
    match &next.icp_filing {
        Some(filing) => lines.push(
            Message::new(t!("ICP filing of {host}: {filing}"))
                .data("host", &next.host)
                .data("filing", filing),
        ),
        None if old.icp_filing.is_some() => lines.push(
            Message::new(t!(
                "{next} has no ICP filing number recorded ({old} had one)."
            ))
            .data("next", &next.host)
            .data("old", &old.host),
        ),
        None => {}
    }
    lines
}

/// The page again with `message` as its error (422).
async fn refuse(
    state: &AppState,
    user: &AdminUser,
    message: Message,
) -> Result<HttpResponse, AdminError> {
    let page = page(state, user, Some(message), String::new()).await?;
    Ok(render(StatusCode::UNPROCESSABLE_ENTITY, &page))
}

#[derive(serde::Deserialize, Default)]
#[serde(default)]
pub struct ChangeForm {
    csrf: String,
    /// For rotation: the domain that takes over (empty until one is chosen).
    replacement: String,
    /// Rotation must be confirmed: it changes every link's short URL at once.
    confirm: Option<String>,
    /// For the link defaults: in-app browsers (`wechat,qq`), and the fallback URL.
    in_app_page: Option<String>,
    fallback_url: Option<String>,
    /// For fail-over: the standby checkbox (present when ticked) and the policy.
    standby: Option<String>,
    failover: Option<String>,
    /// For the filing: the ICP filing number and the SMS templates (one per line).
    icp_filing: Option<String>,
    sms_templates: Option<String>,
}

pub async fn change(
    user: AdminUser,
    state: web::Data<AppState>,
    path: web::Path<(i64, String)>,
    form: web::Form<ChangeForm>,
) -> Result<HttpResponse, AdminError> {
    user.0.check_csrf(&form.csrf)?;
    let (id, action) = path.into_inner();
    let db = &state.core.db;
    let actor = user.0.actor();
    let confirmed = form.confirm.as_deref() == Some("yes");
    if !confirmed && (action == "disable" || action == "rotate") {
        let replacement = form.replacement.trim().parse().ok();
        if let Some(page) = confirmation(&state, &user, id, &action, replacement).await? {
            return Ok(page);
        }
    }
    let result = match action.as_str() {
        "default" => domains::set_default(db, id, &actor)
            .await
            .map(|d| Message::new(t!("{} is now the default")).data("", d.host)),
        "disable" => domains::set_status(db, id, DomainStatus::Disabled, &actor)
            .await
            .map(|d| Message::new(t!("Disabled {}")).data("", d.host)),
        "enable" => domains::set_status(db, id, DomainStatus::Active, &actor)
            .await
            .map(|d| Message::new(t!("Enabled {}")).data("", d.host)),
        "rotate" => match (form.replacement.trim().parse::<i64>().ok(), confirmed) {
            (None, _) => {
                let message = Message::new(t!(
                    "choose the domain that takes over (add one first if there is none)"
                ));
                let page = page(&state, &user, Some(message), String::new()).await?;
                return Ok(render(StatusCode::UNPROCESSABLE_ENTITY, &page));
            }
            (Some(_), false) => {
                let page = page(
                    &state,
                    &user,
                    Some(Message::new(t!("tick the box to confirm the rotation"))),
                    String::new(),
                )
                .await?;
                return Ok(render(StatusCode::UNPROCESSABLE_ENTITY, &page));
            }
            (Some(replacement), true) => {
                let old = domains::by_id(db).await?.remove(&id);
                let resubmit = old
                    .as_ref()
                    .map_or(0, |d| domains::templates_to_resubmit(d).len());
                domains::rotate(db, id, replacement, &actor).await.map(|d| {
                    match (resubmit, old) {
                        (0, _) | (_, None) => Message::new(t!(
                            "Rotated: links are now shown on {}; the old host keeps redirecting"
                        ))
                        .data("", d.host),
                        (n, Some(old)) => Message::new(t!(
                            "Rotated: links are now shown on {new}; the old host keeps redirecting. Submit the {n} approved SMS templates that contain {old} again with the new domain."
                        ))
                        .data("new", d.host)
                        .data("n", n)
                        .data("old", old.host),
                    }
                })
            }
        },
        "settings" => {
            let in_app =
                match crate::rules::InAppApps::parse(form.in_app_page.as_deref().unwrap_or("")) {
                    Ok(apps) => apps,
                    Err(err) => return refuse(&state, &user, err.says()).await,
                };
            let fallback = match form.fallback_url.as_deref().map(str::trim) {
                None | Some("") => None,
                Some(url) => match crate::services::links::parse_target(&state.core, url).await {
                    Ok(url) => Some(url),
                    Err(crate::services::links::LinkError::Db(err)) => {
                        return Err(AdminError::Db(err));
                    }
                    Err(err) => {
                        let reason = Message::new(t!("fallback URL: {reason}"))
                            .message("reason", err.says());
                        return refuse(&state, &user, reason).await;
                    }
                },
            };
            domains::set_link_defaults(db, id, Some(in_app), Some(fallback), &actor)
                .await
                .map(|d| Message::new(t!("Saved the link defaults of {}")).data("", d.host))
        }
        "filing" => {
            let filing = IcpFiling::parse(form.icp_filing.as_deref().unwrap_or(""));
            let templates = SmsTemplates::parse(form.sms_templates.as_deref().unwrap_or(""));
            let (filing, templates) = match (filing, templates) {
                (Ok(filing), Ok(templates)) => (filing, templates),
                (Err(err), _) | (_, Err(err)) => {
                    return refuse(&state, &user, err.says()).await;
                }
            };
            domains::set_filing(db, id, Some(filing), Some(templates), &actor)
                .await
                .map(|d| {
                    Message::new(t!("Saved the ICP filing and SMS templates of {}"))
                        .data("", d.host)
                })
        }
        "failover" => {
            let failover = match form
                .failover
                .as_deref()
                .map(crate::rules::health::Failover::parse)
                .transpose()
            {
                Ok(policy) => policy,
                Err(err) => return refuse(&state, &user, err.says()).await,
            };
            domains::set_failover(db, id, Some(form.standby.is_some()), failover, &actor)
                .await
                .map(|d| Message::new(t!("Saved the fail-over settings of {}")).data("", d.host))
        }
        _ => return Err(AdminError::NotFound),
    };
    match result {
        Ok(message) => {
            user.0.flash(message);
            Ok(see_other("/admin/domains"))
        }
        Err(DomainChangeError::Db(err)) => Err(AdminError::Db(err)),
        Err(DomainChangeError::NotFound) => Err(AdminError::NotFound),
        Err(other) => {
            let page = page(&state, &user, Some(other.says()), String::new()).await?;
            Ok(render(StatusCode::UNPROCESSABLE_ENTITY, &page))
        }
    }
}
