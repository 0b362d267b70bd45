//! The tags page: every campaign with its number of links, a link to its dashboard and its
//! links, and the UTM preset the new-link form fills in for it.

use crate::admin::access::auth::CurrentUser;
use crate::admin::error::AdminError;
use crate::admin::pages::{Frame, render, see_other};
use crate::i18n::Message;
use crate::i18n::Says;
use crate::rules::Tag;
use crate::services::tags::{self, Utm};
use crate::state::AppState;
use crate::stats::report::{self, Scope};
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use askama::Template;

pub struct Row {
    pub tag: String,
    pub links: i64,
    pub preset: Utm,
    /// Page views today, over the last 7 and 30 days, and distinct visitors over the 30.
    pub today: String,
    pub week: String,
    pub month: String,
    pub month_uv: String,
    month_pv: i64,
}

/// Tags ranked on the page at most (the rest are listed without figures).
const RANKED: usize = 200;

#[derive(Template)]
#[template(path = "admin/tags.html")]
struct TagsPage {
    frame: Frame,
    /// Presets go into every operator's links: only admins change them.
    may_edit: bool,
    rows: Vec<Row>,
    error: Option<crate::i18n::Message>,
}

async fn page(
    state: &AppState,
    user: &CurrentUser,
    error: Option<crate::i18n::Message>,
) -> Result<TagsPage, AdminError> {
    let db = &state.core.db;
    let mut presets = tags::presets(db).await?;
    let today = crate::stats::days::today(state.core.settings.timezone);
    let days_before = |n: u64| {
        today
            .checked_sub_days(chrono::Days::new(n))
            .unwrap_or(today)
    };
    let lang = user.lang;
    let mut rows = Vec::new();
    for (rank, (tag, links)) in tags::list(db).await?.into_iter().enumerate() {
        let mut row = Row {
            preset: presets.remove(&tag).unwrap_or_default(),
            tag,
            links,
            today: String::new(),
            week: String::new(),
            month: String::new(),
            month_uv: String::new(),
            month_pv: -1,
        };
        if rank < RANKED {
            // Page views from the days' rows (one query); visitors over the 30 days are
            // distinct over the range (the day sets).
            let scope = Scope::Tag(&row.tag);
            let days = report::daily(db, scope, days_before(29), today).await?;
            let since = |first| -> i64 {
                days.iter()
                    .filter(|d| d.day >= first)
                    .map(|d| d.visits.pv)
                    .sum()
            };
            let month =
                report::range_totals(db, &state.core.kept, scope, days_before(29), today).await?;
            row.today = lang.number(since(today));
            row.week = lang.number(since(days_before(6)));
            row.month = lang.number(month.pv);
            row.month_uv = lang.number(month.uv);
            row.month_pv = month.pv;
        }
        rows.push(row);
    }
    // The leaderboard: most page views over 30 days first, then most links.
    rows.sort_by(|a, b| {
        b.month_pv
            .cmp(&a.month_pv)
            .then(b.links.cmp(&a.links))
            .then_with(|| a.tag.cmp(&b.tag))
    });
    let flash = if error.is_none() {
        user.take_flash()
    } else {
        None
    };
    Ok(TagsPage {
        may_edit: user.is_admin(),
        frame: Frame::new(user, flash, "tags"),
        rows,
        error,
    })
}

pub async fn list(
    user: CurrentUser,
    state: web::Data<AppState>,
) -> Result<HttpResponse, AdminError> {
    let page = page(&state, &user, None).await?;
    Ok(render(StatusCode::OK, &page))
}

#[derive(serde::Deserialize, Default)]
#[serde(default)]
pub struct PresetForm {
    csrf: String,
    utm_source: String,
    utm_medium: String,
    utm_campaign: String,
    utm_term: String,
    utm_content: String,
}

pub async fn set_preset(
    user: CurrentUser,
    state: web::Data<AppState>,
    tag: web::Path<String>,
    form: web::Form<PresetForm>,
) -> Result<HttpResponse, AdminError> {
    user.check_csrf(&form.csrf)?;
    let tag = match Tag::parse(&tag) {
        Ok(tag) => tag,
        Err(err) => {
            let page = page(&state, &user, Some(err.says())).await?;
            return Ok(render(StatusCode::UNPROCESSABLE_ENTITY, &page));
        }
    };
    let form = form.into_inner();
    let utm = Utm {
        source: form.utm_source,
        medium: form.utm_medium,
        campaign: form.utm_campaign,
        term: form.utm_term,
        content: form.utm_content,
    };
    match tags::set_preset(&state.core.db, &tag, &utm, &user.actor()).await {
        Ok(()) => {}
        Err(tags::PresetError::NotAdmin) => {
            let page = page(&state, &user, Some(tags::PresetError::NotAdmin.says())).await?;
            return Ok(render(StatusCode::FORBIDDEN, &page));
        }
        Err(tags::PresetError::Db(err)) => return Err(err.into()),
    }
    user.flash(Message::new(t!("Saved the UTM preset of {tag}")).data("tag", &tag));
    Ok(see_other("/admin/tags"))
}
