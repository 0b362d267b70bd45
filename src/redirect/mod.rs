//! The public redirect path: `GET`/`HEAD /{code}`. Everything here is on the hot path.

pub mod location;

use crate::analytics::{Outcome, capture};
use crate::db::entities::url_map::LinkState;
use crate::public::pages::PageError;
use crate::rules::ShortCode;
use crate::state::AppState;
use actix_web::http::header::{self, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::{HttpRequest, HttpResponse, web};
use std::time::Instant;

const NO_CACHE: HeaderValue = HeaderValue::from_static("private, max-age=0");

pub async fn follow(
    req: HttpRequest,
    state: web::Data<AppState>,
) -> Result<HttpResponse, PageError> {
    let started = Instant::now();
    let Some(raw) = code_in_path(&req) else {
        return Err(PageError::NotFound);
    };
    // Not a code at all (bad characters, too long): a stray request, not a visit.
    let code = ShortCode::parse(raw).map_err(|_| PageError::NotFound)?;
    let (answer, link_id, outcome) = answer(&req, &state, &code).await;
    if let Some(outcome) = outcome {
        let analytics = &state.analytics;
        let proxies = &state.core.settings.trusted_proxies;
        analytics.sink().record(capture::click(
            &req,
            proxies,
            code.as_str(),
            link_id,
            outcome,
        ));
        analytics.metrics().redirect(outcome, started.elapsed());
    }
    answer
}

/// The code a `GET` or `HEAD` of `/{code}` asks for (percent-decoded); `None` for any other
/// method or path, which no link can answer.
fn code_in_path(req: &HttpRequest) -> Option<&str> {
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return None;
    }
    let code = req.match_info().as_str().strip_prefix('/')?;
    (!code.is_empty() && !code.contains('/')).then_some(code)
}

/// The response, the link it concerned, and how the visit is recorded (`None`: not at all,
/// when we could not tell because the database is away and the code is not cached).
async fn answer(
    req: &HttpRequest,
    state: &AppState,
    code: &ShortCode,
) -> (
    Result<HttpResponse, PageError>,
    Option<i64>,
    Option<Outcome>,
) {
    if !state.core.codes.format().admits(code) {
        return (Err(PageError::NotFound), None, Some(Outcome::Unknown));
    }
    let link = match state.resolver.resolve(code).await {
        Ok(Some(link)) => link,
        Ok(None) => return (Err(PageError::NotFound), None, Some(Outcome::Unknown)),
        Err(_) => return (Err(PageError::Unavailable), None, None),
    };
    match link.state() {
        LinkState::Live => {}
        LinkState::Disabled => {
            return (Err(PageError::Gone), Some(link.id), Some(Outcome::Disabled));
        }
        LinkState::Expired => return (Err(PageError::Gone), Some(link.id), Some(Outcome::Expired)),
    }
    let query = req.query_string();
    let location = if state.core.settings.query_merge && !query.is_empty() {
        location::merge_query(&link.target, query)
            .and_then(|merged| HeaderValue::try_from(merged).ok())
            .unwrap_or_else(|| link.location.clone())
    } else {
        link.location.clone()
    };
    let status = StatusCode::from_u16(link.redirect.code()).expect("a redirect status");
    let mut response = HttpResponse::build(status);
    response.insert_header((header::LOCATION, location));
    if link.redirect.is_temporary() {
        response.insert_header((header::CACHE_CONTROL, NO_CACHE));
    }
    (
        Ok(response.finish()),
        Some(link.id),
        Some(Outcome::Redirected),
    )
}
