//! The Batches pages: a campaign batch made from a CSV upload, its messages and receipts, and
//! its funnel. Every action calls the same services as the API.

use crate::admin::access::auth::CurrentUser;
use crate::admin::error::AdminError;
use crate::admin::pages::{Frame, human_time, render, see_other};
use crate::db::entities::campaign_batch;
use crate::i18n::Message;
use crate::i18n::Says;
use crate::i18n::Text;
use crate::net::upload::{self, UploadError};
use crate::rules::Phone;
use crate::services::batches::export::{self, Filter, Messages};
use crate::services::batches::funnel::{self, Funnel};
use crate::services::batches::read::{MAX_FILE_BYTES, RecipientFile};
use crate::services::batches::receipts::{self, Outcome, Scope};
use crate::services::batches::{self, BatchError, BatchFields, Rejected};
use crate::state::AppState;
use crate::stats::dimension::Dimension;
use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;
use std::collections::HashMap;

impl From<BatchError> for AdminError {
    fn from(err: BatchError) -> Self {
        let message = err.says();
        match err {
            BatchError::NotFound(_) => Self::NotFound,
            BatchError::NotYours(_) => Self::Denied(message),
            BatchError::Db(db) => Self::Db(db),
            BatchError::Link(err) => err.into(),
            _ => Self::Refused(message),
        }
    }
}

/// A batch in the list.
pub struct Row {
    pub id: i64,
    pub name: String,
    pub mode: String,
    pub recipients: i64,
    pub rejected: i64,
    pub created: String,
    pub ready: bool,
}

#[derive(Template)]
#[template(path = "admin/batches.html")]
struct ListPage {
    frame: Frame,
    rows: Vec<Row>,
    error: Option<crate::i18n::Message>,
    form: Form,
}

/// What the new-batch form had, to show it again after a mistake.
#[derive(Default)]
struct Form {
    name: String,
    url: String,
    code: String,
    mode: String,
    length: String,
    template: String,
    rule: String,
}

async fn list_page(
    state: &AppState,
    user: &CurrentUser,
    error: Option<crate::i18n::Message>,
    form: Form,
) -> Result<ListPage, AdminError> {
    let rows = batches::list(&state.core.db, &user.actor())
        .await?
        .into_iter()
        .map(|b| Row {
            id: b.id,
            name: b.name,
            mode: b.mode,
            recipients: b.recipients,
            rejected: b.rejected,
            created: human_time(b.created_at, user.tz),
            ready: b.ready,
        })
        .collect();
    let flash = if error.is_none() {
        user.take_flash()
    } else {
        None
    };
    Ok(ListPage {
        frame: Frame::new(user, flash, "batches"),
        rows,
        error,
        form,
    })
}

pub async fn list(
    user: CurrentUser,
    state: web::Data<AppState>,
) -> Result<HttpResponse, AdminError> {
    let page = list_page(&state, &user, None, Form::default()).await?;
    Ok(render(StatusCode::OK, &page))
}

/// A message shown in the page's preview.
pub struct Preview {
    pub phone: String,
    pub text: String,
    pub segments: usize,
    pub grew: bool,
}

/// One row of a breakdown table, with its click-through rate.
pub struct BreakdownRow {
    pub value: String,
    pub delivered: i64,
    pub clicked: i64,
    pub clicks: i64,
    pub ctr: String,
}

#[derive(Template)]
#[template(path = "admin/batch.html")]
struct BatchPage {
    frame: Frame,
    batch: campaign_batch::Model,
    created: String,
    purged: Option<String>,
    link: String,
    previews: Vec<Preview>,
    funnel: Funnel,
    ctr: String,
    failed_by: Vec<(String, i64)>,
    breakdowns: Vec<(Text, Vec<BreakdownRow>)>,
    province_chart: String,
    hours_chart: String,
    rejected: Vec<Rejected>,
    error: Option<crate::i18n::Message>,
    aliyun_url: String,
    tencent_url: String,
}

fn percent(part: i64, whole: i64) -> String {
    match whole {
        0 => "–".to_owned(),
        whole => format!("{:.1}%", part as f64 * 100.0 / whole as f64),
    }
}

fn base_url(req: &HttpRequest) -> String {
    let info = req.connection_info();
    format!("{}://{}", info.scheme(), info.host())
}

