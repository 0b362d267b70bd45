//! `/api/v1/batches` and `/api/v1/receipts`: campaign batches, their messages, receipts and
//! funnel.

use super::auth::ApiCaller;
use super::body::{form_fields, parse_json, read_body};
use super::error::{ApiError, ErrorCode};
use crate::db::entities::campaign_batch;
use crate::services::audit::Actor;
use crate::services::batches::export::{self, Filter, Messages};
use crate::services::batches::read::{self, MAX_FILE_BYTES, RecipientFile};
use crate::services::batches::receipts::{
    self, Aliyun, Incoming, Outcome, Plain, Report, Scope, Tencent,
};
use crate::services::batches::{self, BatchError, BatchFields, Created, RowResult, funnel};
use crate::state::AppState;
use actix_web::http::header::{CONTENT_DISPOSITION, CONTENT_TYPE};
use actix_web::web::Bytes;
use actix_web::{HttpRequest, HttpResponse, web};
use serde::Deserialize;
use serde_json::{Value, json};

/// A JSON request with its recipients; larger lists go as a CSV upload.
const JSON_LIMIT: usize = 16 * 1024 * 1024;
const RECEIPTS_LIMIT: usize = 8 * 1024 * 1024;

impl From<BatchError> for ApiError {
    fn from(err: BatchError) -> Self {
        let message = err.to_string();
        let field = |name: &str| Self::invalid(ErrorCode::InvalidValue, message.clone(), name);
        match err {
            BatchError::Db(err) => Self::Unavailable(err),
            BatchError::Link(err) => err.into(),
            BatchError::NotFound(_) => Self::NotFound(message),
            BatchError::NotYours(_) => Self::Forbidden(message),
            BatchError::BadSecret => Self::Unauthorized(message),
            BatchError::Purged(_) => Self::Conflict {
                code: ErrorCode::InvalidValue,
                message,
            },
            BatchError::NoName | BatchError::NameTooLong(_) => field("name"),
            BatchError::UnknownMode(_) => field("mode"),
            BatchError::UnknownRule(_) => field("rule"),
            BatchError::TokenLength { .. } | BatchError::TokensUsedUp(_) => field("length"),
            BatchError::NoPlaceholder
            | BatchError::SeveralPlaceholders(_)
            | BatchError::TemplateTooLong(_)
            | BatchError::MissingVariable(_)
            | BatchError::TooManyVariables => field("template"),
            BatchError::LinkChoice => field("url"),
            BatchError::NoRecipients
            | BatchError::TooManyRecipients(_)
            | BatchError::BadFile(_)
            | BatchError::NoPhoneColumn => field("recipients"),
        }
    }
}

/// The batch as the API shows it.
fn batch_view(batch: &campaign_batch::Model, base: &str) -> Value {
    json!({
        "id": batch.id,
        "name": batch.name,
        "mode": batch.mode,
        "length": batch.token_length,
        "template": batch.template,
        "variables": export::variables(batch),
        "recipients": batch.recipients,
        "rejected_count": batch.rejected,
        "max_segments": batch.max_segments,
        "grown_segments": batch.grown_segments,
        "created_at": chrono::Utc.from_utc_datetime(&batch.created_at).to_rfc3339(),
        "creator": batch.creator,
        "phones_deleted_at": batch.purged_at.map(|at| chrono::Utc.from_utc_datetime(&at).to_rfc3339()),
        "receipt_urls": {
            "aliyun": format!("{base}/api/v1/receipts/aliyun?batch={}&secret={}", batch.id, batch.secret),
            "tencent": format!("{base}/api/v1/receipts/tencent?batch={}&secret={}", batch.id, batch.secret),
        },
    })
}

use chrono::TimeZone;

/// `scheme://host` of the request, for the receipt URLs.
fn base_url(req: &HttpRequest) -> String {
    let info = req.connection_info();
    format!("{}://{}", info.scheme(), info.host())
}

#[derive(Deserialize)]
struct CreateBatch {
    #[serde(flatten)]
    fields: BatchFields,
    #[serde(default)]
    recipients: Vec<serde_json::Map<String, Value>>,
}

