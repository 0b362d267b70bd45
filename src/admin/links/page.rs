//! One link whole: its short URL and QR code, status and settings, clicks at a glance, and
//! its history from the audit log, with edit, disable and enable at hand.

use crate::admin::access::auth::CurrentUser;
use crate::admin::error::AdminError;
use crate::admin::pages::{Frame, render};
use crate::charts;
use crate::db::entities::url_map::{LinkState, LinkStatus};
use crate::i18n::Message;
use crate::i18n::Text;
use crate::rules::{AltTargets, TargetUrl};
use crate::services::audit::{self, AuditFilter};
use crate::services::links;
use crate::state::AppState;
use crate::stats::days::today;
use crate::stats::report;
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use askama::Template;

pub struct Event {
    pub at: String,
    pub actor: String,
    pub action: String,
}

#[derive(Template)]
#[template(path = "admin/link_page.html")]
struct LinkPage {
    frame: Frame,
    code: String,
    short_url: String,
    target: String,
    target_shown: String,
    /// "active", "disabled" or "expired".
    state: &'static str,
    state_words: Text,
    active: bool,
    changeable: bool,
    /// (label, value) rows of the link's settings.
    details: Vec<(Text, String)>,
    tags: Vec<String>,
    glance: report::Glance,
    spark: String,
    history: Vec<Event>,
}

pub async fn show(
    user: CurrentUser,
    state: web::Data<AppState>,
    code: web::Path<String>,
) -> Result<HttpResponse, AdminError> {
    let (link, short_url) = crate::admin::links::find(&state, &code).await?;
    let db = &state.core.db;
    let tz = user.tz;
    let time = |at| crate::admin::pages::human_time(at, tz);
    let glance = report::glance(db, &[link.id], today(tz))
        .await?
        .remove(&link.id)
        .unwrap_or_default();
    let tags = crate::services::tags::tags_of(db, &[link.id])
        .await?
        .remove(&link.id)
        .unwrap_or_default();
    let history = audit::list(
        db,
        &AuditFilter {
            target: Some(link.compression_code.to_string()),
            ..AuditFilter::default()
        },
        50,
    )
    .await?
    .into_iter()
    .filter(|entry| entry.target_kind == "link")
    .map(|entry| Event {
        at: time(entry.at),
        actor: entry.actor,
        action: user
            .lang
            .t_or(audit::words(&audit::ACTIONS, &entry.action), &entry.action)
            .to_owned(),
    })
    .collect();
    // Values as shown: the words in the reader's language, here; what people typed (the
    // creator's name, the description, URLs) as it is.
    let lang = user.lang;
    let mut details: Vec<(Text, String)> = vec![
        (t!("Created"), time(link.created_at)),
        (t!("Creator"), link.creator.clone().unwrap_or_default()),
        (
            t!("Description"),
            link.description.clone().unwrap_or_default(),
        ),
        (
            t!("Expires"),
            link.expires_at
                .map(time)
                .unwrap_or_else(|| lang.t(t!("never")).to_owned()),
        ),
        (
            t!("Redirect"),
            link.redirect()
                .unwrap_or(state.core.settings.redirect_status)
                .code()
                .to_string(),
        ),
    ];
    if link.password_hash.is_some() {
        details.push((t!("Visitor password"), lang.t(t!("yes")).to_owned()));
    }
    if let Some(max) = link.max_visits {
        details.push((
            t!("Visits"),
            Message::new(t!("{} of {max}"))
                .data("", link.visit_count)
                .data("max", max)
                .show(lang),
        ));
    }
    if let Some(from) = link.valid_from {
        details.push((t!("Opens"), time(from)));
    }
    if let Some(fallback) = &link.fallback_url {
        details.push((t!("Fallback"), TargetUrl::readable(fallback)));
    }
    if let Some(apps) = &link.in_app_page {
        details.push((t!("In-app page for"), apps.clone()));
    }
    for (rule, url) in link
        .alt_targets
        .as_deref()
        .map(AltTargets::stored)
        .unwrap_or_default()
        .iter()
    {
        details.push((
            t!("Target for"),
            format!("{rule}: {}", TargetUrl::readable(url.as_str())),
        ));
    }
    details.retain(|(_, value)| !value.is_empty());
    let (state_name, state_words) = match link.state(crate::db::now()) {
        LinkState::Live => ("active", t!("active")),
        LinkState::Disabled => ("disabled", t!("disabled")),
        LinkState::Expired => ("expired", t!("expired")),
    };
    let page = LinkPage {
        frame: Frame::new(&user, user.take_flash(), "links"),
        code: link.compression_code.to_string(),
        target_shown: TargetUrl::readable(&link.long_url),
        target: link.long_url.clone(),
        state: state_name,
        state_words,
        active: link.url_status == LinkStatus::Active,
        changeable: links::may_change(&user.actor(), &link).is_ok(),
        details,
        tags,
        spark: charts::sparkline(&glance.last14, &short_url, user.lang),
        glance,
        history,
        short_url,
    };
    Ok(render(StatusCode::OK, &page))
}
