//! The public redirect path: `GET`/`HEAD /{code}`. Everything here is on the hot path.

pub mod location;

use crate::clicks::agent::{Agent, parse_agent_cached};
use crate::clicks::capture;
use crate::db::entities::url_map::LinkState;
use crate::i18n::Lang;
use crate::public::pages::{self, Page, PasswordProblem};
use crate::resolver::{CampaignRules, ResolvedLink, take_visit};
use crate::rules::Outcome;
use crate::rules::{App, ShortCode, TargetRule};
use crate::services::visitors::{self, PasswordCheck};
use crate::state::AppState;
use actix_web::http::header::{self, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::{HttpRequest, HttpResponse, web};
use std::sync::atomic::Ordering;
use std::time::Instant;

const NO_CACHE: HeaderValue = HeaderValue::from_static("private, max-age=0");

pub async fn follow(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> HttpResponse {
    let started = Instant::now();
    let Some(raw) = code_in_path(&req) else {
        return pages::fixed(Page::NotFound, Lang::of(&req));
    };
    // Not a code at all (bad characters, too long): a stray request, not a visit.
    let Ok(code) = ShortCode::parse(raw) else {
        return pages::fixed(Page::NotFound, Lang::of(&req));
    };
    // Only a password form is ever posted to a short URL; its body is read only there.
    let posted = (*req.method() == Method::POST).then_some(payload);
    let is_post = posted.is_some();
    let (response, link_id, mut outcome) = answer(&req, &state, &code, posted).await;
    // A form posted anywhere but to a password link is a stray request, not a visit.
    if is_post && outcome == Some(Outcome::Unknown) {
        outcome = None;
    }
    if let Some(outcome) = outcome {
        let clicks = &state.clicks;
        let proxies = &state.core.settings.trusted_proxies;
        clicks.sink().record(capture::click(
            &req,
            proxies,
            code.as_str(),
            link_id,
            outcome,
        ));
        clicks.metrics().redirect(outcome, started.elapsed());
    }
    response
}

/// Longest password form read: a password is at most 128 characters.
const FORM_LIMIT: usize = 4096;

/// The `password` field of a posted form (empty when there is none or the body is too big).
async fn posted_password(mut payload: web::Payload) -> String {
    use futures_util::StreamExt;
    let mut body = Vec::new();
    while let Some(Ok(chunk)) = payload.next().await {
        if body.len() + chunk.len() > FORM_LIMIT {
            return String::new();
        }
        body.extend_from_slice(&chunk);
    }
    url::form_urlencoded::parse(&body)
        .find(|(key, _)| key == "password")
        .map(|(_, value)| value.into_owned())
        .unwrap_or_default()
}

/// The code a `GET` or `HEAD` (or a password form's `POST`) of `/{code}` asks for
/// (percent-decoded); `None` for any other method or path, which no link can answer.
fn code_in_path(req: &HttpRequest) -> Option<&str> {
    if req.method() != Method::GET && req.method() != Method::HEAD && req.method() != Method::POST {
        return None;
    }
    let code = req.match_info().as_str().strip_prefix('/')?;
    (!code.is_empty() && !code.contains('/')).then_some(code)
}

type Answer = (HttpResponse, Option<i64>, Option<Outcome>);

/// The response, the link it concerned, and how the visit is recorded (`None`: not at all,
/// when we could not tell because the database is away and the code is not cached).
async fn answer(
    req: &HttpRequest,
    state: &AppState,
    code: &ShortCode,
    posted: Option<web::Payload>,
) -> Answer {
    if !state.core.codes.format().admits(code) {
        return unknown(req);
    }
    let link = match state.resolver.resolve(code).await {
        Ok(Some(link)) => link,
        Ok(None) => return unknown(req),
        Err(_) => {
            return (pages::fixed(Page::Unavailable, Lang::of(req)), None, None);
        }
    };
    let campaign = link.campaign.as_deref();
    match link.state() {
        LinkState::Live => {}
        LinkState::Disabled => return turned_away(req, &link, Outcome::Disabled),
        LinkState::Expired => return turned_away(req, &link, Outcome::Expired),
    }
    let Some(campaign) = campaign else {
        if posted.is_some() {
            return unknown(req);
        }
        return (
            send_on(req, state, &link, &link.location),
            Some(link.id),
            Some(Outcome::Redirected),
        );
    };
    campaign_answer(req, state, &link, campaign, posted).await
}

/// A campaign link's answer: its opening time, its "open in your browser" page, its password
/// and its visit limit, each of which may stop the visitor; then its target for the visitor's
/// device and app.
async fn campaign_answer(
    req: &HttpRequest,
    state: &AppState,
    link: &ResolvedLink,
    campaign: &CampaignRules,
    posted: Option<web::Payload>,
) -> Answer {
    let lang = Lang::of(req);
    let now = crate::db::now();
    if let Some(from) = campaign.valid_from
        && now < from
    {
        let shown = crate::db::local_time(from, state.core.settings.timezone);
        return (
            pages::not_yet(lang, &shown),
            Some(link.id),
            Some(Outcome::NotYetOpen),
        );
    }
    let agent = (!campaign.in_app.is_empty() || !campaign.targets.is_empty()).then(|| {
        parse_agent_cached(
            req.headers()
                .get(header::USER_AGENT)
                .map(|value| capture::text_of(value.as_bytes()))
                .as_deref(),
        )
    });
    let browser = agent
        .as_ref()
        .and_then(|agent| agent.browser.as_deref())
        .unwrap_or("");
    // A target of its own for WeChat is the link's answer there, before any in-app page.
    let wechat_target = App::WeChat.is(browser)
        && campaign
            .targets
            .iter()
            .any(|(rule, _)| *rule == TargetRule::WeChat);
    if campaign.in_app.matches(browser) && !wechat_target {
        // A protected or limited link shows its short URL: its target is not to be had
        // without the password, nor without counting the visit.
        let address = match campaign.password_hash.is_some() || campaign.limited {
            true => own_url(req),
            false => link.target().to_string(),
        };
        return (
            pages::in_app(lang, &address),
            Some(link.id),
            Some(Outcome::InAppPage),
        );
    }
    if let Some(stopped) = password_gate(req, state, link, campaign, posted, lang).await {
        return stopped;
    }
    if campaign.limited
        && let Some(stopped) = visit_gate(req, state, link, lang).await
    {
        return stopped;
    }
    let chosen = agent.as_ref().and_then(|agent| {
        campaign
            .targets
            .iter()
            .find(|(rule, _)| matches(*rule, agent))
    });
    let (location, outcome) = match chosen {
        Some((rule, location)) => (location, Outcome::RedirectedBy(*rule)),
        None => (&link.location, Outcome::Redirected),
    };
    (
        send_on(req, state, link, location),
        Some(link.id),
        Some(outcome),
    )
}

/// The password form, until the visitor posts the right password; `None`: go on. A link
/// without a password takes no posted form.
async fn password_gate(
    req: &HttpRequest,
    state: &AppState,
    link: &ResolvedLink,
    campaign: &CampaignRules,
    posted: Option<web::Payload>,
    lang: Lang,
) -> Option<Answer> {
    let Some(hash) = &campaign.password_hash else {
        return posted.is_some().then(|| unknown(req));
    };
    let Some(payload) = posted else {
        return Some((
            pages::password_form(lang, None),
            Some(link.id),
            Some(Outcome::PasswordAsked),
        ));
    };
    let candidate = posted_password(payload).await;
    let ip = state
        .core
        .settings
        .trusted_proxies
        .client_ip_of(req)
        .map(|ip| ip.to_string())
        .unwrap_or_default();
    let checked =
        visitors::check_link_password(&state.core.db, link.id, hash, &candidate, &ip).await;
    let problem = match checked {
        Ok(PasswordCheck::Right) => return None,
        Ok(PasswordCheck::Wrong) => PasswordProblem::Wrong,
        Ok(PasswordCheck::Throttled { minutes }) => PasswordProblem::Throttled { minutes },
        Err(err) => {
            tracing::error!(error = %err, "cannot check a link password");
            return Some((pages::fixed(Page::Unavailable, lang), Some(link.id), None));
        }
    };
    Some((
        pages::password_form(lang, Some(problem)),
        Some(link.id),
        Some(Outcome::WrongPassword),
    ))
}

/// Takes one of a limited link's visits; `None`: one was left.
async fn visit_gate(
    req: &HttpRequest,
    state: &AppState,
    link: &ResolvedLink,
    lang: Lang,
) -> Option<Answer> {
    if link.used_up.load(Ordering::Relaxed) {
        return Some(turned_away(req, link, Outcome::UsedUp));
    }
    match take_visit(&state.core.db, link.id).await {
        Ok(true) => None,
        Ok(false) => {
            link.used_up.store(true, Ordering::Relaxed);
            Some(turned_away(req, link, Outcome::UsedUp))
        }
        Err(err) => {
            tracing::error!(error = %err, "cannot count a visit of a limited link");
            Some((pages::fixed(Page::Unavailable, lang), Some(link.id), None))
        }
    }
}

fn unknown(req: &HttpRequest) -> Answer {
    (
        pages::fixed(Page::NotFound, Lang::of(req)),
        None,
        Some(Outcome::Unknown),
    )
}

/// A disabled, expired or used-up link: its fallback address if it has one (or its domain
/// does), else the page that says so.
fn turned_away(req: &HttpRequest, link: &ResolvedLink, outcome: Outcome) -> Answer {
    let fallback = link
        .campaign
        .as_deref()
        .and_then(|campaign| campaign.fallback.clone());
    let response = match fallback {
        Some(location) => HttpResponse::Found()
            .insert_header((header::LOCATION, location))
            .insert_header((header::CACHE_CONTROL, NO_CACHE))
            .finish(),
        None if outcome == Outcome::UsedUp => pages::fixed(Page::UsedUp, Lang::of(req)),
        None => pages::fixed(Page::Gone, Lang::of(req)),
    };
    (response, Some(link.id), Some(outcome))
}

/// Whether an alternative target's rule applies to the visitor.
fn matches(rule: TargetRule, agent: &Agent) -> bool {
    let os = agent.os.as_deref().unwrap_or("");
    match rule {
        TargetRule::Ios => os == "iOS",
        TargetRule::Android => os == "Android" || os == "HarmonyOS",
        TargetRule::Desktop => agent.device.as_deref() == Some("desktop"),
        TargetRule::WeChat => agent
            .browser
            .as_deref()
            .is_some_and(|browser| App::WeChat.is(browser)),
    }
}

/// The short URL as the visitor asked for it.
fn own_url(req: &HttpRequest) -> String {
    let info = req.connection_info();
    let path = req.uri().path_and_query().map_or("/", |p| p.as_str());
    format!("{}://{}{}", info.scheme(), info.host(), path)
}

/// The redirect to `location`, with the visitor's query parameters merged in when so
/// configured.
fn send_on(
    req: &HttpRequest,
    state: &AppState,
    link: &ResolvedLink,
    location: &HeaderValue,
) -> HttpResponse {
    let query = req.query_string();
    let location = if state.core.settings.query_merge && !query.is_empty() {
        location
            .to_str()
            .ok()
            .and_then(|target| location::merge_query(target, query))
            .and_then(|merged| HeaderValue::try_from(merged).ok())
            .unwrap_or_else(|| location.clone())
    } else {
        location.clone()
    };
    let status = StatusCode::from_u16(link.redirect.code()).expect("a redirect status");
    let mut response = HttpResponse::build(status);
    response.insert_header((header::LOCATION, location));
    if link.redirect.is_temporary() || link.campaign.is_some() {
        response.insert_header((header::CACHE_CONTROL, NO_CACHE));
    }
    response.finish()
}
