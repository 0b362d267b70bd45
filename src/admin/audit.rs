//! The audit log (admins only): who did what, when, newest first, with filters.

use super::auth::AdminUser;
use super::error::AdminError;
use super::pages::{Frame, render};
use crate::db::entities::audit_log;
use crate::state::AppState;
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use askama::Template;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect};

const PAGE_SIZE: u64 = 100;

#[derive(serde::Deserialize, Default)]
pub struct AuditQuery {
    #[serde(default)]
    actor: String,
    #[serde(default)]
    action: String,
    #[serde(default)]
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
    let mut select = audit_log::Entity::find();
    let (actor, action, target) = (query.actor.trim(), query.action.trim(), query.target.trim());
    if !actor.is_empty() {
        select = select.filter(audit_log::Column::Actor.eq(actor));
    }
    if !action.is_empty() {
        select = select.filter(audit_log::Column::Action.starts_with(action));
    }
    if !target.is_empty() {
        select = select.filter(audit_log::Column::TargetId.eq(target));
    }
    if let Some(before) = query.before {
        select = select.filter(audit_log::Column::Id.lt(before));
    }
    let mut entries = select
        .order_by_desc(audit_log::Column::Id)
        .limit(PAGE_SIZE + 1)
        .all(&state.core.db)
        .await?;
    let next = if entries.len() as u64 > PAGE_SIZE {
        entries.truncate(PAGE_SIZE as usize);
        entries.last().map(|e| e.id)
    } else {
        None
    };
    let rows = entries
        .into_iter()
        .map(|e| Row {
            at: super::pages::human_time(e.at, state.core.settings.timezone),
            actor: e.actor,
            actor_kind: e.actor_kind,
            action: e.action,
            target: format!("{} {}", e.target_kind, e.target_id),
            before: e.before_state.unwrap_or_default(),
            after: e.after_state.unwrap_or_default(),
        })
        .collect();
    let page = AuditPage {
        frame: Frame::new(&user.0, None, "audit"),
        rows,
        actor: actor.to_owned(),
        action: action.to_owned(),
        target: target.to_owned(),
        next,
    };
    Ok(render(StatusCode::OK, &page))
}