async fn batch_page(
    state: &AppState,
    user: &CurrentUser,
    req: &HttpRequest,
    batch: campaign_batch::Model,
    rejected: Vec<Rejected>,
    error: Option<crate::i18n::Message>,
) -> Result<BatchPage, AdminError> {
    let db = &state.core.db;
    let funnel = funnel::read(db, &batch).await?;
    let (previews, link) = match Messages::load(&state.core, batch.clone()).await {
        Ok(messages) => {
            let lines = export::page(db, batch.id, 0, Filter::default()).await?;
            let previews = lines
                .iter()
                .take(3)
                .map(|line| {
                    let (text, segments) = messages.message(line);
                    Preview {
                        phone: line
                            .phone
                            .clone()
                            .map(|p| Phone::stored(p).masked())
                            .unwrap_or_default(),
                        text,
                        segments,
                        grew: messages.grew(segments),
                    }
                })
                .collect();
            (previews, messages.url_for("…"))
        }
        Err(BatchError::Purged(_)) => (Vec::new(), String::new()),
        Err(err) => return Err(err.into()),
    };
    // Places in the reader's language where the GeoIP database named them; carriers are
    // inklink's own words (`other`).
    let mut places = Vec::with_capacity(2);
    for (dimension, rows) in [
        (Dimension::Province, &funnel.by_province),
        (Dimension::City, &funnel.by_city),
    ] {
        let values: Vec<&str> = rows.iter().map(|r| r.value.as_str()).collect();
        places.push(super::dashboard::places_in(db, dimension, &values, user.lang).await?);
    }
    let rows = |rows: &[funnel::Row], names: Option<&HashMap<String, String>>| {
        rows.iter()
            .map(|r| BreakdownRow {
                value: match names {
                    None => super::dashboard::carrier_in(&r.value, user.lang).to_owned(),
                    Some(names) => names.get(&r.value).unwrap_or(&r.value).clone(),
                },
                delivered: r.delivered,
                clicked: r.clicked,
                clicks: r.clicks,
                ctr: percent(r.clicked, r.delivered),
            })
            .collect::<Vec<BreakdownRow>>()
    };
    let province_chart = crate::charts::horizontal_bars(
        &funnel
            .by_province
            .iter()
            .filter(|r| !r.value.is_empty())
            .take(15)
            .map(|r| {
                let name = places[0].get(&r.value).unwrap_or(&r.value);
                (name.clone(), r.clicked)
            })
            .collect::<Vec<_>>(),
    );
    let hours_chart = crate::charts::horizontal_bars(
        &funnel
            .hours
            .iter()
            .take(48)
            .map(|h| (format!("+{} h", h.since_start), h.clicks))
            .collect::<Vec<_>>(),
    );
    let base = base_url(req);
    Ok(BatchPage {
        frame: Frame::new(user, user.take_flash(), "batches"),
        created: human_time(batch.created_at, user.tz),
        purged: batch.purged_at.map(|at| human_time(at, user.tz)),
        link,
        previews,
        ctr: percent(funnel.clicked, funnel.delivered),
        failed_by: funnel.failed_by_code.clone(),
        breakdowns: vec![
            (t!("Province"), rows(&funnel.by_province, Some(&places[0]))),
            (t!("City"), rows(&funnel.by_city, Some(&places[1]))),
            (t!("Carrier"), rows(&funnel.by_carrier, None)),
        ],
        province_chart,
        hours_chart,
        funnel,
        rejected,
        error,
        aliyun_url: format!(
            "{base}/api/v1/receipts/aliyun?batch={}&secret={}",
            batch.id, batch.secret
        ),
        tencent_url: format!(
            "{base}/api/v1/receipts/tencent?batch={}&secret={}",
            batch.id, batch.secret
        ),
        batch,
    })
}

pub async fn show(
    user: CurrentUser,
    state: web::Data<AppState>,
    req: HttpRequest,
    id: web::Path<i64>,
) -> Result<HttpResponse, AdminError> {
    let batch = batches::find(&state.core.db, id.into_inner(), &user.actor()).await?;
    let page = batch_page(&state, &user, &req, batch, Vec::new(), None).await?;
    Ok(render(StatusCode::OK, &page))
}

async fn read_upload(
    req: &HttpRequest,
    payload: web::Payload,
    limit: usize,
) -> Result<std::collections::HashMap<String, Vec<u8>>, AdminError> {
    upload::fields(req.headers(), payload, limit)
        .await
        .map_err(|err| match err {
            err @ UploadError::TooLarge { .. } => AdminError::Refused(err.says()),
            err @ UploadError::Unreadable => AdminError::BadRequest(err.says()),
        })
}

