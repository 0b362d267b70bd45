//! The new-link and edit forms: what they send, read through the one [`LinkInput`] every front
//! end shares, each mistake kept beside its field.

use crate::admin::error::AdminError;
use crate::db::entities::url_map;
use crate::i18n::Text;
use crate::i18n::{Message, Says};
use crate::rules::{App, InAppApps, Tag, TargetRule, TargetUrl, VisitLimit};
use crate::services::links::{self, Campaign, Field, LinkError, LinkInput, NewLink, TagInput};
use crate::services::tags::Utm;
use crate::state::AppState;
use std::collections::HashMap;

/// The device rows of the form, in the order their rules are stored and tried (the first that
/// matches wins): inside WeChat before the phone it runs on.
const ROWS: [TargetRule; 4] = [
    TargetRule::WeChat,
    TargetRule::Ios,
    TargetRule::Android,
    TargetRule::Desktop,
];

/// A message per form field.
pub type Errors = HashMap<&'static str, Message>;

#[derive(serde::Deserialize, Default, Clone)]
#[serde(default)]
pub struct LinkForm {
    pub csrf: String,
    pub url: String,
    pub code: String,
    pub domain: String,
    pub description: String,
    /// `YYYY-MM-DDTHH:MM` from a datetime-local input, in the person's time zone.
    pub expires: String,
    pub redirect_status: String,
    /// Tags separated by commas.
    pub tags: String,
    /// Campaign settings (the new-link form only).
    pub length: String,
    pub password: String,
    pub max_visits: String,
    pub valid_from: String,
    pub fallback_url: String,
    pub in_app_page: String,
    pub targets: String,
    pub utm_source: String,
    pub utm_medium: String,
    pub utm_campaign: String,
    pub utm_term: String,
    pub utm_content: String,
    /// The edit form: remove the visitor password.
    pub remove_password: String,
    /// The "open in browser" page as the form's radio buttons choose it: `domain`, `none` or
    /// `apps` (the ticked `in_app.KEY` boxes); absent when a client sends `in_app_page` itself.
    pub in_app_mode: String,
    /// The boxes and rows of the campaign settings (`in_app.wechat`, `target.ios`), folded into
    /// `in_app_page` and `targets` by [`LinkForm::settle`].
    #[serde(flatten)]
    pub choices: HashMap<String, String>,
}

impl LinkForm {
    /// Whether a campaign setting has a value (the code length aside: it always has one).
    pub fn campaign_set(&self) -> bool {
        [
            &self.password,
            &self.max_visits,
            &self.valid_from,
            &self.fallback_url,
            &self.targets,
        ]
        .iter()
        .any(|value| !value.trim().is_empty())
            || !matches!(self.in_app_page.trim(), "" | "domain")
    }

    /// Folds the checkboxes and rows of the campaign settings into the text fields they stand
    /// for. A client that sends the text fields (scripts, older forms) is read as it is.
    pub fn settle(&mut self) {
        let ticked = |choices: &HashMap<String, String>, key: &str| {
            choices
                .get(&format!("in_app.{key}"))
                .is_some_and(|v| !v.is_empty())
        };
        match self.in_app_mode.as_str() {
            "domain" => self.in_app_page = String::new(),
            "none" => self.in_app_page = "none".to_owned(),
            "apps" => {
                let apps: Vec<&str> = App::ALL
                    .into_iter()
                    .map(App::key)
                    .filter(|key| ticked(&self.choices, key))
                    .collect();
                // "In these apps" with none ticked is a page in no app.
                self.in_app_page = match apps.is_empty() {
                    true => "none".to_owned(),
                    false => apps.join(","),
                };
            }
            _ => {}
        }
        let row = |rule: TargetRule| self.choices.get(&format!("target.{}", rule.as_str()));
        // Rows are read only from a form that has them (scripts send `targets` itself).
        if ROWS.into_iter().any(|rule| row(rule).is_some()) {
            self.targets = ROWS
                .into_iter()
                .filter_map(|rule| {
                    let url = row(rule)?.trim();
                    (!url.is_empty()).then(|| format!("{}={url}", rule.as_str()))
                })
                .collect::<Vec<_>>()
                .join("\n");
        }
    }

    /// Which radio button of the "open in browser" page is on.
    pub fn in_app_mode(&self) -> &'static str {
        match self.in_app_page.trim() {
            "" | "domain" => "domain",
            "none" => "none",
            _ => "apps",
        }
    }

    /// Each in-app browser: its key, its name, and whether it is ticked.
    pub fn in_app_choices(&self) -> Vec<(&'static str, Text, bool)> {
        let chosen = InAppApps::parse(&self.in_app_page).unwrap_or(InAppApps::NONE);
        App::ALL
            .into_iter()
            .map(|app| (app.key(), app.words(), chosen.contains(app)))
            .collect()
    }

    /// Each device rule: its key, what it is called, and its URL as typed or stored.
    pub fn target_rows(&self) -> Vec<(&'static str, Text, String)> {
        ROWS.into_iter()
            .map(|rule| {
                let url = self
                    .targets
                    .lines()
                    .filter_map(|line| line.split_once('='))
                    .find(|(name, _)| name.trim().eq_ignore_ascii_case(rule.as_str()))
                    .map(|(_, url)| url.trim().to_owned())
                    .unwrap_or_default();
                let label = match rule {
                    TargetRule::Ios => t!("iPhone and iPad"),
                    TargetRule::Android => t!("Android and HarmonyOS"),
                    TargetRule::Desktop => t!("Computers"),
                    TargetRule::WeChat => t!("Inside WeChat"),
                };
                (rule.as_str(), label, url)
            })
            .collect()
    }

    /// The fields as given; the domain's choice (`domain`) for the in-app page is no setting.
    fn input(&self) -> LinkInput {
        let text = |value: &str| Some(value.to_owned());
        LinkInput {
            url: TargetUrl::with_default_scheme(&self.url).into_owned(),
            code: text(&self.code),
            domain: text(&self.domain),
            description: text(self.description.trim()),
            expires_at: text(&self.expires),
            valid_from: text(&self.valid_from),
            redirect_status: text(&self.redirect_status),
            length: text(&self.length),
            password: text(&self.password),
            max_visits: text(&self.max_visits),
            fallback_url: text(&self.fallback_url),
            in_app_page: match self.in_app_page.trim() {
                "" | "domain" => None,
                apps => text(apps),
            },
            targets: self.targets.lines().map(str::to_owned).collect(),
            tags: TagInput::List(self.tags.clone()),
            ..LinkInput::default()
        }
    }

    /// The link the form describes, or each field's mistake. Times are in `tz`.
    pub async fn read(
        &self,
        state: &AppState,
        tz: chrono_tz::Tz,
    ) -> Result<Result<NewLink, Errors>, AdminError> {
        Ok(self.input().read(&state.core, tz).await?.map_err(|errors| {
            errors
                .into_iter()
                .map(|err| (form_field(err.field), err.message))
                .collect()
        }))
    }
}

