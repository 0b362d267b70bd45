//! `/api/v1/sms`: count an SMS, or compose one around a new short link.

use super::auth::ApiCaller;
use super::body::{parse_json, read_body};
use super::error::{ApiError, ErrorBody, ErrorCode};
use super::links::{all_domains_of, view};
use super::model::{SmsCountRequest, SmsCountView, SmsRequest, SmsResult};
use crate::rules::TargetUrl;
use crate::rules::sms::{self, CountRule, SmsCount};
use crate::services::links;
use crate::services::sms::{self as composer, SmsDraft, SmsError};
use crate::state::AppState;
use actix_web::{HttpResponse, web};

const BODY_LIMIT: usize = 64 * 1024;

impl From<SmsError> for ApiError {
    fn from(err: SmsError) -> Self {
        let message = err.to_string();
        match err {
            SmsError::Link(err) => err.into(),
            SmsError::Db(err) => Self::Unavailable(err),
            SmsError::Segments => Self::invalid(ErrorCode::InvalidValue, message, "segments"),
            SmsError::NoActiveDomain => Self::invalid(ErrorCode::UnknownDomain, message, "domain"),
            SmsError::NoPlaceholder
            | SmsError::SeveralPlaceholders(_)
            | SmsError::TooLong(_)
            | SmsError::ControlCharacter(_)
            | SmsError::DoesNotFit { .. } => {
                Self::invalid(ErrorCode::InvalidValue, message, "message")
            }
        }
    }
}

fn rule(text: Option<&str>) -> Result<CountRule, ApiError> {
    match text {
        None => Ok(CountRule::Standard),
        Some(text) => CountRule::parse(text).ok_or_else(|| {
            ApiError::invalid(
                ErrorCode::InvalidValue,
                format!("'{text}' is not a counting rule; use standard or china"),
                "rule",
            )
        }),
    }
}

fn count_view(count: SmsCount) -> SmsCountView {
    SmsCountView {
        encoding: count.encoding.as_str().to_owned(),
        units: count.units,
        segments: count.segments,
        per_segment: count.per_segment,
        remaining: count.remaining,
    }
}

/// Compose an SMS around a new short link: the shortest active domain and the longest code
/// length that keep the message within `segments` are chosen, the link is created (unless
/// `create` is false), and the text as sent is returned with its segment count.
#[utoipa::path(
    post,
    path = "/api/v1/sms",
    tag = "sms",
    request_body = SmsRequest,
    responses(
        (status = 201, description = "The link was created; `text` is the message as sent", body = SmsResult),
        (status = 200, description = "`create` was false: the plan, with a stand-in code", body = SmsResult),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Missing, unknown, expired or revoked key", body = ErrorBody),
        (status = 422, description = "No {link} in the message, a bad URL, or a message that does not fit", body = ErrorBody),
        (status = 429, description = "Over the key's rate limit", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
pub async fn compose(
    caller: ApiCaller,
    state: web::Data<AppState>,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let input: SmsRequest = parse_json(&read_body(payload, BODY_LIMIT).await?)?;
    let rule = rule(input.rule.as_deref())?;
    let segments = usize::try_from(input.segments.unwrap_or(1)).unwrap_or(usize::MAX);
    let draft = SmsDraft::new(&input.message, input.signature.as_deref(), rule, segments)?;
    let target: TargetUrl = links::parse_target(&state.core, &input.url).await?;
    if input.create == Some(false) {
        let plan = composer::plan(&state.core, &draft).await?;
        return Ok(HttpResponse::Ok().json(SmsResult {
            text: plan.preview,
            count: count_view(plan.count),
            domain: plan.domain.host.clone(),
            length: plan.length.get(),
            warnings: plan.warnings.iter().map(ToString::to_string).collect(),
            link: None,
        }));
    }
    let composed = composer::compose(
        &state.core,
        &draft,
        target,
        input.description.filter(|d| !d.trim().is_empty()),
        Vec::new(),
        &caller.actor(),
    )
    .await?;
    let domains = all_domains_of(&state).await?;
    let tags = super::links::tags_for(&state, &[composed.saved.link.id]).await?;
    Ok(HttpResponse::Created().json(SmsResult {
        text: composed.text,
        count: count_view(composed.count),
        domain: composed.saved.domain.host.clone(),
        length: composed.saved.link.compression_code.len() as u8,
        warnings: composed.warnings.iter().map(ToString::to_string).collect(),
        link: Some(view(&composed.saved.link, &domains, &tags, &state)),
    }))
}

/// Count the segments of a text, without creating anything.
#[utoipa::path(
    post,
    path = "/api/v1/sms/count",
    tag = "sms",
    request_body = SmsCountRequest,
    responses(
        (status = 200, description = "The count of `message` as given (no link put in)", body = SmsCountView),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Missing, unknown, expired or revoked key", body = ErrorBody),
        (status = 422, description = "A counting rule other than standard or china", body = ErrorBody),
        (status = 429, description = "Over the key's rate limit", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
pub async fn count(_caller: ApiCaller, payload: web::Payload) -> Result<HttpResponse, ApiError> {
    let input: SmsCountRequest = parse_json(&read_body(payload, BODY_LIMIT).await?)?;
    let rule = rule(input.rule.as_deref())?;
    Ok(HttpResponse::Ok().json(count_view(sms::count(&input.message, rule))))
}