pub async fn create(
    user: CurrentUser,
    state: web::Data<AppState>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, AdminError> {
    let fields = read_upload(&req, payload, MAX_FILE_BYTES + 64 * 1024).await?;
    let text = |name: &str| upload::text(&fields, name);
    user.check_csrf(&text("csrf"))?;
    let form = Form {
        name: text("name"),
        url: text("url"),
        code: text("code"),
        mode: text("mode"),
        length: text("length"),
        template: text("template"),
        rule: text("rule"),
    };
    let made = async {
        let spec = BatchFields {
            name: form.name.clone(),
            url: Some(form.url.clone()),
            code: Some(form.code.clone()),
            mode: Some(form.mode.clone()),
            length: BatchFields::length_of(&form.length)?,
            template: form.template.clone(),
            rule: Some(form.rule.clone()),
        }
        .parse(&state.core)
        .await?;
        let file = fields
            .get("recipients")
            .filter(|f| !f.is_empty())
            .ok_or(BatchError::NoRecipients)?;
        let file = RecipientFile::parse(file)?;
        batches::create(
            &state.core,
            spec,
            &file.columns(),
            file.rows(),
            &user.actor(),
        )
        .await
    }
    .await;
    match made {
        Ok(created) => {
            let page =
                batch_page(&state, &user, &req, created.batch, created.rejected, None).await?;
            Ok(render(StatusCode::CREATED, &page))
        }
        Err(BatchError::Db(err)) => Err(err.into()),
        Err(err @ (BatchError::NotYours(_) | BatchError::NotFound(_))) => Err(err.into()),
        Err(err) => {
            let page = list_page(&state, &user, Some(err.says()), form).await?;
            Ok(render(StatusCode::UNPROCESSABLE_ENTITY, &page))
        }
    }
}

pub async fn upload_receipts(
    user: CurrentUser,
    state: web::Data<AppState>,
    req: HttpRequest,
    id: web::Path<i64>,
    payload: web::Payload,
) -> Result<HttpResponse, AdminError> {
    let batch = batches::find(&state.core.db, id.into_inner(), &user.actor()).await?;
    let fields = read_upload(&req, payload, 8 << 20).await?;
    user.check_csrf(&upload::text(&fields, "csrf"))?;
    let file = fields.get("receipts").cloned().unwrap_or_default();
    let result = match receipts::from_csv(&file) {
        Ok(incoming) => receipts::ingest(&state.core, Scope::Batch(&batch), incoming).await,
        Err(err) => Err(err),
    };
    let (report, error) = match result {
        Ok(report) => {
            let mut parts = vec![
                Message::new(t!("{} receipts recorded"))
                    .data("", report.count(|o| *o == Outcome::Recorded)),
                Message::new(t!("{} were there already"))
                    .data("", report.count(|o| *o == Outcome::Duplicate)),
                Message::new(t!("{} matched no recipient"))
                    .data("", report.count(|o| matches!(o, Outcome::Unmatched(_)))),
            ];
            if let Some((line, why)) = report.outcomes.iter().enumerate().find_map(|(i, o)| match o
            {
                Outcome::Invalid(why) => Some((i + 2, why.clone())),
                _ => None,
            }) {
                parts.push(
                    Message::new(t!("line {line}: {reason}"))
                        .data("line", line)
                        .message("reason", why),
                );
            }
            (Some(Message::Parts(parts)), None)
        }
        Err(BatchError::Db(err)) => return Err(err.into()),
        Err(err) => (None, Some(err.says())),
    };
    if let Some(report) = report {
        // Back to the batch's own address, so that a reload or a language switch stays there.
        user.flash(report);
        return Ok(see_other(&format!("/admin/batches/{}", batch.id)));
    }
    let page = batch_page(&state, &user, &req, batch, Vec::new(), error).await?;
    Ok(render(StatusCode::UNPROCESSABLE_ENTITY, &page))
}

fn csv_answer(
    state: &AppState,
    messages: Messages,
    filter: Filter,
    header: String,
    rows: impl Fn(&Messages, &[export::Line]) -> String + 'static,
    file: String,
) -> HttpResponse {
    let pages = export::pages(state.core.db.clone(), messages, filter, header, rows);
    crate::net::download::streamed("text/csv; charset=utf-8", &file, pages)
}

pub async fn messages_csv(
    user: CurrentUser,
    state: web::Data<AppState>,
    id: web::Path<i64>,
) -> Result<HttpResponse, AdminError> {
    let id = id.into_inner();
    let messages = export::open(&state.core, id, &user.actor(), "messages").await?;
    Ok(csv_answer(
        &state,
        messages,
        Filter::default(),
        export::MESSAGE_COLUMNS.join(","),
        move |messages, lines| export::message_rows(messages, lines, user.lang),
        format!("batch-{id}-messages.csv"),
    ))
}

#[derive(serde::Deserialize)]
pub struct RecipientsQuery {
    clicked: Option<bool>,
}

pub async fn recipients_csv(
    user: CurrentUser,
    state: web::Data<AppState>,
    id: web::Path<i64>,
    query: web::Query<RecipientsQuery>,
) -> Result<HttpResponse, AdminError> {
    let id = id.into_inner();
    let what = match query.clicked {
        Some(false) => "recipients who did not click",
        Some(true) => "recipients who clicked",
        None => "recipients",
    };
    let messages = export::open(&state.core, id, &user.actor(), what).await?;
    let variables = export::variables(&messages.batch);
    let mut header: Vec<String> = export::RECIPIENT_COLUMNS
        .iter()
        .map(|c| c.to_string())
        .collect();
    header.extend(variables.iter().cloned());
    Ok(csv_answer(
        &state,
        messages,
        Filter {
            clicked: query.clicked,
        },
        header.join(","),
        move |messages, lines| export::recipient_rows(messages, &variables, lines),
        format!("batch-{id}-recipients.csv"),
    ))
}
