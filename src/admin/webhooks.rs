//! The webhooks page: subscriptions to inklink's events (an operator's own, an admin's all),
//! made, tested, turned off and on, deleted, and each one's recent deliveries.

use crate::admin::access::auth::CurrentUser;
use crate::admin::error::AdminError;
use crate::admin::pages::{Frame, render, see_other};
use crate::i18n::{Message, Says, Text};
use crate::rules::webhook::{EventType, Format};
use crate::services::outbox::Subscription;
use crate::services::webhooks::{self, Delivery, NewWebhook, WebhookServiceError};
use crate::state::AppState;
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use askama::Template;

/// The largest form accepted.
const FORM_LIMIT: usize = 16 * 1024;

pub struct Row {
    pub id: i64,
    pub url: String,
    pub format: Text,
    pub events: Vec<&'static str>,
    pub description: String,
    pub enabled: bool,
    pub owner: String,
}

fn row(s: &Subscription) -> Row {
    Row {
        id: s.id,
        url: s.url.clone(),
        format: s.format.label(),
        events: s.events.names(),
        description: s.description.clone(),
        enabled: s.enabled,
        owner: s.owner_name.clone(),
    }
}

/// A choice of the form: the event's name (data) and its words (translated).
pub struct Choice {
    pub name: &'static str,
    pub words: Text,
    pub checked: bool,
}

#[derive(Template)]
#[template(path = "admin/webhooks.html")]
struct WebhooksPage {
    frame: Frame,
    rows: Vec<Row>,
    error: Option<crate::i18n::Message>,
    /// A subscription just made: its id and signing secret, shown this once.
    made: Option<(i64, String)>,
    choices: Vec<Choice>,
    formats: Vec<(&'static str, Text, bool)>,
    url: String,
    description: String,
}

/// What the form held, to show it again after an error.
#[derive(Default)]
struct Typed {
    url: String,
    format: String,
    events: Vec<String>,
    description: String,
}

async fn page(
    state: &AppState,
    user: &CurrentUser,
    error: Option<crate::i18n::Message>,
    made: Option<(i64, String)>,
    typed: Typed,
) -> Result<WebhooksPage, AdminError> {
    let all = webhooks::list(&state.core.db, &user.actor())
        .await
        .map_err(service_error)?;
    let defaults = typed.events.is_empty() && error.is_none();
    let choices = webhooks::events_for(&user.actor())
        .into_iter()
        .map(|event| Choice {
            name: event.as_str(),
            words: event.words(),
            checked: if defaults {
                event == EventType::LinkCreated
            } else {
                typed.events.iter().any(|e| e == event.as_str())
            },
        })
        .collect();
    let formats = std::iter::once(("", t!("Found from the URL"), typed.format.is_empty()))
        .chain(
            Format::ALL
                .into_iter()
                .map(|f| (f.as_str(), f.label(), typed.format == f.as_str())),
        )
        .collect();
    let flash = if error.is_none() && made.is_none() {
        user.take_flash()
    } else {
        None
    };
    Ok(WebhooksPage {
        frame: Frame::new(user, flash, "webhooks"),
        rows: all.iter().map(row).collect(),
        error,
        made,
        choices,
        formats,
        url: typed.url,
        description: typed.description,
    })
}

fn service_error(err: WebhookServiceError) -> AdminError {
    match err {
        WebhookServiceError::Db(err) => AdminError::Db(err),
        WebhookServiceError::NotFound(_) => AdminError::NotFound,
        other => AdminError::Refused(other.says()),
    }
}

pub async fn list(
    user: CurrentUser,
    state: web::Data<AppState>,
) -> Result<HttpResponse, AdminError> {
    let page = page(&state, &user, None, None, Typed::default()).await?;
    Ok(render(StatusCode::OK, &page))
}

/// The fields of a form, repeated ones (the events' checkboxes) included.
fn fields(body: &[u8]) -> Vec<(String, String)> {
    url::form_urlencoded::parse(body).into_owned().collect()
}

fn field<'a>(fields: &'a [(String, String)], name: &str) -> &'a str {
    fields
        .iter()
        .find(|(n, _)| n == name)
        .map_or("", |(_, v)| v.as_str())
}

