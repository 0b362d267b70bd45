//! `GET /api/v1/events`: every stored click of a range of days, streamed as NDJSON or CSV.

use super::auth::ApiCaller;
use super::error::{ApiError, ErrorBody};
use super::links::find;
use crate::rules::Tag;
use crate::services::events::{self, Cursor, ExportFilter, Format};
use crate::state::AppState;
use crate::stats::days::today;
use actix_web::{HttpResponse, web};
use serde::Deserialize;
use utoipa::IntoParams;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EventsQuery {
    /// First day, YYYY-MM-DD, in the service's time zone (default: today).
    #[param(format = Date)]
    pub from: Option<String>,
    /// Last day, YYYY-MM-DD (default: `from`). At most 366 days.
    #[param(format = Date)]
    pub to: Option<String>,
    /// Only the clicks of this short code.
    pub link: Option<String>,
    /// Only the clicks of the links with this tag.
    pub tag: Option<String>,
    /// `ndjson` (default) or `csv`.
    pub format: Option<String>,
    /// Go on after this click: the `cursor` of the last line received.
    pub after: Option<String>,
}

fn date(value: Option<&str>, field: &'static str) -> Result<Option<chrono::NaiveDate>, ApiError> {
    match value.map(str::trim) {
        None => Ok(None),
        Some(text) => chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d")
            .map(Some)
            .map_err(|_| {
                ApiError::bad(
                    format!(
                        "{field} '{}' is not a date; use YYYY-MM-DD",
                        text.chars().take(40).collect::<String>()
                    ),
                    Some(field),
                )
            }),
    }
}

/// Every stored click of a range of days.
///
/// One per line, with readable fields: time (RFC 3339), code, link id, host, address (or its network, per `INKLINK_KEEP_ADDRESSES`),
/// visitor id, user agent, browser, OS, device, bot, referrer, query, country, province, city,
/// carrier, outcome, target rule, and the line's `cursor`. Streamed in constant memory; an
/// interrupted export goes on with `after`. Operator keys get the clicks of the links they
/// created; admin keys every click.
#[utoipa::path(
    get,
    path = "/api/v1/events",
    tag = "events",
    params(EventsQuery),
    responses(
        (status = 200, description = "The clicks, oldest first", content(
            (String = "application/x-ndjson"),
            (String = "text/csv")
        )),
        (status = 400, description = "A malformed date, range, format or cursor", body = ErrorBody),
        (status = 401, description = "Missing, unknown, expired or revoked key", body = ErrorBody),
        (status = 404, description = "No such code", body = ErrorBody),
        (status = 429, description = "Over the key's rate limit", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
pub async fn export(
    caller: ApiCaller,
    state: web::Data<AppState>,
    query: web::Query<EventsQuery>,
) -> Result<HttpResponse, ApiError> {
    let tz = state.core.settings.timezone;
    let from = date(query.from.as_deref(), "from")?.unwrap_or_else(|| today(tz));
    let to = date(query.to.as_deref(), "to")?.unwrap_or(from);
    let format = Format::parse(query.format.as_deref())
        .map_err(|err| ApiError::bad(err.to_string(), Some("format")))?;
    let after = query
        .after
        .as_deref()
        .map(Cursor::parse)
        .transpose()
        .map_err(|err| ApiError::bad(err.to_string(), Some("after")))?;
    let link = match query.link.as_deref() {
        Some(code) => Some(find(&state, code).await?.id),
        None => None,
    };
    let tag = query
        .tag
        .as_deref()
        .map(Tag::parse)
        .transpose()
        .map_err(|err| ApiError::bad(err.to_string(), Some("tag")))?;
    let filter = ExportFilter::new(from, to, link, tag, &caller.actor())
        .map_err(|err| ApiError::bad(err.to_string(), Some("from")))?;
    let pages = events::stream(state.core.db.clone(), tz, filter, after, format);
    let file = format!("inklink-events-{from}-{to}.{}", format.extension());
    Ok(crate::net::download::streamed(
        format.content_type(),
        &file,
        pages,
    ))
}
