//! The public HTML pages: home, and the friendly 404 / 410 / 503 answers of the redirect path.
//! They do not vary per request, so they are rendered once.

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpResponse, ResponseError};
use askama::Template;
use std::sync::LazyLock;

#[derive(Template)]
#[template(path = "message.html")]
struct Message<'a> {
    title: &'a str,
    heading: &'a str,
    text: &'a str,
}

#[derive(Template)]
#[template(path = "home.html")]
struct Home;

struct Rendered {
    home: String,
    not_found: String,
    gone: String,
    unavailable: String,
}

static PAGES: LazyLock<Rendered> = LazyLock::new(|| {
    let message = |title, heading, text| {
        Message {
            title,
            heading,
            text,
        }
        .render()
        .expect("the message template renders")
    };
    Rendered {
        home: Home.render().expect("the home template renders"),
        not_found: message(
            "Link not found",
            "This short link does not exist",
            "Check that the address was copied completely. Short links are case-sensitive.",
        ),
        gone: message(
            "Link no longer available",
            "This short link is no longer available",
            "The link was disabled or has expired. Ask whoever sent it for a new one.",
        ),
        unavailable: message(
            "Temporarily unavailable",
            "This short link cannot be opened right now",
            "The service is having trouble. Please try again in a moment.",
        ),
    }
});

/// Pages carry no script and load only our stylesheet.
const CSP: HeaderValue = HeaderValue::from_static(
    "default-src 'none'; style-src 'self'; img-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
);

fn page(status: StatusCode, body: &str) -> HttpResponse {
    HttpResponse::build(status)
        .content_type("text/html; charset=utf-8")
        .insert_header((header::CONTENT_SECURITY_POLICY, CSP))
        .insert_header((
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ))
        .insert_header((header::CACHE_CONTROL, HeaderValue::from_static("no-store")))
        .body(body.to_owned())
}

#[derive(Debug, thiserror::Error)]
pub enum PageError {
    #[error("no such short link")]
    NotFound,
    #[error("the link is disabled or expired")]
    Gone,
    #[error("the link store is unavailable")]
    Unavailable,
}

impl ResponseError for PageError {
    fn status_code(&self) -> StatusCode {
        match self {
            Self::NotFound => StatusCode::NOT_FOUND,
            Self::Gone => StatusCode::GONE,
            Self::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    fn error_response(&self) -> HttpResponse {
        let body = match self {
            Self::NotFound => &PAGES.not_found,
            Self::Gone => &PAGES.gone,
            Self::Unavailable => &PAGES.unavailable,
        };
        page(self.status_code(), body)
    }
}

pub async fn home() -> HttpResponse {
    page(StatusCode::OK, &PAGES.home)
}

pub async fn not_found() -> HttpResponse {
    PageError::NotFound.error_response()
}
