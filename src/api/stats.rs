//! `GET /api/v1/links/{code}/stats`: a link's daily visits over a range, with the range's
//! distinct totals.

use super::auth::ApiCaller;
use super::error::{ApiError, ErrorBody};
use super::links::find;
use super::model::{DayStats, LinkStats, RangeStats, StatsQuery};
use crate::state::AppState;
use crate::stats::days::today;
use crate::stats::report::{self, Period, Scope};
use actix_web::{HttpResponse, web};

/// Daily visits of a link.
#[utoipa::path(
    get,
    path = "/api/v1/links/{code}/stats",
    tag = "links",
    params(("code" = String, Path, description = "The short code"), StatsQuery),
    responses(
        (status = 200, description = "Every day of the range", body = LinkStats),
        (status = 400, description = "A malformed date or range", body = ErrorBody),
        (status = 401, description = "Missing, unknown, expired or revoked key", body = ErrorBody),
        (status = 404, description = "No such code", body = ErrorBody),
        (status = 429, description = "Over the key's rate limit", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
pub async fn stats(
    _caller: ApiCaller,
    state: web::Data<AppState>,
    code: web::Path<String>,
    query: web::Query<StatsQuery>,
) -> Result<HttpResponse, ApiError> {
    for (field, value) in [("from", &query.from), ("to", &query.to)] {
        if value.as_deref().is_some_and(|v| v.trim().is_empty()) {
            return Err(ApiError::bad(
                format!("{field} is empty; give a date as YYYY-MM-DD or leave it out"),
                Some(field),
            ));
        }
    }
    let link = find(&state, &code).await?;
    let tz = state.core.settings.timezone;
    let period = Period::parse(None, query.from.as_deref(), query.to.as_deref(), today(tz))
        .map_err(|err| ApiError::bad(err.to_string(), Some(err.field())))?;
    let scope = Scope::Link(link.id);
    let days = report::daily(&state.core.db, scope, period.from, period.to).await?;
    let total = report::range_totals(
        &state.core.db,
        &state.core.kept,
        scope,
        period.from,
        period.to,
    )
    .await?;
    Ok(HttpResponse::Ok().json(LinkStats {
        code: link.compression_code.to_string(),
        from: period.from,
        to: period.to,
        timezone: tz.name().to_owned(),
        days: days
            .into_iter()
            .map(|d| DayStats {
                date: d.day,
                pv: d.visits.pv,
                uv: d.visits.uv,
                ip: d.visits.ip,
                effective: d.visits.effective,
                ineffective: d.visits.ineffective,
            })
            .collect(),
        total: RangeStats {
            pv: total.pv,
            uv: total.uv,
            ip: total.ip,
            effective: total.effective,
            ineffective: total.ineffective,
        },
    }))
}