/// The form's name for a field (the expiry is `expires` here).
fn form_field(field: Field) -> &'static str {
    match field {
        Field::ExpiresAt => "expires",
        other => other.name(),
    }
}

/// The edit form's campaign fields as a change of what differs from `link`: an emptied field
/// removes the setting; the password stays unless a new one is typed or its removal ticked.
pub fn campaign_edit(
    form: &LinkForm,
    campaign: Campaign,
    link: &url_map::Model,
) -> links::CampaignEdit {
    let changed = |now: Option<String>, stored: &Option<String>| now != *stored;
    links::CampaignEdit {
        password: match (form.remove_password == "yes", campaign.password) {
            (true, _) if link.password_hash.is_some() => Some(None),
            (_, Some(password)) => Some(Some(password)),
            _ => None,
        },
        max_visits: (campaign.max_visits.map(VisitLimit::get) != link.max_visits)
            .then_some(campaign.max_visits),
        valid_from: (campaign.valid_from.map(crate::db::to_stored) != link.valid_from)
            .then_some(campaign.valid_from),
        fallback: changed(
            campaign.fallback.as_ref().map(ToString::to_string),
            &link.fallback_url,
        )
        .then_some(campaign.fallback),
        in_app: changed(
            campaign.in_app.map(|apps| apps.to_string()),
            &link.in_app_page,
        )
        .then_some(campaign.in_app),
        targets: changed(campaign.targets.to_stored(), &link.alt_targets)
            .then_some(campaign.targets),
    }
}

/// The UTM builder: the parameters filled in are written into the target URL (replacing a
/// value the URL already has for the same parameter). When none is filled in, the preset of
/// the first of the link's tags that has one applies.
pub async fn with_utm(
    state: &AppState,
    target: TargetUrl,
    form: &LinkForm,
    tags: &[Tag],
    errors: &mut Errors,
) -> Result<Option<TargetUrl>, AdminError> {
    let url = utm_url(state, target, form, tags).await?;
    match links::parse_target(&state.core, &url).await {
        Ok(target) => Ok(Some(target)),
        Err(LinkError::Db(err)) => Err(err.into()),
        Err(err) => {
            errors.insert("url", err.says());
            Ok(None)
        }
    }
}

/// The target with the UTM parameters typed (or the tags' preset) written in, to be checked
/// again as a target (the parameters may make it too long).
pub async fn utm_url(
    state: &AppState,
    target: TargetUrl,
    form: &LinkForm,
    tags: &[Tag],
) -> Result<String, sea_orm::DbErr> {
    let typed = Utm {
        source: form.utm_source.clone(),
        medium: form.utm_medium.clone(),
        campaign: form.utm_campaign.clone(),
        term: form.utm_term.clone(),
        content: form.utm_content.clone(),
    };
    let utm = match typed.is_empty() {
        false => typed,
        true => match crate::services::tags::preset_for(&state.core.db, tags).await? {
            Some(preset) => preset,
            None => return Ok(target.as_str().to_owned()),
        },
    };
    let pairs = utm.pairs();
    let mut url = url::Url::parse(target.as_str()).expect("a target URL parses");
    let kept: Vec<(String, String)> = url
        .query_pairs()
        .filter(|(key, _)| !pairs.iter().any(|(name, _)| key == name))
        .map(|(key, value)| (key.into_owned(), value.into_owned()))
        .collect();
    url.query_pairs_mut()
        .clear()
        .extend_pairs(kept)
        .extend_pairs(pairs);
    Ok(url.to_string())
}

/// Which field a service error belongs to; database failures are not the user's.
pub fn field_of(err: LinkError) -> Result<(&'static str, Message), AdminError> {
    let field = match err {
        LinkError::NotFound(_) | LinkError::Db(_) => return Err(err.into()),
        LinkError::CodeTaken(_) | LinkError::InvalidCode(_) | LinkError::CustomWithoutCode => {
            "code"
        }
        LinkError::UnknownDomain(_)
        | LinkError::DomainDisabled(_)
        | LinkError::DomainStandby(_)
        | LinkError::NoDefaultDomain => "domain",
        LinkError::ExpiryInPast(_) => "expires",
        LinkError::OpensAfterExpiry(_) => "valid_from",
        LinkError::DescriptionTooLong(_) => "description",
        _ => "url",
    };
    Ok((field, err.says()))
}
