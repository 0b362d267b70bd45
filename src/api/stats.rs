//! Statistics through the API: a link's, a tag's links' and every link's daily visits over a
//! range, with the range's distinct totals and, when asked, one dimension's breakdown, as the
//! dashboards have them.

use super::auth::ApiCaller;
use super::error::{ApiError, ErrorBody};
use super::links::find;
use super::model::{
    Breakdown, BreakdownValue, DayStats, LinkStats, RangeStats, ScopeStats, StatsQuery,
};
use crate::rules::Tag;
use crate::state::AppState;
use crate::stats::days::today;
use crate::stats::dimension::Dimension;
use crate::stats::report::{self, Period, Scope};
use actix_web::{HttpResponse, web};

/// Values of a dimension returned at most.
const MAX_VALUES: u64 = 1000;

/// What every scope's statistics have.
struct Figures {
    period: Period,
    timezone: String,
    days: Vec<DayStats>,
    total: RangeStats,
    breakdown: Option<Breakdown>,
}

impl Figures {
    fn for_link(self, code: String) -> LinkStats {
        LinkStats {
            code,
            from: self.period.from,
            to: self.period.to,
            timezone: self.timezone,
            days: self.days,
            total: self.total,
            breakdown: self.breakdown,
        }
    }

    fn for_scope(self, tag: Option<String>) -> ScopeStats {
        ScopeStats {
            tag,
            from: self.period.from,
            to: self.period.to,
            timezone: self.timezone,
            days: self.days,
            total: self.total,
            breakdown: self.breakdown,
        }
    }
}

async fn figures(
    state: &AppState,
    scope: Scope<'_>,
    query: &StatsQuery,
) -> Result<Figures, ApiError> {
    for (field, value) in [("from", &query.from), ("to", &query.to)] {
        if value.as_deref().is_some_and(|v| v.trim().is_empty()) {
            return Err(ApiError::bad(
                format!("{field} is empty; give a date as YYYY-MM-DD or leave it out"),
                Some(field),
            ));
        }
    }
    let dimension = match query.dimension.as_deref().map(str::trim) {
        None => None,
        Some(name) => Some(Dimension::from_name(name).ok_or_else(|| {
            ApiError::bad(
                format!(
                    "'{}' is not a dimension; use country, province, city, carrier, browser, os, device, referrer, utm_source, utm_medium, utm_campaign, channel or hour",
                    name.chars().take(40).collect::<String>()
                ),
                Some("dimension"),
            )
        })?),
    };
    let tz = state.core.settings.timezone;
    let period = Period::parse(None, query.from.as_deref(), query.to.as_deref(), today(tz))
        .map_err(|err| ApiError::bad(err.to_string(), Some(err.field())))?;
    let db = &state.core.db;
    let days = report::daily(db, scope, period.from, period.to).await?;
    let total = report::range_totals(db, &state.core.kept, scope, period.from, period.to).await?;
    let breakdown = match dimension {
        None => None,
        Some(dimension) => {
            let shares = match dimension {
                Dimension::Hour => report::hours(db, scope, period.from, period.to).await?,
                other => {
                    report::breakdown(db, scope, other, period.from, period.to, MAX_VALUES).await?
                }
            };
            Some(Breakdown {
                dimension: dimension.name().to_owned(),
                values: shares
                    .into_iter()
                    .map(|share| BreakdownValue {
                        value: share.value,
                        pv: share.pv,
                        uv: share.uv,
                    })
                    .collect(),
            })
        }
    };
    Ok(Figures {
        period,
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
        breakdown,
    })
}

/// Daily visits of a link, and one dimension's breakdown when asked.
#[utoipa::path(
    get,
    path = "/api/v1/links/{code}/stats",
    tag = "links",
    params(("code" = String, Path, description = "The short code"), StatsQuery),
    responses(
        (status = 200, description = "Every day of the range", body = LinkStats),
        (status = 400, description = "A malformed date, range or dimension", body = ErrorBody),
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
    let link = find(&state, &code).await?;
    let figures = figures(&state, Scope::Link(link.id), &query).await?;
    Ok(HttpResponse::Ok().json(figures.for_link(link.compression_code.to_string())))
}

/// Daily visits of the links with a tag (a campaign), and one dimension's breakdown when asked.
#[utoipa::path(
    get,
    path = "/api/v1/tags/{tag}/stats",
    tag = "links",
    params(("tag" = String, Path, description = "The tag"), StatsQuery),
    responses(
        (status = 200, description = "Every day of the range", body = ScopeStats),
        (status = 400, description = "A malformed tag, date, range or dimension", body = ErrorBody),
        (status = 401, description = "Missing, unknown, expired or revoked key", body = ErrorBody),
        (status = 429, description = "Over the key's rate limit", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
pub async fn tag(
    _caller: ApiCaller,
    state: web::Data<AppState>,
    tag: web::Path<String>,
    query: web::Query<StatsQuery>,
) -> Result<HttpResponse, ApiError> {
    let tag = Tag::parse(&tag).map_err(|err| ApiError::bad(err.to_string(), Some("tag")))?;
    let figures = figures(&state, Scope::Tag(tag.as_str()), &query).await?;
    Ok(HttpResponse::Ok().json(figures.for_scope(Some(tag.to_string()))))
}

/// Daily visits of every link, and one dimension's breakdown when asked.
#[utoipa::path(
    get,
    path = "/api/v1/stats",
    tag = "links",
    params(StatsQuery),
    responses(
        (status = 200, description = "Every day of the range", body = ScopeStats),
        (status = 400, description = "A malformed date, range or dimension", body = ErrorBody),
        (status = 401, description = "Missing, unknown, expired or revoked key", body = ErrorBody),
        (status = 429, description = "Over the key's rate limit", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
pub async fn all(
    _caller: ApiCaller,
    state: web::Data<AppState>,
    query: web::Query<StatsQuery>,
) -> Result<HttpResponse, ApiError> {
    let figures = figures(&state, Scope::All, &query).await?;
    Ok(HttpResponse::Ok().json(figures.for_scope(None)))
}
