//! Sending a long file (a CSV or NDJSON export) as it is read, page by page: the admin UI and
//! the API stream their exports this way. A database failure part-way ends the download (the
//! client sees it cut short); it is logged, the file is never padded with an error text.

use actix_web::HttpResponse;
use actix_web::http::header::{CONTENT_DISPOSITION, CONTENT_TYPE};
use actix_web::web::Bytes;
use futures_util::{Stream, StreamExt};

/// An attachment named `file` of type `content_type`, sent as `pages` yields it.
pub fn streamed<S>(content_type: &str, file: &str, pages: S) -> HttpResponse
where
    S: Stream<Item = Result<String, sea_orm::DbErr>> + 'static,
{
    let body = pages.map(|page| match page {
        Ok(text) => Ok(Bytes::from(text)),
        Err(err) => {
            tracing::warn!(error = %err, "an export stopped: the database failed");
            Err(actix_web::error::ErrorServiceUnavailable(
                "the database failed",
            ))
        }
    });
    HttpResponse::Ok()
        .insert_header((CONTENT_TYPE, content_type.to_owned()))
        .insert_header((
            CONTENT_DISPOSITION,
            format!("attachment; filename=\"{file}\""),
        ))
        .streaming(body)
}
