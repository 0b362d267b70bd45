//! `/api/v1/webhooks`: subscriptions to inklink's events, their recent deliveries, a test
//! message and re-sending.

use super::auth::ApiCaller;
use super::body::{parse_json, read_body};
use super::error::{ApiError, ErrorBody, ErrorCode};
use crate::rules::webhook::{Events, WebhookError, WebhookUrl};
use crate::services::outbox::Subscription;
use crate::services::webhooks::{self, Delivery, NewWebhook, WebhookChange, WebhookServiceError};
use crate::state::AppState;
use actix_web::{HttpResponse, web};
use chrono::{DateTime, TimeZone, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

const BODY_LIMIT: usize = 64 * 1024;

impl From<WebhookServiceError> for ApiError {
    fn from(err: WebhookServiceError) -> Self {
        let message = err.to_string();
        match err {
            WebhookServiceError::Db(db) => Self::Unavailable(db),
            WebhookServiceError::NotFound(_) => Self::NotFound(message),
            WebhookServiceError::Internal(_) => {
                Self::invalid(ErrorCode::InvalidUrl, message, "url")
            }
            WebhookServiceError::DomainEventsForOperator => {
                Self::invalid(ErrorCode::InvalidValue, message, "events")
            }
            WebhookServiceError::TooMany(_) | WebhookServiceError::TooManyOfYours(_) => {
                Self::Conflict {
                    code: ErrorCode::InvalidValue,
                    message,
                }
            }
            WebhookServiceError::Invalid(err) => err.into(),
        }
    }
}

impl From<WebhookError> for ApiError {
    fn from(err: WebhookError) -> Self {
        let message = err.to_string();
        let field = match err {
            WebhookError::UrlEmpty
            | WebhookError::UrlTooLong
            | WebhookError::UrlInvalid(_)
            | WebhookError::UrlScheme
            | WebhookError::UrlCredentials => {
                return Self::invalid(ErrorCode::InvalidUrl, message, "url");
            }
            WebhookError::UnknownEvent(..) | WebhookError::NoEvents => "events",
            WebhookError::ClicksToRobot => "events",
            WebhookError::UnknownFormat(_) => "format",
            WebhookError::DescriptionTooLong => "description",
        };
        Self::invalid(ErrorCode::InvalidValue, message, field)
    }
}

/// A new subscription.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateWebhook {
    /// Where messages are POSTed: an `https://` (or `http://`) URL.
    #[schema(example = "https://crm.example.com/hooks/inklink")]
    pub url: String,
    /// The events wanted: `link.created`, `link.updated`, `link.deleted`, `link.clicked`,
    /// `batch.created`, `batch.purged`, `domain.suspect`, `domain.blocked`,
    /// `domain.recovered`, `domain.rotated` (domain events: admin keys only).
    #[schema(example = json!(["link.created", "link.clicked"]))]
    pub events: Vec<String>,
    /// `standard` (signed JSON, the default), or a chat group's robot: `wecom`, `feishu`,
    /// `dingtalk` (found from the URL's host when left out).
    pub format: Option<String>,
    pub description: Option<String>,
    /// The language a robot's messages are written in: `en` (default) or `zh-CN`.
    pub language: Option<String>,
}

/// A change: the fields given are set, the others left as they are.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PatchWebhook {
    pub url: Option<String>,
    pub events: Option<Vec<String>>,
    pub enabled: Option<bool>,
    pub description: Option<String>,
}

/// A subscription.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Webhook {
    pub id: i64,
    pub url: String,
    pub format: String,
    pub events: Vec<String>,
    pub description: String,
    pub enabled: bool,
    /// Who made it.
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    /// The signing secret (`whsec_…`): verify `webhook-signature` with it, as Standard
    /// Webhooks says. Shown when the subscription is made and read one by one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

/// One message to a subscription and what became of it.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct WebhookDelivery {
    /// The `webhook-id` of every attempt.
    pub id: String,
    pub event: String,
    /// `waiting`, `delivered`, `failed` (retried for a day) or `dropped` (outbox full).
    pub state: String,
    pub attempts: i32,
    /// Clicks it carries (`link.clicked`), else 1.
    pub items: i32,
    pub created_at: DateTime<Utc>,
    pub delivered_at: Option<DateTime<Utc>>,
    /// When the next attempt is due (waiting messages).
    pub next_attempt_at: Option<DateTime<Utc>>,
    pub last_status: Option<i32>,
    pub last_error: Option<String>,
}

/// How many messages were put back to be sent.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Resent {
    pub resent: u64,
}

fn at(ms: i64) -> DateTime<Utc> {
    Utc.timestamp_millis_opt(ms).single().unwrap_or_default()
}

