//! Delivery receipts in: a batch's own (`POST /api/v1/batches/{id}/receipts`, JSON or CSV) and
//! the SMS providers' callbacks (`POST /api/v1/receipts/aliyun`, `…/tencent`), authenticated
//! by an API key or a batch's secret callback URL.

use super::auth::ApiCaller;
use super::batch_model::{CallbackQuery, PlainReceipt, ReceiptProblem, ReceiptReport};
use super::body::{form_fields, parse_json, read_body};
use super::error::{ApiError, ErrorBody};
use crate::db::entities::campaign_batch;
use crate::services::audit::Actor;
use crate::services::batches;
use crate::services::batches::receipts::{self, Aliyun, Incoming, Outcome, Report, Scope, Tencent};
use crate::state::AppState;
use actix_web::http::header::CONTENT_TYPE;
use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::Value;

/// The most a delivery of receipts may weigh.
const RECEIPTS_LIMIT: usize = 8 * 1024 * 1024;

/// The answer to a delivery of receipts: counts, and what became of each one that was not
/// recorded (by its index in the list, or its line in the CSV).
fn report_view(report: &Report, first_row: usize) -> ReceiptReport {
    let problems = report
        .outcomes
        .iter()
        .enumerate()
        .filter_map(|(i, outcome)| {
            let (status, error) = match outcome {
                Outcome::Recorded => return None,
                Outcome::Duplicate => ("duplicate", None),
                Outcome::Unmatched(why) => ("unmatched", Some(why.to_string())),
                Outcome::Invalid(why) => ("invalid", Some(why.to_string())),
            };
            Some(ReceiptProblem {
                row: i + first_row,
                status: status.to_owned(),
                error,
            })
        })
        .take(1000)
        .collect();
    ReceiptReport {
        received: report.outcomes.len(),
        recorded: report.count(|o| *o == Outcome::Recorded),
        duplicates: report.count(|o| *o == Outcome::Duplicate),
        unmatched: report.count(|o| matches!(o, Outcome::Unmatched(_))),
        invalid: report.count(|o| matches!(o, Outcome::Invalid(_))),
        problems,
        code: None,
        msg: None,
        result: None,
        errmsg: None,
    }
}

