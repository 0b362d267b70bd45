//! CSV import (upload → results to download) and export of the filtered list.

use crate::admin::access::auth::CurrentUser;
use crate::admin::error::AdminError;
use crate::admin::links::FilterForm;
use crate::admin::pages::{Frame, render};
use crate::i18n::Message;
use crate::i18n::Says;
use crate::net::upload;
use crate::services::links::bulk::{self, ImportError, RowOutcome};
use crate::state::AppState;
use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;
use base64::Engine;

/// Generous for 10,000 rows of long URLs, small enough to keep in memory.
const MAX_UPLOAD: usize = 16 << 20;
/// Errors listed on the page; the results file has all of them.
const SHOWN_ERRORS: usize = 100;

#[derive(Template)]
#[template(path = "admin/import.html")]
struct ImportPage {
    frame: Frame,
    error: Option<crate::i18n::Message>,
    report: Option<Report>,
}

struct Report {
    created: usize,
    failed: usize,
    errors: Vec<RowOutcome>,
    download: String,
}

pub async fn form(user: CurrentUser) -> HttpResponse {
    let page = ImportPage {
        frame: Frame::new(&user, None, "links"),
        error: None,
        report: None,
    };
    render(StatusCode::OK, &page)
}

/// The form's CSRF token and file (the limit is on both together).
async fn read_upload(
    req: &HttpRequest,
    payload: web::Payload,
) -> Result<(String, Vec<u8>), Message> {
    let mut fields = upload::fields(req.headers(), payload, MAX_UPLOAD)
        .await
        .map_err(|err| err.says())?;
    let csrf = upload::text(&fields, "csrf");
    Ok((csrf, fields.remove("file").unwrap_or_default()))
}

pub async fn upload(
    user: CurrentUser,
    state: web::Data<AppState>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, AdminError> {
    let (csrf, file) = match read_upload(&req, payload).await {
        Ok(parts) => parts,
        Err(message) => {
            let page = ImportPage {
                frame: Frame::new(&user, None, "links"),
                error: Some(message),
                report: None,
            };
            return Ok(render(StatusCode::BAD_REQUEST, &page));
        }
    };
    user.check_csrf(&csrf)?;
    let outcomes = match bulk::import(&state.core, &file, &user.actor(), user.tz).await {
        Ok(outcomes) => outcomes,
        Err(ImportError::Db(err)) => return Err(err.into()),
        Err(err) => {
            let page = ImportPage {
                frame: Frame::new(&user, None, "links"),
                error: Some(err.says()),
                report: None,
            };
            return Ok(render(StatusCode::UNPROCESSABLE_ENTITY, &page));
        }
    };
    let failed = outcomes.iter().filter(|row| row.result.is_err()).count();
    // The results file gives each row's problem in the person's language.
    let csv = bulk::results_csv(&outcomes, user.lang);
    let report = Report {
        created: outcomes.len() - failed,
        failed,
        errors: outcomes
            .iter()
            .filter(|row| row.result.is_err())
            .take(SHOWN_ERRORS)
            .cloned()
            .collect(),
        download: format!(
            "data:text/csv;charset=utf-8;base64,{}",
            base64::engine::general_purpose::STANDARD
                .encode(crate::admin::download::for_excel(&csv).as_bytes())
        ),
    };
    let page = ImportPage {
        frame: Frame::new(&user, None, "links"),
        error: None,
        report: Some(report),
    };
    Ok(render(StatusCode::OK, &page))
}

pub async fn export(
    user: CurrentUser,
    state: web::Data<AppState>,
    form: web::Query<FilterForm>,
) -> Result<HttpResponse, AdminError> {
    let csv = bulk::export_csv(&state.core.db, &form.filter(), user.tz).await?;
    let name = format!(
        "inklink-links-{}.csv",
        chrono::Utc::now().format("%Y%m%d-%H%M")
    );
    Ok(crate::admin::download::attachment(&csv, &name))
}

/// An empty import file with every column and an example row, ready for Excel.
pub async fn template(_user: CurrentUser) -> HttpResponse {
    crate::admin::download::attachment(&bulk::import_template(), "inklink-import-template.csv")
}
