//! The audit log (admins only): who did what, when, newest first, with filters.

use crate::admin::access::auth::AdminUser;
use crate::admin::error::AdminError;
use crate::admin::pages::{Frame, render};
use crate::services::audit::{self, AuditFilter};
use crate::services::links::listing;
use crate::state::AppState;
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use askama::Template;

const PAGE_SIZE: u64 = 100;

#[derive(serde::Deserialize, Default)]
#[serde(default)]
pub struct AuditQuery {
    actor: String,
    action: String,
    target: String,
    before: Option<i64>,
}

pub struct Row {
    pub at: String,
    pub actor: String,
    pub actor_kind: String,
    pub action: String,
    pub target: String,
    pub before: String,
    pub after: String,
}

#[derive(Template)]
#[template(path = "admin/audit.html")]
struct AuditPage {
    frame: Frame,
    /// Each action's identifier (the filter's value), its words, and whether it is chosen.
    actions: Vec<(&'static str, String, bool)>,
    rows: Vec<Row>,
    actor: String,
    action: String,
    target: String,
    next: Option<i64>,
}

pub async fn list(
    user: AdminUser,
    state: web::Data<AppState>,
    query: web::Query<AuditQuery>,
) -> Result<HttpResponse, AdminError> {
    let (actor, action, target) = (query.actor.trim(), query.action.trim(), query.target.trim());
    let filter = AuditFilter {
        actor: listing::text(actor),
        action: listing::text(action),
        target: listing::text(target),
        before: query.before,
    };
    let mut entries = audit::list(&state.core.db, &filter, PAGE_SIZE + 1).await?;
    let next = if entries.len() as u64 > PAGE_SIZE {
        entries.truncate(PAGE_SIZE as usize);
        entries.last().map(|e| e.id)
    } else {
        None
    };
    // Actions and kinds in the reader's words; names, codes and hosts as they are.
    let lang = user.0.lang;
    let rows = entries
        .into_iter()
        .map(|e| Row {
            at: crate::admin::pages::human_time(e.at, user.0.tz),
            actor: e.actor,
            actor_kind: lang
                .t_or(
                    audit::words(&audit::ACTOR_KINDS, &e.actor_kind),
                    &e.actor_kind,
                )
                .to_owned(),
            action: lang
                .t_or(audit::words(&audit::ACTIONS, &e.action), &e.action)
                .to_owned(),
            target: format!(
                "{} {}",
                lang.t_or(
                    audit::words(&audit::TARGET_KINDS, &e.target_kind),
                    &e.target_kind
                ),
                e.target_id
            ),
            before: e.before_state.unwrap_or_default(),
            after: e.after_state.unwrap_or_default(),
        })
        .collect();
    let actions = audit::ACTIONS
        .iter()
        .map(|(id, words)| (*id, lang.t(*words).to_owned(), *id == action))
        .collect();
    let page = AuditPage {
        frame: Frame::new(&user.0, None, "audit"),
        actions,
        rows,
        actor: actor.to_owned(),
        action: action.to_owned(),
        target: target.to_owned(),
        next,
    };
    Ok(render(StatusCode::OK, &page))
}
