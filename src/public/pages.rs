//! The pages visitors see: home, the friendly 404 / 410 / 503 answers of the redirect path,
//! and the campaign pages (password form, "open in your browser", not open yet), in the
//! visitor's language. The fixed ones are rendered once per language.

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;
use std::sync::LazyLock;

use crate::i18n::Lang;

#[derive(Template)]
#[template(path = "message.html")]
struct Message<'a> {
    t: Lang,
    title: &'a str,
    heading: &'a str,
    text: &'a str,
}

#[derive(Template)]
#[template(path = "home.html")]
struct Home {
    t: Lang,
}

#[derive(Template)]
#[template(path = "in_app.html")]
struct InApp<'a> {
    t: Lang,
    address: &'a str,
}

#[derive(Template)]
#[template(path = "password.html")]
struct PasswordForm {
    t: Lang,
    error: Option<String>,
}

/// The visitor pages that carry no per-request value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Page {
    NotFound,
    Gone,
    UsedUp,
    Unavailable,
}

impl Page {
    const ALL: [Self; 4] = [Self::NotFound, Self::Gone, Self::UsedUp, Self::Unavailable];

    fn key(self) -> &'static str {
        match self {
            Self::NotFound => "not_found",
            Self::Gone => "gone",
            Self::UsedUp => "used_up",
            Self::Unavailable => "unavailable",
        }
    }

    pub fn status(self) -> StatusCode {
        match self {
            Self::NotFound => StatusCode::NOT_FOUND,
            Self::Gone | Self::UsedUp => StatusCode::GONE,
            Self::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        }
    }
}

fn message(lang: Lang, key: &str, text: &str) -> String {
    Message {
        t: lang,
        title: lang.text(&format!("{key}_title")),
        heading: lang.text(&format!("{key}_heading")),
        text,
    }
    .render()
    .expect("the message template renders")
}

/// Each page of [`Page`] in each language, rendered once.
static PAGES: LazyLock<[Vec<String>; 2]> = LazyLock::new(|| {
    Lang::ALL.map(|lang| {
        Page::ALL
            .iter()
            .map(|page| message(lang, page.key(), lang.text(&format!("{}_text", page.key()))))
            .collect()
    })
});

/// The home page in each language.
static HOME: LazyLock<[String; 2]> =
    LazyLock::new(|| Lang::ALL.map(|t| Home { t }.render().expect("the home template renders")));

/// Pages carry no script and load only our stylesheet.
const CSP: HeaderValue = HeaderValue::from_static(
    "default-src 'none'; style-src 'self'; img-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
);
/// The in-app page runs one script of ours: the copy button.
const CSP_WITH_SCRIPT: HeaderValue = HeaderValue::from_static(
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
);

fn page(status: StatusCode, body: &str) -> HttpResponse {
    page_with(status, body, CSP)
}

fn page_with(status: StatusCode, body: &str, csp: HeaderValue) -> HttpResponse {
    HttpResponse::build(status)
        .content_type("text/html; charset=utf-8")
        .insert_header((header::CONTENT_SECURITY_POLICY, csp))
        .insert_header((
            header::VARY,
            HeaderValue::from_static("Accept-Language, Cookie"),
        ))
        .insert_header((
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ))
        .insert_header((header::CACHE_CONTROL, HeaderValue::from_static("no-store")))
        .body(body.to_owned())
}

/// One of the fixed visitor pages, in `lang`.
pub fn fixed(shown: Page, lang: Lang) -> HttpResponse {
    let index = Page::ALL
        .iter()
        .position(|known| *known == shown)
        .expect("every page is listed");
    page(shown.status(), &PAGES[lang as usize][index])
}

/// 403: the link opens at `time` (already written for the visitor).
pub fn not_yet(lang: Lang, time: &str) -> HttpResponse {
    let text = lang.text("not_yet_text").replace("{time}", time);
    page(StatusCode::FORBIDDEN, &message(lang, "not_yet", &text))
}

/// 200: "open this link in your browser", with `address` to copy.
pub fn in_app(lang: Lang, address: &str) -> HttpResponse {
    let body = InApp { t: lang, address }
        .render()
        .expect("the in-app template renders");
    page_with(StatusCode::OK, &body, CSP_WITH_SCRIPT)
}

/// Why a password form is shown again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PasswordProblem {
    Wrong,
    Throttled { minutes: i64 },
}

/// The password form: 200 when first shown, 401 after a wrong password, 429 when throttled.
pub fn password_form(lang: Lang, problem: Option<PasswordProblem>) -> HttpResponse {
    let (status, error) = match problem {
        None => (StatusCode::OK, None),
        Some(PasswordProblem::Wrong) => (
            StatusCode::UNAUTHORIZED,
            Some(lang.text("password_wrong").to_owned()),
        ),
        Some(PasswordProblem::Throttled { minutes }) => (
            StatusCode::TOO_MANY_REQUESTS,
            Some(
                lang.text("password_throttled")
                    .replace("{minutes}", &minutes.to_string()),
            ),
        ),
    };
    let body = PasswordForm { t: lang, error }
        .render()
        .expect("the password template renders");
    page(status, &body)
}

pub async fn home(req: actix_web::HttpRequest) -> HttpResponse {
    page(StatusCode::OK, &HOME[Lang::of(&req) as usize])
}

/// The 404 page in the visitor's language.
pub async fn not_found(req: actix_web::HttpRequest) -> HttpResponse {
    fixed(Page::NotFound, Lang::of(&req))
}

/// The language switch of pages that do not know who is looking: remembers the choice in a
/// cookie and goes back to the page it was on.
pub async fn switch_language(req: HttpRequest, tag: actix_web::web::Path<String>) -> HttpResponse {
    let Some(lang) = Lang::from_tag(&tag) else {
        return fixed(Page::NotFound, Lang::of(&req));
    };
    HttpResponse::SeeOther()
        .insert_header((header::LOCATION, Lang::back_to(&req, "/")))
        .insert_header((header::CACHE_CONTROL, HeaderValue::from_static("no-store")))
        .cookie(lang.cookie())
        .finish()
}