/// Send delivery receipts for a batch.
///
/// A JSON list of `{key | phone, delivered, error_code, at}`, or a
/// CSV (`text/csv`, or a multipart file `receipts`) with those columns. Matched by key, else
/// by phone; the same receipt twice changes nothing, a later one replaces an earlier one.
#[utoipa::path(
    post,
    path = "/api/v1/batches/{id}/receipts",
    tag = "batches",
    params(("id" = i64, Path, description = "The batch")),
    request_body = Vec<PlainReceipt>,
    responses(
        (status = 200, description = "What became of the receipts", body = ReceiptReport),
        (status = 400, description = "Malformed JSON, CSV or id", body = ErrorBody),
        (status = 401, description = "Missing, unknown, expired or revoked key", body = ErrorBody),
        (status = 403, description = "Another person's batch", body = ErrorBody),
        (status = 404, description = "No such batch", body = ErrorBody),
        (status = 413, description = "The body is too large", body = ErrorBody),
        (status = 422, description = "A CSV without the columns, or too many receipts", body = ErrorBody),
        (status = 429, description = "Over the key's rate limit", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
pub async fn batch_receipts(
    caller: ApiCaller,
    state: web::Data<AppState>,
    path: web::Path<i64>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let batch = batches::find(&state.core.db, path.into_inner(), &caller.actor()).await?;
    let kind = req
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_ascii_lowercase();
    let (incoming, first_row) = if kind.starts_with("multipart/form-data") {
        let fields = form_fields(req.headers(), payload, RECEIPTS_LIMIT).await?;
        let file = fields.get("receipts").ok_or_else(|| {
            ApiError::bad("the upload needs a file field 'receipts'", Some("receipts"))
        })?;
        (receipts::from_csv(file)?, 2)
    } else if kind.starts_with("text/csv") || kind.starts_with("text/plain") {
        (
            receipts::from_csv(&read_body(payload, RECEIPTS_LIMIT).await?)?,
            2,
        )
    } else {
        let body = read_body(payload, RECEIPTS_LIMIT).await?;
        // A list of objects, or the request is malformed; an object's fields are checked
        // row by row, so that one bad receipt does not refuse the others.
        let list: Vec<serde_json::Map<String, Value>> = parse_json(&body)?;
        let incoming = list
            .into_iter()
            .map(|value| {
                let plain: PlainReceipt =
                    super::body::read_value(Value::Object(value)).map_err(|err| {
                        crate::i18n::Message::new(t!("the receipt is not valid: {err}"))
                            .data("err", err)
                    })?;
                let at = match plain.at.as_deref().map(receipts::provider_time) {
                    Some(None) => {
                        return Err(crate::i18n::Message::new(t!("'{}' is not a time"))
                            .data("", plain.at.unwrap_or_default()));
                    }
                    Some(at) => at,
                    None => None,
                };
                Ok(Incoming {
                    key: plain.key,
                    phone: plain.phone,
                    delivered: plain.delivered,
                    error_code: plain.error_code,
                    at,
                })
            })
            .collect();
        (incoming, 0)
    };
    let report = receipts::ingest(&state.core, Scope::Batch(&batch), incoming).await?;
    Ok(HttpResponse::Ok().json(report_view(&report, first_row)))
}

/// Who sends provider receipts: a batch's secret URL, or an API key.
async fn provider_scope(
    state: &AppState,
    req: &HttpRequest,
    query: &CallbackQuery,
) -> Result<(Option<campaign_batch::Model>, Option<Actor>), ApiError> {
    if query
        .batch
        .is_some_and(|id| !(1..=super::batch_model::MAX_BATCH_ID).contains(&id))
    {
        return Err(ApiError::bad(
            "batch is a batch's id, from 1 to 1000000000000",
            Some("batch"),
        ));
    }
    match (&query.secret, query.batch) {
        (Some(secret), Some(id)) => Ok((
            Some(receipts::by_secret(&state.core, id, secret).await?),
            None,
        )),
        (Some(_), None) => Err(ApiError::bad(
            "a secret needs its batch: ?batch=ID&secret=…",
            Some("batch"),
        )),
        (None, batch) => {
            let caller = <ApiCaller as actix_web::FromRequest>::extract(req).await?;
            let actor = caller.actor();
            match batch {
                Some(id) => Ok((Some(batches::find(&state.core.db, id, &actor).await?), None)),
                None => Ok((None, Some(actor))),
            }
        }
    }
}

async fn provider_receipts<T: serde::de::DeserializeOwned + Into<Incoming>>(
    state: web::Data<AppState>,
    req: HttpRequest,
    query: web::Query<CallbackQuery>,
    payload: web::Payload,
) -> Result<ReceiptReport, ApiError> {
    let (batch, actor) = provider_scope(&state, &req, &query).await?;
    let body = read_body(payload, RECEIPTS_LIMIT).await?;
    // As for a batch's receipts: a list of objects, each checked on its own.
    let list: Vec<serde_json::Map<String, Value>> = parse_json(&body)?;
    let incoming: Vec<Result<Incoming, crate::i18n::Message>> = list
        .into_iter()
        .map(|value| {
            super::body::read_value::<T>(Value::Object(value))
                .map(Into::into)
                .map_err(|err| {
                    crate::i18n::Message::new(t!("the receipt is not valid: {err}"))
                        .data("err", err)
                })
        })
        .collect();
    let scope = match (&batch, &actor) {
        (Some(batch), _) => Scope::Batch(batch),
        (None, Some(actor)) => Scope::Caller(actor),
        (None, None) => unreachable!("a scope is always found"),
    };
    let report = receipts::ingest(&state.core, scope, incoming).await?;
    Ok(report_view(&report, 0))
}

/// Receive Aliyun SmsReport delivery receipts.
///
/// The JSON array Aliyun posts. Matched by `out_id` (the messages CSV's
/// `key`), else by phone in `batch` or in your newest batch with it. Authenticate with a key,
/// or with the batch's `receipt_urls` (`?batch=&secret=`). Answered with the `code: 0` Aliyun
/// expects, so that it does not retry.
#[utoipa::path(
    post,
    path = "/api/v1/receipts/aliyun",
    tag = "batches",
    params(CallbackQuery),
    request_body = Vec<Object>,
    responses(
        (status = 200, description = "What became of the receipts", body = ReceiptReport),
        (status = 400, description = "Malformed JSON or query", body = ErrorBody),
        (status = 401, description = "No key, or a secret that does not match", body = ErrorBody),
        (status = 403, description = "Another person's batch", body = ErrorBody),
        (status = 404, description = "No such batch", body = ErrorBody),
        (status = 413, description = "The body is too large", body = ErrorBody),
        (status = 422, description = "Too many receipts", body = ErrorBody),
        (status = 429, description = "Over the key's rate limit", body = ErrorBody),
    ),
    security((), ("api_key" = []))
)]
pub async fn aliyun(
    state: web::Data<AppState>,
    req: HttpRequest,
    query: web::Query<CallbackQuery>,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let mut report = provider_receipts::<Aliyun>(state, req, query, payload).await?;
    report.code = Some(0);
    report.msg = Some("成功".to_owned());
    Ok(HttpResponse::Ok().json(report))
}

/// Receive Tencent Cloud SMS delivery receipts.
///
/// The JSON array Tencent's status callback posts. Matched by
/// `SessionContext` / `ext` (the messages CSV's `key`), else by `nationcode` and `mobile`.
/// Answered with the `result: 0` Tencent expects.
#[utoipa::path(
    post,
    path = "/api/v1/receipts/tencent",
    tag = "batches",
    params(CallbackQuery),
    request_body = Vec<Object>,
    responses(
        (status = 200, description = "What became of the receipts", body = ReceiptReport),
        (status = 400, description = "Malformed JSON or query", body = ErrorBody),
        (status = 401, description = "No key, or a secret that does not match", body = ErrorBody),
        (status = 403, description = "Another person's batch", body = ErrorBody),
        (status = 404, description = "No such batch", body = ErrorBody),
        (status = 413, description = "The body is too large", body = ErrorBody),
        (status = 422, description = "Too many receipts", body = ErrorBody),
        (status = 429, description = "Over the key's rate limit", body = ErrorBody),
    ),
    security((), ("api_key" = []))
)]
pub async fn tencent(
    state: web::Data<AppState>,
    req: HttpRequest,
    query: web::Query<CallbackQuery>,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let mut report = provider_receipts::<Tencent>(state, req, query, payload).await?;
    report.result = Some(0);
    report.errmsg = Some("OK".to_owned());
    Ok(HttpResponse::Ok().json(report))
}