pub async fn create(
    user: CurrentUser,
    state: web::Data<AppState>,
    body: web::Bytes,
) -> Result<HttpResponse, AdminError> {
    if body.len() > FORM_LIMIT {
        return Err(AdminError::BadRequest(
            Message::new(t!("the form is larger than {FORM_LIMIT} bytes"))
                .data("FORM_LIMIT", FORM_LIMIT),
        ));
    }
    let fields = fields(&body);
    user.check_csrf(field(&fields, "csrf"))?;
    let typed = Typed {
        url: field(&fields, "url").to_owned(),
        format: field(&fields, "format").to_owned(),
        events: fields
            .iter()
            .filter(|(n, _)| n == "events")
            .map(|(_, v)| v.clone())
            .collect(),
        description: field(&fields, "description").to_owned(),
    };
    let new = NewWebhook::parse(
        &typed.url,
        Some(typed.format.as_str()),
        typed.events.iter().map(String::as_str),
        Some(&typed.description),
    );
    let made = match new {
        Err(err) => Err(err.says()),
        Ok(new) => match webhooks::create(&state.core, new, &user.actor(), user.lang.tag()).await {
            Ok(made) => Ok(made),
            Err(WebhookServiceError::Db(err)) => return Err(AdminError::Db(err)),
            Err(err) => Err(err.says()),
        },
    };
    match made {
        Ok(made) => {
            let shown = (made.id, made.secret.as_str().to_owned());
            let page = page(&state, &user, None, Some(shown), Typed::default()).await?;
            Ok(render(StatusCode::CREATED, &page))
        }
        Err(message) => {
            let page = page(&state, &user, Some(message), None, typed).await?;
            Ok(render(StatusCode::UNPROCESSABLE_ENTITY, &page))
        }
    }
}

#[derive(Template)]
#[template(path = "admin/webhook.html")]
struct WebhookPage {
    frame: Frame,
    hook: Row,
    deliveries: Vec<DeliveryRow>,
}

pub struct DeliveryRow {
    pub msg_id: String,
    pub event: String,
    pub created: String,
    pub state: &'static str,
    pub attempts: i32,
    pub items: i32,
    pub status: String,
    pub error: Option<crate::i18n::Message>,
    /// When it was delivered, or when it is next tried.
    pub when: String,
}

fn delivery_row(d: &Delivery, tz: chrono_tz::Tz) -> DeliveryRow {
    let time = |ms: i64| {
        chrono::DateTime::from_timestamp_millis(ms)
            .map(|t| crate::admin::pages::human_time(t.naive_utc(), tz))
            .unwrap_or_default()
    };
    DeliveryRow {
        msg_id: d.msg_id.clone(),
        event: d.event.clone(),
        created: time(d.created_at),
        state: d.state_name(),
        attempts: d.attempts,
        items: d.items,
        status: d.last_status.map(|s| s.to_string()).unwrap_or_default(),
        error: d.error_shown(),
        when: match d.state_name() {
            "delivered" => d.delivered_at.map(time).unwrap_or_default(),
            "waiting" => time(d.next_at),
            _ => String::new(),
        },
    }
}

pub async fn show(
    user: CurrentUser,
    state: web::Data<AppState>,
    id: web::Path<i64>,
) -> Result<HttpResponse, AdminError> {
    let actor = user.actor();
    let hook = webhooks::get(&state.core.db, *id, &actor)
        .await
        .map_err(service_error)?;
    let deliveries = webhooks::deliveries(&state.core.db, *id, &actor)
        .await
        .map_err(service_error)?;
    let page = WebhookPage {
        frame: Frame::new(&user, user.take_flash(), "webhooks"),
        hook: row(&hook),
        deliveries: deliveries
            .iter()
            .map(|d| delivery_row(d, user.tz))
            .collect(),
    };
    Ok(render(StatusCode::OK, &page))
}

#[derive(serde::Deserialize, Default)]
#[serde(default)]
pub struct ActionForm {
    csrf: String,
}

pub async fn change(
    user: CurrentUser,
    state: web::Data<AppState>,
    path: web::Path<(i64, String)>,
    form: web::Form<ActionForm>,
) -> Result<HttpResponse, AdminError> {
    user.check_csrf(&form.csrf)?;
    let (id, action) = path.into_inner();
    let actor = user.actor();
    let core = &state.core;
    let back = format!("/admin/webhooks/{id}");
    let (message, to) = match action.as_str() {
        "test" => {
            webhooks::send_test(core, id, &actor)
                .await
                .map_err(service_error)?;
            (
                Message::new(t!("A test message to webhook {id} is on its way")).data("id", id),
                back,
            )
        }
        "resend" => {
            let count = webhooks::resend_failed(core, id, &actor)
                .await
                .map_err(service_error)?;
            (
                Message::new(t!("{count} messages will be sent again")).data("count", count),
                back,
            )
        }
        "enable" | "disable" => {
            let change = webhooks::WebhookChange {
                enabled: Some(action == "enable"),
                ..Default::default()
            };
            webhooks::update(core, id, change, &actor)
                .await
                .map_err(service_error)?;
            let message = match action.as_str() {
                "enable" => t!("Webhook {id} is on"),
                _ => t!("Webhook {id} is off: its messages wait until it is on again"),
            };
            (
                Message::new(message).data("id", id),
                "/admin/webhooks".to_owned(),
            )
        }
        "delete" => {
            webhooks::delete(core, id, &actor)
                .await
                .map_err(service_error)?;
            (
                Message::new(t!("Webhook {id} deleted")).data("id", id),
                "/admin/webhooks".to_owned(),
            )
        }
        _ => return Err(AdminError::NotFound),
    };
    user.flash(message);
    Ok(see_other(&to))
}
