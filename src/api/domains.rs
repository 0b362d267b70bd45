//! `/api/v1/domains`: the hosts links can be made for, their health, standbys and fail-over.

use super::auth::ApiCaller;
use super::body::{parse_json, read_body};
use super::error::{ApiError, ErrorBody, ErrorCode};
use super::model::{Domain, DomainHealth, PatchDomain};
use crate::db::entities::domain_conf::{self, DomainStatus};
use crate::rules::DomainHost;
use crate::rules::filing::{IcpFiling, SmsTemplates};
use crate::rules::health::Failover;
use crate::services::domains::{self, DomainChangeError};
use crate::services::health::{self, Health};
use crate::state::AppState;
use actix_web::{HttpResponse, web};
use chrono::{TimeZone, Utc};
use std::collections::HashMap;

fn view(d: &domain_conf::Model, hosts: &HashMap<i64, String>, health: Option<&Health>) -> Domain {
    Domain {
        host: d.host.clone(),
        protocol: d.protocol.clone(),
        status: match d.status {
            DomainStatus::Active => "active",
            DomainStatus::Disabled => "disabled",
        }
        .to_owned(),
        is_default: d.is_default,
        replaced_by: d.replaced_by_id.and_then(|id| hosts.get(&id).cloned()),
        health: DomainHealth {
            state: health.map_or("unknown", |h| h.state.as_str()).to_owned(),
            checked_at: health.and_then(|h| Utc.timestamp_millis_opt(h.checked_at).single()),
            reason: health.map(|h| h.reason.clone()).filter(|r| !r.is_empty()),
        },
        standby: d.standby,
        failover: d.failover.clone(),
        icp_filing: d.icp_filing.clone(),
        sms_templates: domains::templates_to_resubmit(d),
    }
}

/// The domains, with their status, health, which one is the default, and the standbys.
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
    let health = health::all(&state.core.db).await?;
    let hosts: HashMap<i64, String> = all.iter().map(|d| (d.id, d.host.clone())).collect();
    let view: Vec<Domain> = all
        .iter()
        .map(|d| view(d, &hosts, health.get(&d.id)))
        .collect();
    Ok(HttpResponse::Ok().json(view))
}

/// Make a domain a standby (or not) and set its fail-over policy (admin keys only).
#[utoipa::path(
    patch,
    path = "/api/v1/domains/{host}",
    tag = "domains",
    params(("host" = String, Path, description = "The domain's host, with its port if it has one")),
    request_body = PatchDomain,
    responses(
        (status = 200, description = "The domain as changed", body = Domain),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Missing, unknown, expired or revoked key", body = ErrorBody),
        (status = 403, description = "An operator key", body = ErrorBody),
        (status = 404, description = "No such domain", body = ErrorBody),
        (status = 422, description = "A bad policy, or the default domain made a standby", body = ErrorBody),
        (status = 429, description = "Over the key's rate limit", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
pub async fn update(
    caller: ApiCaller,
    state: web::Data<AppState>,
    host: web::Path<String>,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let actor = caller.actor();
    if !actor.is_admin() {
        return Err(ApiError::Forbidden(
            "only an admin key may change domains".into(),
        ));
    }
    let body: PatchDomain = parse_json(&read_body(payload, 32 * 1024).await?)?;
    let failover = body
        .failover
        .as_deref()
        .map(Failover::parse)
        .transpose()
        .map_err(|err| ApiError::invalid(ErrorCode::InvalidValue, err.to_string(), "failover"))?;
    let db = &state.core.db;
    let not_found = || ApiError::NotFound(format!("there is no domain '{host}'"));
    let parsed = DomainHost::parse(&host).map_err(|_| not_found())?;
    let domain = domains::find_by_host(db, &parsed)
        .await?
        .ok_or_else(not_found)?;
    let text =
        |value: &Option<Option<String>>| value.as_ref().map(|v| v.clone().unwrap_or_default());
    let filing = text(&body.icp_filing)
        .map(|v| IcpFiling::parse(&v))
        .transpose()
        .map_err(|err| ApiError::invalid(ErrorCode::InvalidValue, err.to_string(), "icp_filing"))?;
    let templates = text(&body.sms_templates)
        .map(|v| SmsTemplates::parse(&v))
        .transpose()
        .map_err(|err| {
            ApiError::invalid(ErrorCode::InvalidValue, err.to_string(), "sms_templates")
        })?;
    let refused = |err: DomainChangeError, field: &str| match err {
        DomainChangeError::Db(err) => ApiError::Unavailable(err),
        DomainChangeError::NotFound => not_found(),
        err => ApiError::invalid(ErrorCode::InvalidValue, err.to_string(), field),
    };
    // The change that can be refused (a default made a standby) goes first: a refused request
    // changes nothing.
    if body.standby.is_some() || failover.is_some() {
        domains::set_failover(db, domain.id, body.standby, failover, &actor)
            .await
            .map_err(|err| refused(err, "standby"))?;
    }
    if filing.is_some() || templates.is_some() {
        domains::set_filing(db, domain.id, filing, templates, &actor)
            .await
            .map_err(|err| refused(err, "icp_filing"))?;
    }
    let all = domains::list(db).await?;
    let changed = all
        .iter()
        .find(|d| d.id == domain.id)
        .ok_or_else(not_found)?;
    let hosts: HashMap<i64, String> = all.iter().map(|d| (d.id, d.host.clone())).collect();
    let health = health::all(db).await?;
    Ok(HttpResponse::Ok().json(view(changed, &hosts, health.get(&changed.id))))
}