fn view(s: &Subscription, with_secret: bool) -> Webhook {
    Webhook {
        id: s.id,
        url: s.url.clone(),
        format: s.format.as_str().to_owned(),
        events: s.events.names().into_iter().map(str::to_owned).collect(),
        description: s.description.clone(),
        enabled: s.enabled,
        created_by: s.owner_name.clone(),
        created_at: at(s.created_at),
        secret: with_secret.then(|| s.secret.as_str().to_owned()),
    }
}

fn delivery_view(d: &Delivery) -> WebhookDelivery {
    WebhookDelivery {
        id: d.msg_id.clone(),
        event: d.event.clone(),
        state: d.state_name().to_owned(),
        attempts: d.attempts,
        items: d.items,
        created_at: at(d.created_at),
        delivered_at: d.delivered_at.map(at),
        next_attempt_at: (d.state_name() == "waiting").then(|| at(d.next_at)),
        last_status: d.last_status,
        last_error: d.last_error.clone(),
    }
}

/// Subscribe a URL to events. The answer carries the signing secret.
#[utoipa::path(
    post,
    path = "/api/v1/webhooks",
    tag = "webhooks",
    request_body = CreateWebhook,
    responses(
        (status = 201, description = "The subscription, with its signing secret", body = Webhook),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Missing, unknown, expired or revoked key", body = ErrorBody),
        (status = 409, description = "Too many subscriptions", body = ErrorBody),
        (status = 413, description = "The body is too large", body = ErrorBody),
        (status = 422, description = "A bad URL (or one on an internal network), event or format", body = ErrorBody),
        (status = 429, description = "Over the key's rate limit", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
pub async fn create(
    caller: ApiCaller,
    state: web::Data<AppState>,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body: CreateWebhook = parse_json(&read_body(payload, BODY_LIMIT).await?)?;
    let new = NewWebhook::parse(
        &body.url,
        body.format.as_deref(),
        body.events.iter().map(String::as_str),
        body.description.as_deref(),
    )?;
    let language = match body.language.as_deref().map(str::trim) {
        None | Some("") => crate::i18n::Lang::En,
        Some(tag) => crate::i18n::Lang::from_tag(tag).ok_or_else(|| {
            ApiError::invalid(
                ErrorCode::InvalidValue,
                format!(
                    "'{}' is not a language of inklink; use en or zh-CN",
                    tag.chars().take(20).collect::<String>()
                ),
                "language",
            )
        })?,
    };
    let made = webhooks::create(&state.core, new, &caller.actor(), language.tag()).await?;
    Ok(HttpResponse::Created().json(view(&made, true)))
}

/// The subscriptions this key may see (an operator key's own; an admin key's, all).
#[utoipa::path(
    get,
    path = "/api/v1/webhooks",
    tag = "webhooks",
    responses(
        (status = 200, description = "The subscriptions, without their secrets", body = Vec<Webhook>),
        (status = 401, description = "Missing, unknown, expired or revoked key", body = ErrorBody),
        (status = 429, description = "Over the key's rate limit", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
pub async fn list(caller: ApiCaller, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let all = webhooks::list(&state.core.db, &caller.actor()).await?;
    let views: Vec<Webhook> = all.iter().map(|s| view(s, false)).collect();
    Ok(HttpResponse::Ok().json(views))
}

/// One subscription, with its signing secret.
#[utoipa::path(
    get,
    path = "/api/v1/webhooks/{id}",
    tag = "webhooks",
    params(("id" = i64, Path, description = "The subscription's id")),
    responses(
        (status = 200, description = "The subscription", body = Webhook),
        (status = 400, description = "The id is not a number", body = ErrorBody),
        (status = 401, description = "Missing, unknown, expired or revoked key", body = ErrorBody),
        (status = 404, description = "No such subscription (or another operator's)", body = ErrorBody),
        (status = 429, description = "Over the key's rate limit", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
pub async fn get(
    caller: ApiCaller,
    state: web::Data<AppState>,
    id: web::Path<i64>,
) -> Result<HttpResponse, ApiError> {
    let found = webhooks::get(&state.core.db, *id, &caller.actor()).await?;
    Ok(HttpResponse::Ok().json(view(&found, true)))
}

/// Change a subscription's URL, events, description, or turn it off and on.
#[utoipa::path(
    patch,
    path = "/api/v1/webhooks/{id}",
    tag = "webhooks",
    params(("id" = i64, Path, description = "The subscription's id")),
    request_body = PatchWebhook,
    responses(
        (status = 200, description = "The subscription as changed", body = Webhook),
        (status = 400, description = "Malformed JSON or id", body = ErrorBody),
        (status = 401, description = "Missing, unknown, expired or revoked key", body = ErrorBody),
        (status = 404, description = "No such subscription (or another operator's)", body = ErrorBody),
        (status = 413, description = "The body is too large", body = ErrorBody),
        (status = 422, description = "A bad URL, event or description", body = ErrorBody),
        (status = 429, description = "Over the key's rate limit", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
pub async fn update(
    caller: ApiCaller,
    state: web::Data<AppState>,
    id: web::Path<i64>,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body: PatchWebhook = parse_json(&read_body(payload, BODY_LIMIT).await?)?;
    let change = WebhookChange {
        url: body.url.as_deref().map(WebhookUrl::parse).transpose()?,
        events: body
            .events
            .as_ref()
            .map(|events| Events::parse(events.iter().map(String::as_str)))
            .transpose()?,
        enabled: body.enabled,
        description: body
            .description
            .as_deref()
            .map(crate::rules::webhook::description)
            .transpose()?,
    };
    let changed = webhooks::update(&state.core, *id, change, &caller.actor()).await?;
    Ok(HttpResponse::Ok().json(view(&changed, false)))
}

/// Delete a subscription and its undelivered messages.
#[utoipa::path(
    delete,
    path = "/api/v1/webhooks/{id}",
    tag = "webhooks",
    params(("id" = i64, Path, description = "The subscription's id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, description = "The id is not a number", body = ErrorBody),
        (status = 401, description = "Missing, unknown, expired or revoked key", body = ErrorBody),
        (status = 404, description = "No such subscription (or another operator's)", body = ErrorBody),
        (status = 429, description = "Over the key's rate limit", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
pub async fn delete(
    caller: ApiCaller,
    state: web::Data<AppState>,
    id: web::Path<i64>,
) -> Result<HttpResponse, ApiError> {
    webhooks::delete(&state.core, *id, &caller.actor()).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// The subscription's newest 50 messages and what became of each.
#[utoipa::path(
    get,
    path = "/api/v1/webhooks/{id}/deliveries",
    tag = "webhooks",
    params(("id" = i64, Path, description = "The subscription's id")),
    responses(
        (status = 200, description = "Newest first", body = Vec<WebhookDelivery>),
        (status = 400, description = "The id is not a number", body = ErrorBody),
        (status = 401, description = "Missing, unknown, expired or revoked key", body = ErrorBody),
        (status = 404, description = "No such subscription (or another operator's)", body = ErrorBody),
        (status = 429, description = "Over the key's rate limit", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
pub async fn deliveries(
    caller: ApiCaller,
    state: web::Data<AppState>,
    id: web::Path<i64>,
) -> Result<HttpResponse, ApiError> {
    let found = webhooks::deliveries(&state.core.db, *id, &caller.actor()).await?;
    let views: Vec<WebhookDelivery> = found.iter().map(delivery_view).collect();
    Ok(HttpResponse::Ok().json(views))
}

/// Send the subscription a test message (`webhook.test`).
#[utoipa::path(
    post,
    path = "/api/v1/webhooks/{id}/test",
    tag = "webhooks",
    params(("id" = i64, Path, description = "The subscription's id")),
    responses(
        (status = 202, description = "Queued; see the deliveries for the outcome"),
        (status = 400, description = "The id is not a number", body = ErrorBody),
        (status = 401, description = "Missing, unknown, expired or revoked key", body = ErrorBody),
        (status = 404, description = "No such subscription (or another operator's)", body = ErrorBody),
        (status = 429, description = "Over the key's rate limit", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
pub async fn test(
    caller: ApiCaller,
    state: web::Data<AppState>,
    id: web::Path<i64>,
) -> Result<HttpResponse, ApiError> {
    webhooks::send_test(&state.core, *id, &caller.actor()).await?;
    Ok(HttpResponse::Accepted().finish())
}

/// Send the subscription's failed and dropped messages again.
#[utoipa::path(
    post,
    path = "/api/v1/webhooks/{id}/resend",
    tag = "webhooks",
    params(("id" = i64, Path, description = "The subscription's id")),
    responses(
        (status = 200, description = "How many were put back", body = Resent),
        (status = 400, description = "The id is not a number", body = ErrorBody),
        (status = 401, description = "Missing, unknown, expired or revoked key", body = ErrorBody),
        (status = 404, description = "No such subscription (or another operator's)", body = ErrorBody),
        (status = 429, description = "Over the key's rate limit", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
pub async fn resend(
    caller: ApiCaller,
    state: web::Data<AppState>,
    id: web::Path<i64>,
) -> Result<HttpResponse, ApiError> {
    let resent = webhooks::resend_failed(&state.core, *id, &caller.actor()).await?;
    Ok(HttpResponse::Ok().json(Resent { resent }))
}
