//! `/api/v1/batches`: campaign batches, their messages, recipients and funnel (receipts are
//! `receipts`').

use super::auth::ApiCaller;
use super::batch_model::{
    Batch, BatchList, CreateBatch, FailedBy, Funnel, FunnelBy, FunnelHour, FunnelRow, ReceiptUrls,
    RecipientList, RecipientsQuery, RejectedRow,
};
use super::body::{form_fields, parse_json, read_body};
use super::error::{ApiError, ErrorBody, ErrorCode};
use crate::db::entities::campaign_batch;
use crate::i18n::Lang;
use crate::services::batches::export::{self, Filter, Messages};
use crate::services::batches::read::{self, MAX_FILE_BYTES, RecipientFile};
use crate::services::batches::{self, BatchError, BatchFields, RowResult, funnel};
use crate::state::AppState;
use actix_web::http::header::CONTENT_TYPE;
use actix_web::{HttpRequest, HttpResponse, web};
use chrono::TimeZone;

/// A JSON request with its recipients; larger lists go as a CSV upload.
const JSON_LIMIT: usize = 16 * 1024 * 1024;

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
            | BatchError::ControlCharacter(_)
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
fn batch_view(batch: &campaign_batch::Model, base: &str) -> Batch {
    let utc = |at| chrono::Utc.from_utc_datetime(&at);
    Batch {
        id: batch.id,
        name: batch.name.clone(),
        mode: batch.mode.clone(),
        length: batch.token_length,
        template: batch.template.clone(),
        variables: export::variables(batch),
        recipients: batch.recipients,
        rejected_count: batch.rejected,
        max_segments: batch.max_segments,
        grown_segments: batch.grown_segments,
        created_at: utc(batch.created_at),
        creator: batch.creator.clone(),
        phones_deleted_at: batch.purged_at.map(utc),
        receipt_urls: ReceiptUrls {
            aliyun: format!(
                "{base}/api/v1/receipts/aliyun?batch={}&secret={}",
                batch.id, batch.secret
            ),
            tencent: format!(
                "{base}/api/v1/receipts/tencent?batch={}&secret={}",
                batch.id, batch.secret
            ),
        },
        rejected: None,
    }
}

/// `scheme://host` of the request, for the receipt URLs.
fn base_url(req: &HttpRequest) -> String {
    let info = req.connection_info();
    format!("{}://{}", info.scheme(), info.host())
}

fn is_multipart(req: &HttpRequest) -> bool {
    req.headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("multipart/form-data"))
}

