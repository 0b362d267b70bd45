//! The SMS composer page: write the message around `{link}`, see its segment count as you type
//! (static/sms.js), and create the link; the server counts the same on submit, so the page
//! works without JavaScript too.

use crate::admin::access::auth::CurrentUser;
use crate::admin::error::AdminError;
use crate::admin::pages::{Frame, render};
use crate::i18n::{Message, Says};
use crate::rules::sms::{CountRule, LINK_PLACEHOLDER, SmsCount};
use crate::services::links::{self, LinkError};
use crate::services::sms::{self as composer, MAX_SEGMENTS, SmsDraft, SmsError};
use crate::state::AppState;
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use askama::Template;

#[derive(serde::Deserialize, Default, Clone)]
#[serde(default)]
pub struct SmsForm {
    csrf: String,
    message: String,
    url: String,
    signature: String,
    rule: String,
    segments: String,
    /// The link's description, tags and UTM parameters, as on the link form.
    description: String,
    tags: String,
    utm_source: String,
    utm_medium: String,
    utm_campaign: String,
    utm_term: String,
    utm_content: String,
    /// `preview` to count and plan without creating the link.
    action: String,
}

/// What the page shows after a submit.
struct Outcome {
    text: String,
    count: SmsCount,
    domain: String,
    length: u8,
    short_url: Option<String>,
    warnings: Vec<Message>,
}

#[derive(Template)]
#[template(path = "admin/sms.html")]
struct SmsPage {
    frame: Frame,
    form: SmsForm,
    error: Option<(&'static str, Message)>,
    outcome: Option<Outcome>,
    /// A link of the configured length on the shortest domain, for the live count.
    stand_in: String,
    placeholder: &'static str,
    max_segments: usize,
    /// The tags in use, for the tags field's suggestions.
    known_tags: Vec<String>,
}

impl SmsPage {
    fn error_for(&self, field: &str) -> Option<&Message> {
        match &self.error {
            Some((name, message)) if *name == field => Some(message),
            _ => None,
        }
    }
}

async fn stand_in(state: &AppState) -> Result<String, AdminError> {
    let domains = crate::services::domains::list(&state.core.db).await?;
    let code = "x".repeat(
        usize::from(state.core.settings.code_length)
            + usize::from(state.core.settings.code_check_char),
    );
    Ok(domains
        .iter()
        .filter(|d| d.status == crate::db::entities::domain_conf::DomainStatus::Active)
        .map(|d| crate::services::domains::short_url(d, &code))
        .min_by_key(|url| url.chars().count())
        .unwrap_or_default())
}

async fn page(
    state: &AppState,
    user: &CurrentUser,
    form: SmsForm,
    error: Option<(&'static str, Message)>,
    outcome: Option<Outcome>,
) -> Result<SmsPage, AdminError> {
    Ok(SmsPage {
        frame: Frame::new(user, None, "sms"),
        form,
        error,
        outcome,
        stand_in: stand_in(state).await?,
        placeholder: LINK_PLACEHOLDER,
        max_segments: MAX_SEGMENTS,
        known_tags: crate::services::tags::suggestions(&state.core.db).await?,
    })
}

pub async fn form(
    user: CurrentUser,
    state: web::Data<AppState>,
) -> Result<HttpResponse, AdminError> {
    let form = SmsForm {
        message: format!("{LINK_PLACEHOLDER} "),
        segments: "1".to_owned(),
        rule: "china".to_owned(),
        ..SmsForm::default()
    };
    let page = page(&state, &user, form, None, None).await?;
    Ok(render(StatusCode::OK, &page))
}

/// The field a composer error belongs to; database failures are not the user's.
fn field_of(err: SmsError) -> Result<(&'static str, Message), AdminError> {
    let message = err.says();
    Ok(match err {
        SmsError::Db(err) | SmsError::Link(LinkError::Db(err)) => return Err(err.into()),
        SmsError::Segments => ("segments", message),
        SmsError::Link(_) | SmsError::NoActiveDomain => ("url", message),
        _ => ("message", message),
    })
}

pub async fn compose(
    user: CurrentUser,
    state: web::Data<AppState>,
    form: web::Form<SmsForm>,
) -> Result<HttpResponse, AdminError> {
    user.check_csrf(&form.csrf)?;
    let form = form.into_inner();
    let rule = match form.rule.as_str() {
        "china" => CountRule::China,
        _ => CountRule::Standard,
    };
    let segments = form.segments.trim().parse::<usize>().unwrap_or(0);
    let tags = match crate::rules::Tag::parse_list(&form.tags) {
        Ok(tags) => tags,
        Err(err) => {
            let page = page(&state, &user, form, Some(("tags", err.says())), None).await?;
            return Ok(render(StatusCode::UNPROCESSABLE_ENTITY, &page));
        }
    };
    // The UTM builder of the link form: typed parameters, else the first tag's preset.
    let builder = crate::admin::links::form::LinkForm {
        utm_source: form.utm_source.clone(),
        utm_medium: form.utm_medium.clone(),
        utm_campaign: form.utm_campaign.clone(),
        utm_term: form.utm_term.clone(),
        utm_content: form.utm_content.clone(),
        ..Default::default()
    };
    let description = Some(form.description.trim().to_owned()).filter(|d| !d.is_empty());
    let attempt = async {
        let draft = SmsDraft::new(&form.message, Some(form.signature.as_str()), rule, segments)?;
        let target = links::parse_target(&state.core, &form.url).await?;
        let url = crate::admin::links::form::utm_url(&state, target, &builder, &tags).await?;
        let target = links::parse_target(&state.core, &url).await?;
        if form.action == "preview" {
            let plan = composer::plan(&state.core, &draft).await?;
            return Ok::<_, SmsError>(Outcome {
                text: plan.preview,
                count: plan.count,
                domain: plan.domain.host,
                length: plan.length.get(),
                short_url: None,
                warnings: plan.warnings.iter().map(Says::says).collect(),
            });
        }
        let composed = composer::compose(
            &state.core,
            &draft,
            target,
            description.clone(),
            tags.clone(),
            &user.actor(),
        )
        .await?;
        Ok(Outcome {
            short_url: Some(composed.saved.short_url()),
            domain: composed.saved.domain.host.clone(),
            length: composed.saved.link.compression_code.len() as u8,
            text: composed.text,
            count: composed.count,
            warnings: composed.warnings.iter().map(Says::says).collect(),
        })
    }
    .await;
    let (status, error, outcome) = match attempt {
        Ok(outcome) => (StatusCode::OK, None, Some(outcome)),
        Err(err) => (StatusCode::UNPROCESSABLE_ENTITY, Some(field_of(err)?), None),
    };
    // Once the link is made the form starts over (keeping how messages are signed and
    // counted), so that a second click does not make a second link.
    let created = outcome.as_ref().is_some_and(|o| o.short_url.is_some());
    let form = match created {
        true => SmsForm {
            message: format!("{LINK_PLACEHOLDER} "),
            signature: form.signature,
            rule: form.rule,
            segments: form.segments,
            ..SmsForm::default()
        },
        false => form,
    };
    let page = page(&state, &user, form, error, outcome).await?;
    Ok(render(status, &page))
}
