//! `/api/v1/domains`: the hosts links can be made for.

use super::auth::ApiCaller;
use super::error::{ApiError, ErrorBody};
use super::model::Domain;
use crate::db::entities::domain_conf::DomainStatus;
use crate::services::domains;
use crate::state::AppState;
use actix_web::{HttpResponse, web};
use std::collections::HashMap;

/// The domains, with their status and which one is the default.
#[utoipa::path(
    get,
    path = "/api/v1/domains",
    tag = "domains",
    responses(
        (status = 200, description = "Every domain", body = Vec<Domain>),
        (status = 401, description = "Missing, unknown, expired or revoked key", body = ErrorBody),
        (status = 429, description = "Over the key's rate limit", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
pub async fn list(
    _caller: ApiCaller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let all = domains::list(&state.core.db).await?;
    let hosts: HashMap<i64, String> = all.iter().map(|d| (d.id, d.host.clone())).collect();
    let view: Vec<Domain> = all
        .iter()
        .map(|d| Domain {
            host: d.host.clone(),
            protocol: d.protocol.clone(),
            status: match d.status {
                DomainStatus::Active => "active",
                DomainStatus::Disabled => "disabled",
            }
            .to_owned(),
            is_default: d.is_default,
            replaced_by: d.replaced_by_id.and_then(|id| hosts.get(&id).cloned()),
        })
        .collect();
    Ok(HttpResponse::Ok().json(view))
}
