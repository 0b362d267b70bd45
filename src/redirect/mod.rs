//! The public redirect path: `GET`/`HEAD /{code}`. Everything here is on the hot path.

pub mod location;
pub mod resolver;

use crate::rules::ShortCode;
use crate::web::AppState;
use crate::web::pages::PageError;
use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, web};
use resolver::LinkState;

const NO_CACHE: HeaderValue = HeaderValue::from_static("private, max-age=0");

pub async fn follow(
    req: HttpRequest,
    state: web::Data<AppState>,
) -> Result<HttpResponse, PageError> {
    let raw = req.match_info().get("code").unwrap_or_default();
    let code = ShortCode::parse(raw).map_err(|_| PageError::NotFound)?;
    if !state.core.codes.format().admits(&code) {
        return Err(PageError::NotFound);
    }
    let link = state
        .resolver
        .resolve(&code)
        .await
        .map_err(|_| PageError::Unavailable)?
        .ok_or(PageError::NotFound)?;
    match link.state() {
        LinkState::Live => {}
        LinkState::Disabled | LinkState::Expired => return Err(PageError::Gone),
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
    Ok(response.finish())
}
