//! Turning a request into a [`ClickEvent`]: copies only, so the redirect stays cheap; the
//! expensive parts (GeoIP, user-agent parsing, hashing) happen in the writer.

use super::event::ClickEvent;
use crate::net::client::TrustedProxies;
use crate::rules::Outcome;
use actix_web::HttpRequest;
use actix_web::http::header::{self, HeaderName};
use std::borrow::Cow;
use std::net::{IpAddr, Ipv4Addr};

/// Longest user agent, referer or query string kept: enough for any real one, and a bound on
/// what a hostile client can make us hold in memory.
pub const MAX_TEXT: usize = 2048;
/// The width of the `host` column.
pub const MAX_HOST: usize = 255;
/// The longest user agent kept of a visit to a code that matches no link (its referer and
/// query are not kept at all): such visits are mostly strangers probing, and cost storage.
pub const MAX_UNKNOWN_AGENT: usize = 256;

pub fn click(
    req: &HttpRequest,
    proxies: &TrustedProxies,
    code: &str,
    link_id: Option<i64>,
    outcome: Outcome,
) -> ClickEvent {
    let header = |name: HeaderName, max: usize| {
        req.headers()
            .get(name)
            .map(|value| text_of(value.as_bytes()))
            .filter(|value| !value.is_empty())
            .map(|value| clip(&value, max).into())
    };
    let query = req.query_string();
    let unknown = outcome == Outcome::Unknown;
    ClickEvent {
        at: crate::db::now(),
        code: code.into(),
        link_id,
        host: header(header::HOST, MAX_HOST),
        // Only a test harness calling a handler directly has no peer.
        client_ip: proxies
            .client_ip_of(req)
            .unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
        user_agent: header(
            header::USER_AGENT,
            if unknown { MAX_UNKNOWN_AGENT } else { MAX_TEXT },
        ),
        referer: header(header::REFERER, MAX_TEXT).filter(|_| !unknown),
        query: (!query.is_empty() && !unknown).then(|| clip(query, MAX_TEXT).into()),
        outcome,
        head: req.method() == actix_web::http::Method::HEAD,
        key: None,
        generation: 0,
    }
}

/// A header's text. Browsers and apps do send bytes outside ASCII (a phone model with an "ñ",
/// a search term in a referer): UTF-8 is read as such, anything else as Latin-1, so that no
/// real value is lost.
pub fn text_of(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => Cow::Owned(bytes.iter().map(|&byte| char::from(byte)).collect()),
    }
}

/// The longest prefix of `text` of at most `max` bytes that ends on a character boundary.
pub fn clip(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}