/// Create a campaign batch: one message for many phones, each with a link of their own.
///
/// JSON with
/// `recipients`, or a `multipart/form-data` upload of the same fields with a CSV file
/// `recipients` (a `phone` column; the others are variables). Bad and duplicate rows are
/// listed in `rejected`; the others are added.
#[utoipa::path(
    post,
    path = "/api/v1/batches",
    tag = "batches",
    request_body = CreateBatch,
    responses(
        (status = 201, description = "The batch, with the rows turned away", body = Batch),
        (status = 400, description = "Malformed JSON or upload", body = ErrorBody),
        (status = 401, description = "Missing, unknown, expired or revoked key", body = ErrorBody),
        (status = 403, description = "The existing link is another person's", body = ErrorBody),
        (status = 404, description = "No link with that code", body = ErrorBody),
        (status = 413, description = "The body is too large", body = ErrorBody),
        (status = 422, description = "A bad field, a message without {link}, or no usable recipient", body = ErrorBody),
        (status = 429, description = "Over the key's rate limit", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
pub async fn create(
    caller: ApiCaller,
    state: web::Data<AppState>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let actor = caller.actor();
    let created = if is_multipart(&req) {
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
        let spec = BatchFields {
            name: request.name,
            url: request.url,
            code: request.code,
            mode: request.mode,
            length: request.length,
            template: request.template,
            rule: request.rule,
        }
        .parse(&state.core)
        .await?;
        if request.recipients.len() > batches::MAX_RECIPIENTS {
            return Err(BatchError::TooManyRecipients(request.recipients.len()).into());
        }
        let (columns, rows): (Vec<String>, Vec<RowResult>) = read::from_json(request.recipients);
        batches::create(&state.core, spec, &columns, rows.into_iter(), &actor).await?
    };
    let mut view = batch_view(&created.batch, &base_url(&req));
    view.rejected = Some(
        created
            .rejected
            .into_iter()
            .map(|r| RejectedRow {
                row: r.row,
                error: r.error.to_string(),
            })
            .collect(),
    );
    Ok(HttpResponse::Created().json(view))
}

/// List the batches you may see.
///
/// An operator's key sees its own; an admin's all of them; newest first.
#[utoipa::path(
    get,
    path = "/api/v1/batches",
    tag = "batches",
    responses(
        (status = 200, description = "The batches", body = BatchList),
        (status = 401, description = "Missing, unknown, expired or revoked key", body = ErrorBody),
        (status = 429, description = "Over the key's rate limit", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
pub async fn list(
    caller: ApiCaller,
    state: web::Data<AppState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let base = base_url(&req);
    let all = batches::list(&state.core.db, &caller.actor())
        .await
        .map_err(ApiError::Unavailable)?;
    Ok(HttpResponse::Ok().json(BatchList {
        items: all.iter().map(|b| batch_view(b, &base)).collect(),
    }))
}

/// Read one batch.
#[utoipa::path(
    get,
    path = "/api/v1/batches/{id}",
    tag = "batches",
    params(("id" = i64, Path, description = "The batch")),
    responses(
        (status = 200, description = "The batch", body = Batch),
        (status = 400, description = "A malformed id", body = ErrorBody),
        (status = 401, description = "Missing, unknown, expired or revoked key", body = ErrorBody),
        (status = 403, description = "Another person's batch", body = ErrorBody),
        (status = 404, description = "No such batch", body = ErrorBody),
        (status = 429, description = "Over the key's rate limit", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
pub async fn get(
    caller: ApiCaller,
    state: web::Data<AppState>,
    path: web::Path<i64>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let batch = batches::find(&state.core.db, path.into_inner(), &caller.actor()).await?;
    Ok(HttpResponse::Ok().json(batch_view(&batch, &base_url(&req))))
}

fn funnel_view(f: &funnel::Funnel) -> Funnel {
    let rows = |rows: &[funnel::Row]| -> Vec<FunnelRow> {
        rows.iter()
            .map(|r| FunnelRow {
                value: r.value.clone(),
                delivered: r.delivered,
                clicked: r.clicked,
                clicks: r.clicks,
            })
            .collect()
    };
    Funnel {
        sent: f.sent,
        delivered: f.delivered,
        failed: f.failed,
        clicked: f.clicked,
        clicks: f.clicks,
        ctr: f.ctr,
        failed_by: f
            .failed_by_code
            .iter()
            .map(|(code, n)| FailedBy {
                error_code: code.clone(),
                failed: *n,
            })
            .collect(),
        median_minutes_to_first_click: f.median_minutes_to_click,
        by: FunnelBy {
            province: rows(&f.by_province),
            city: rows(&f.by_city),
            carrier: rows(&f.by_carrier),
        },
        start: f
            .start_hour
            .and_then(|h| chrono::DateTime::from_timestamp(h * 3600, 0)),
        hours: f
            .hours
            .iter()
            .map(|h| FunnelHour {
                hour: h.since_start,
                delivered: h.delivered,
                clicks: h.clicks,
            })
            .collect(),
    }
}

/// The funnel of a batch.
///
/// Sent → delivered → people who clicked → CTR, failures by error code, the
/// median minutes from delivery to first click, hours, and the same by province, city and
/// carrier. Current within a counting interval of a receipt or a click.
#[utoipa::path(
    get,
    path = "/api/v1/batches/{id}/funnel",
    tag = "batches",
    params(("id" = i64, Path, description = "The batch")),
    responses(
        (status = 200, description = "The funnel", body = Funnel),
        (status = 400, description = "A malformed id", body = ErrorBody),
        (status = 401, description = "Missing, unknown, expired or revoked key", body = ErrorBody),
        (status = 403, description = "Another person's batch", body = ErrorBody),
        (status = 404, description = "No such batch", body = ErrorBody),
        (status = 429, description = "Over the key's rate limit", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
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
fn csv_stream<F>(
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
    let pages = export::pages(state.core.db.clone(), messages, filter, header, rows);
    crate::net::download::streamed("text/csv; charset=utf-8", &file, pages)
}

/// Download the messages of a batch, as a CSV for the SMS platform.
///
/// UTF-8 with BOM: `phone`,
/// `text`, `short_url`, `key` (put it into the provider's `out_id`), `segments`, `warning`.
/// Audited: it carries phone numbers.
#[utoipa::path(
    get,
    path = "/api/v1/batches/{id}/messages",
    tag = "batches",
    params(("id" = i64, Path, description = "The batch")),
    responses(
        (status = 200, description = "The messages", content_type = "text/csv", body = String),
        (status = 400, description = "A malformed id", body = ErrorBody),
        (status = 401, description = "Missing, unknown, expired or revoked key", body = ErrorBody),
        (status = 403, description = "Another person's batch", body = ErrorBody),
        (status = 404, description = "No such batch", body = ErrorBody),
        (status = 409, description = "The phone numbers were deleted (retention)", body = ErrorBody),
        (status = 429, description = "Over the key's rate limit", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
pub async fn messages(
    caller: ApiCaller,
    state: web::Data<AppState>,
    path: web::Path<i64>,
) -> Result<HttpResponse, ApiError> {
    let id = path.into_inner();
    let messages = export::open(&state.core, id, &caller.actor(), "messages").await?;
    Ok(csv_stream(
        &state,
        messages,
        Filter::default(),
        export::MESSAGE_COLUMNS.join(","),
        |messages, lines| export::message_rows(messages, lines, Lang::En),
        format!("batch-{id}-messages.csv"),
    ))
}

/// Export the recipients of a batch (those who did not click, for the next wave).
///
/// CSV (default) or JSON: `clicked=false` gives those who did not click,
/// for the next wave. Audited: it carries phone numbers.
#[utoipa::path(
    get,
    path = "/api/v1/batches/{id}/recipients",
    tag = "batches",
    params(("id" = i64, Path, description = "The batch"), RecipientsQuery),
    responses(
        (status = 200, description = "The recipients", content(
            (RecipientList = "application/json"),
            (String = "text/csv")
        )),
        (status = 400, description = "A malformed id or parameter", body = ErrorBody),
        (status = 401, description = "Missing, unknown, expired or revoked key", body = ErrorBody),
        (status = 403, description = "Another person's batch", body = ErrorBody),
        (status = 404, description = "No such batch", body = ErrorBody),
        (status = 409, description = "The phone numbers were deleted (retention)", body = ErrorBody),
        (status = 422, description = "An unknown format", body = ErrorBody),
        (status = 429, description = "Over the key's rate limit", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
pub async fn recipients(
    caller: ApiCaller,
    state: web::Data<AppState>,
    path: web::Path<i64>,
    query: web::Query<RecipientsQuery>,
) -> Result<HttpResponse, ApiError> {
    let id = path.into_inner();
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
    let filter = Filter {
        clicked: query.clicked,
    };
    let what = match filter.clicked {
        Some(false) => "recipients who did not click",
        Some(true) => "recipients who clicked",
        None => "recipients",
    };
    let messages = export::open(&state.core, id, &caller.actor(), what).await?;
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
        return Ok(HttpResponse::Ok().json(RecipientList { items }));
    }
    let variables = export::variables(&messages.batch);
    let mut header: Vec<String> = export::RECIPIENT_COLUMNS
        .iter()
        .map(|c| c.to_string())
        .collect();
    header.extend(variables.iter().cloned());
    Ok(csv_stream(
        &state,
        messages,
        filter,
        header.join(","),
        move |messages, lines| export::recipient_rows(messages, &variables, lines),
        format!("batch-{id}-recipients.csv"),
    ))
}