fn created_view(created: &Created, base: &str) -> Value {
    let mut view = batch_view(&created.batch, base);
    view["rejected"] = json!(
        created
            .rejected
            .iter()
            .map(|r| json!({"row": r.row, "error": r.error}))
            .collect::<Vec<_>>()
    );
    view
}

/// Create a batch: JSON with `recipients`, or a multipart upload with the same fields and a
/// CSV file `recipients` (a `phone` column, the others variables).
pub async fn create(
    caller: ApiCaller,
    state: web::Data<AppState>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let actor = caller.actor();
    let multipart = req
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("multipart/form-data"));
    let created = if multipart {
        let fields = form_fields(req.headers(), payload, MAX_FILE_BYTES + 64 * 1024).await?;
        let text = |name: &str| {
            fields
                .get(name)
                .map(|v| String::from_utf8_lossy(v).into_owned())
        };
        let spec = BatchFields {
            name: text("name").unwrap_or_default(),
            url: text("url"),
            code: text("code"),
            mode: text("mode"),
            length: BatchFields::length_of(&text("length").unwrap_or_default())?,
            template: text("template").unwrap_or_default(),
            rule: text("rule"),
        }
        .parse(&state.core)
        .await?;
        let file = fields.get("recipients").ok_or_else(|| {
            ApiError::bad(
                "the upload needs a file field 'recipients'",
                Some("recipients"),
            )
        })?;
        let file = RecipientFile::parse(file)?;
        batches::create(&state.core, spec, &file.columns(), file.rows(), &actor).await?
    } else {
        let body = read_body(payload, JSON_LIMIT).await?;
        let request: CreateBatch = parse_json(&body)?;
        let spec = request.fields.parse(&state.core).await?;
        if request.recipients.len() > batches::MAX_RECIPIENTS {
            return Err(BatchError::TooManyRecipients(request.recipients.len()).into());
        }
        let (columns, rows): (Vec<String>, Vec<RowResult>) = read::from_json(request.recipients);
        batches::create(&state.core, spec, &columns, rows.into_iter(), &actor).await?
    };
    Ok(HttpResponse::Created().json(created_view(&created, &base_url(&req))))
}

pub async fn list(
    caller: ApiCaller,
    state: web::Data<AppState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let base = base_url(&req);
    let all = batches::list(&state.core.db, &caller.actor())
        .await
        .map_err(ApiError::Unavailable)?;
    Ok(HttpResponse::Ok().json(json!({
        "items": all.iter().map(|b| batch_view(b, &base)).collect::<Vec<_>>()
    })))
}

pub async fn get(
    caller: ApiCaller,
    state: web::Data<AppState>,
    path: web::Path<i64>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let batch = batches::find(&state.core.db, path.into_inner(), &caller.actor()).await?;
    Ok(HttpResponse::Ok().json(batch_view(&batch, &base_url(&req))))
}

/// The funnel as JSON.
pub fn funnel_view(f: &funnel::Funnel) -> Value {
    let rows = |rows: &[funnel::Row]| {
        rows.iter()
            .map(|r| json!({"value": r.value, "delivered": r.delivered, "clicked": r.clicked, "clicks": r.clicks}))
            .collect::<Vec<_>>()
    };
    json!({
        "sent": f.sent,
        "delivered": f.delivered,
        "failed": f.failed,
        "clicked": f.clicked,
        "clicks": f.clicks,
        "ctr": f.ctr,
        "failed_by": f.failed_by_code.iter().map(|(code, n)| json!({"error_code": code, "failed": n})).collect::<Vec<_>>(),
        "median_minutes_to_first_click": f.median_minutes_to_click,
        "by": {
            "province": rows(&f.by_province),
            "city": rows(&f.by_city),
            "carrier": rows(&f.by_carrier),
        },
        "start": f.start_hour.and_then(|h| chrono::DateTime::from_timestamp(h * 3600, 0)).map(|at| at.to_rfc3339()),
        "hours": f.hours.iter().map(|h| json!({"hour": h.since_start, "delivered": h.delivered, "clicks": h.clicks})).collect::<Vec<_>>(),
    })
}

