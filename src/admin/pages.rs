//! Rendering admin pages: the shared frame (navigation, flash message, sign-out form) and the
//! plain message page.

use crate::i18n::Lang;
use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use askama::Template;

/// What every signed-in page shows around its content (built from the signed-in user by
/// `Frame::new` in `auth`).
pub struct Frame {
    pub user: String,
    pub is_admin: bool,
    pub lang: Lang,
    pub csrf: String,
    pub flash: Option<crate::i18n::Message>,
    /// A link just disabled: the page offers to enable it again.
    pub undo: Option<String>,
    /// A link just created: the page offers to copy its short URL.
    pub copy: Option<String>,
    pub section: &'static str,
    /// The default domain's trouble: a banner on the page.
    pub alert: Option<crate::state::DomainAlert>,
}

impl Frame {
    /// The banner about the default domain's trouble, in the person's language.
    pub fn alert_text(&self) -> Option<String> {
        let alert = self.alert.as_ref()?;
        let reason = alert.reason.show(self.lang);
        let pattern = match alert.state {
            "blocked" => t!("The default domain {host} is blocked: {reason}"),
            _ => t!("The default domain {host} may be blocked: {reason}"),
        };
        Some(
            self.lang
                .fill(pattern, &[("host", &alert.host), ("reason", &reason)]),
        )
    }

    /// A text of the page in the person's language.
    pub fn t(&self, text: impl crate::i18n::AsText) -> &'static str {
        self.lang.t(text)
    }

    /// A text with one value (`{}`) in the person's language.
    pub fn f(&self, text: impl crate::i18n::AsText, value: impl std::fmt::Display) -> String {
        self.lang.f(text, value)
    }

    /// A message in the person's language.
    pub fn say(&self, message: impl crate::i18n::Shown) -> String {
        message.shown(self.lang)
    }
}

#[derive(Template)]
#[template(path = "admin/message.html")]
struct Message<'a> {
    lang: Lang,
    heading: &'a str,
    text: &'a str,
}

/// The plain message page, in the language of the request being answered.
pub fn render_message(
    status: StatusCode,
    heading: crate::i18n::Text,
    text: &crate::i18n::Message,
) -> HttpResponse {
    let lang = Lang::current();
    let heading = lang.t(heading);
    let text = text.show(lang);
    let body = Message {
        lang,
        heading,
        text: &text,
    }
    .render()
    .unwrap_or_else(|_| text.to_string());
    html(status, body)
}

/// After a form is handled: go to `location` (303, so that reloading does not resend the form).
pub fn see_other(location: &str) -> HttpResponse {
    HttpResponse::SeeOther()
        .insert_header((actix_web::http::header::LOCATION, location.to_owned()))
        .finish()
}

pub fn html(status: StatusCode, body: String) -> HttpResponse {
    HttpResponse::build(status)
        .content_type("text/html; charset=utf-8")
        .body(body)
}

pub fn render(status: StatusCode, template: &impl Template) -> HttpResponse {
    match template.render() {
        Ok(body) => html(status, body),
        Err(err) => {
            tracing::error!(error = %err, "template failed to render");
            render_message(
                StatusCode::INTERNAL_SERVER_ERROR,
                t!("Sorry"),
                &crate::i18n::Message::new(t!("This page could not be shown.")),
            )
        }
    }
}

/// A stored UTC time as people read it, in the configured time zone.
pub fn human_time(at: chrono::NaiveDateTime, tz: chrono_tz::Tz) -> String {
    crate::db::local_time(at, tz)
}

/// A stored UTC time as a `datetime-local` input shows it, in the configured time zone.
pub fn input_time(at: chrono::NaiveDateTime, tz: chrono_tz::Tz) -> String {
    use chrono::TimeZone;
    tz.from_utc_datetime(&at)
        .format("%Y-%m-%dT%H:%M")
        .to_string()
}

/// "Are you sure?": what an action will do, and a button that does it (the same form again,
/// with `confirm=yes`).
#[derive(Template)]
#[template(path = "admin/confirm.html")]
pub struct Confirm {
    pub frame: Frame,
    pub heading: crate::i18n::Message,
    pub lines: Vec<crate::i18n::Message>,
    pub action: String,
    pub fields: Vec<(&'static str, String)>,
    pub button: crate::i18n::Message,
    pub back: &'static str,
    /// What people typed, listed verbatim under the lines (never translated).
    pub listing: Vec<String>,
}

impl Confirm {
    pub fn page(self) -> HttpResponse {
        render(StatusCode::OK, &self)
    }
}

/// A page of this admin UI to go back to: a path under `/admin` on this host, never an
/// address elsewhere (an open redirect) nor the sign-in page itself.
pub fn local_next(next: &str) -> Option<&str> {
    let safe = next.starts_with("/admin")
        && !next.starts_with("/admin/login")
        && !next.starts_with("/admin/logout")
        && !next.contains("//")
        && !next.contains("/..")
        && !next.contains('\\')
        && next.chars().all(|c| c.is_ascii_graphic());
    safe.then_some(next)
}