pub async fn funnel(
    caller: ApiCaller,
    state: web::Data<AppState>,
    path: web::Path<i64>,
) -> Result<HttpResponse, ApiError> {
    let batch = batches::find(&state.core.db, path.into_inner(), &caller.actor()).await?;
    let f = funnel::read(&state.core.db, &batch)
        .await
        .map_err(ApiError::Unavailable)?;
    Ok(HttpResponse::Ok().json(funnel_view(&f)))
}

/// A CSV answer written a page of recipients at a time.
pub fn csv_stream<F>(
    state: &AppState,
    messages: Messages,
    filter: Filter,
    header: String,
    rows: F,
    file: String,
) -> HttpResponse
where
    F: Fn(&Messages, &[export::Line]) -> String + 'static,
{
    use futures_util::StreamExt;
    let stream =
        export::pages(state.core.db.clone(), messages, filter, header, rows).map(
            |page| match page {
                Ok(text) => Ok(Bytes::from(text)),
                Err(err) => {
                    tracing::warn!(error = %err, "an export stopped: the database failed");
                    Err(actix_web::error::ErrorServiceUnavailable(
                        "the database failed",
                    ))
                }
            },
        );
    HttpResponse::Ok()
        .insert_header((CONTENT_TYPE, "text/csv; charset=utf-8"))
        .insert_header((
            CONTENT_DISPOSITION,
            format!("attachment; filename=\"{file}\""),
        ))
        .streaming(stream)
}

pub async fn messages(
    caller: ApiCaller,
    state: web::Data<AppState>,
    path: web::Path<i64>,
) -> Result<HttpResponse, ApiError> {
    let actor = caller.actor();
    messages_csv(&state, path.into_inner(), &actor).await
}

/// The messages CSV of batch `id`, audited (the UI answers with it too).
pub async fn messages_csv(
    state: &web::Data<AppState>,
    id: i64,
    actor: &Actor,
) -> Result<HttpResponse, ApiError> {
    let messages = export::open(&state.core, id, actor, "messages").await?;
    let file = format!("batch-{id}-messages.csv");
    Ok(csv_stream(
        state,
        messages,
        Filter::default(),
        export::MESSAGE_COLUMNS.join(","),
        export::message_rows,
        file,
    ))
}

#[derive(Deserialize)]
pub struct RecipientsQuery {
    clicked: Option<bool>,
    format: Option<String>,
}

pub async fn recipients(
    caller: ApiCaller,
    state: web::Data<AppState>,
    path: web::Path<i64>,
    query: web::Query<RecipientsQuery>,
) -> Result<HttpResponse, ApiError> {
    let actor = caller.actor();
    let json = match query.format.as_deref() {
        None | Some("csv") => false,
        Some("json") => true,
        Some(other) => {
            return Err(ApiError::invalid(
                ErrorCode::InvalidValue,
                format!("'{other}' is not a format; use csv or json"),
                "format",
            ));
        }
    };
    recipients_export(
        &state,
        path.into_inner(),
        &actor,
        Filter {
            clicked: query.clicked,
        },
        json,
    )
    .await
}

/// The recipients of batch `id` (those `filter` takes), as CSV or JSON, audited.
pub async fn recipients_export(
    state: &web::Data<AppState>,
    id: i64,
    actor: &Actor,
    filter: Filter,
    json: bool,
) -> Result<HttpResponse, ApiError> {
    let what = match filter.clicked {
        Some(false) => "recipients who did not click",
        Some(true) => "recipients who clicked",
        None => "recipients",
    };
    let messages = export::open(&state.core, id, actor, what).await?;
    let variables = export::variables(&messages.batch);
    if json {
        let mut items = Vec::new();
        let mut after = 0;
        loop {
            let lines = export::page(&state.core.db, id, after, filter)
                .await
                .map_err(ApiError::Unavailable)?;
            items.extend(lines.iter().map(|l| export::recipient_json(&messages, l)));
            match lines.last() {
                Some(last) if lines.len() as u32 == export::PAGE => after = last.number,
                _ => break,
            }
        }
        return Ok(HttpResponse::Ok().json(json!({ "items": items })));
    }
    let mut header: Vec<String> = export::RECIPIENT_COLUMNS
        .iter()
        .map(|c| c.to_string())
        .collect();
    header.extend(variables.iter().cloned());
    let file = format!("batch-{id}-recipients.csv");
    Ok(csv_stream(
        state,
        messages,
        filter,
        header.join(","),
        move |messages, lines| export::recipient_rows(messages, &variables, lines),
        file,
    ))
}

/// The answer to a delivery of receipts: counts, and what became of each one that was not
/// recorded (by its index in the list, or its line in the CSV).
fn report_view(report: &Report, first_row: usize) -> Value {
    let problems: Vec<Value> = report
        .outcomes
        .iter()
        .enumerate()
        .filter_map(|(i, outcome)| {
            let (status, error) = match outcome {
                Outcome::Recorded => return None,
                Outcome::Duplicate => ("duplicate", None),
                Outcome::Unmatched(why) => ("unmatched", Some(why.clone())),
                Outcome::Invalid(why) => ("invalid", Some(why.clone())),
            };
            Some(json!({"row": i + first_row, "status": status, "error": error}))
        })
        .take(1000)
        .collect();
    json!({
        "received": report.outcomes.len(),
        "recorded": report.count(|o| *o == Outcome::Recorded),
        "duplicates": report.count(|o| *o == Outcome::Duplicate),
        "unmatched": report.count(|o| matches!(o, Outcome::Unmatched(_))),
        "invalid": report.count(|o| matches!(o, Outcome::Invalid(_))),
        "problems": problems,
    })
}

/// Receipts for one batch: a CSV (`text/csv`, or a multipart file `receipts`) or a JSON list
/// of `{key | phone, delivered, error_code, at}`.
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
        let list: Vec<Value> = parse_json(&body)?;
        let incoming = list
            .into_iter()
            .map(|value| {
                let plain: Plain = serde_json::from_value(value).map_err(|err| err.to_string())?;
                let at = match plain.at.as_deref().map(receipts::provider_time) {
                    Some(None) => {
                        return Err(format!("'{}' is not a time", plain.at.unwrap_or_default()));
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

#[derive(Deserialize)]
pub struct CallbackQuery {
    batch: Option<i64>,
    secret: Option<String>,
}

/// Who sends provider receipts: a batch's secret URL, or an API key.
async fn provider_scope(
    state: &AppState,
    req: &HttpRequest,
    query: &CallbackQuery,
) -> Result<(Option<campaign_batch::Model>, Option<Actor>), ApiError> {
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
    ack: Value,
) -> Result<HttpResponse, ApiError> {
    let (batch, actor) = provider_scope(&state, &req, &query).await?;
    let body = read_body(payload, RECEIPTS_LIMIT).await?;
    let list: Vec<Value> = parse_json(&body)?;
    let incoming: Vec<Result<Incoming, String>> = list
        .into_iter()
        .map(|value| {
            serde_json::from_value::<T>(value)
                .map(Into::into)
                .map_err(|err| format!("the receipt is not valid: {err}"))
        })
        .collect();
    let scope = match (&batch, &actor) {
        (Some(batch), _) => Scope::Batch(batch),
        (None, Some(actor)) => Scope::Caller(actor),
        (None, None) => unreachable!("a scope is always found"),
    };
    let report = receipts::ingest(&state.core, scope, incoming).await?;
    let mut answer = report_view(&report, 0);
    if let (Value::Object(answer), Value::Object(ack)) = (&mut answer, ack) {
        answer.extend(ack);
    }
    Ok(HttpResponse::Ok().json(answer))
}

/// Aliyun SmsReport (answered with the `code: 0` Aliyun expects, so it does not retry).
pub async fn aliyun(
    state: web::Data<AppState>,
    req: HttpRequest,
    query: web::Query<CallbackQuery>,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    provider_receipts::<Aliyun>(
        state,
        req,
        query,
        payload,
        json!({"code": 0, "msg": "成功"}),
    )
    .await
}

/// Tencent Cloud SMS status callback (answered with the `result: 0` Tencent expects).
pub async fn tencent(
    state: web::Data<AppState>,
    req: HttpRequest,
    query: web::Query<CallbackQuery>,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    provider_receipts::<Tencent>(
        state,
        req,
        query,
        payload,
        json!({"result": 0, "errmsg": "OK"}),
    )
    .await
}
