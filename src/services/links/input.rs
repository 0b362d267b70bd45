//! A new link as a front end receives it, every field still as given. The admin form, the
//! CLI, the CSV import and the REST API each fill one in and read it here, so a field follows
//! the same rules and says the same thing when it is wrong, wherever it was typed.

use super::{Campaign, NewLink};
use crate::db::entities::url_map::Strategy;
use crate::rules::time::{self, DateAlone};
use crate::rules::{
    AltTargets, CodeLength, DomainHost, InAppApps, LinkPassword, RedirectStatus, ShortCode, Tag,
    TargetUrl, UrlRules, VisitLimit,
};
use crate::state::Inklink;
use chrono_tz::Tz;
use sea_orm::DbErr;

/// A field of a new link, named as the API and the CSV file name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    Url,
    Code,
    Domain,
    Description,
    ExpiresAt,
    ValidFrom,
    RedirectStatus,
    Length,
    Password,
    MaxVisits,
    FallbackUrl,
    InAppPage,
    Targets,
    Tags,
}

impl Field {
    pub fn name(self) -> &'static str {
        match self {
            Self::Url => "url",
            Self::Code => "code",
            Self::Domain => "domain",
            Self::Description => "description",
            Self::ExpiresAt => "expires_at",
            Self::ValidFrom => "valid_from",
            Self::RedirectStatus => "redirect_status",
            Self::Length => "length",
            Self::Password => "password",
            Self::MaxVisits => "max_visits",
            Self::FallbackUrl => "fallback_url",
            Self::InAppPage => "in_app_page",
            Self::Targets => "targets",
            Self::Tags => "tags",
        }
    }
}

/// What is wrong with one field.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, crate::i18n::Says)]
#[error("{message}")]
pub struct InputError {
    pub field: Field,
    pub message: crate::i18n::Message,
}

/// Tags as the front end has them.
#[derive(Clone, Debug)]
pub enum TagInput {
    /// One text holding several, separated by commas, semicolons, `|` or line breaks (a form
    /// field, a CSV cell).
    List(String),
    /// One tag per entry (the API's array, repeated CLI flags).
    Each(Vec<String>),
}

impl Default for TagInput {
    fn default() -> Self {
        Self::Each(Vec::new())
    }
}

/// A new link's fields as given. `None` (or a blank text) is a field left out; the rules of
/// each field are those of its type in `rules`.
#[derive(Clone, Debug, Default)]
pub struct LinkInput {
    pub url: String,
    pub code: Option<String>,
    pub domain: Option<String>,
    pub description: Option<String>,
    /// A time as [`time::parse`] reads it, in the writer's time zone when it has no offset.
    pub expires_at: Option<String>,
    pub valid_from: Option<String>,
    pub redirect_status: Option<String>,
    pub length: Option<String>,
    pub strategy: Strategy,
    pub reuse: bool,
    pub password: Option<String>,
    pub max_visits: Option<String>,
    pub fallback_url: Option<String>,
    /// App names; `None`: the domain's choice; `none` or nothing: no page.
    pub in_app_page: Option<String>,
    /// `RULE=URL` entries.
    pub targets: Vec<String>,
    pub tags: TagInput,
}

/// The value, or the mistake noted against `field`.
fn check<T, E: crate::i18n::Says>(
    errors: &mut Vec<InputError>,
    field: Field,
    result: Result<T, E>,
) -> Option<T> {
    result
        .map_err(|err| {
            errors.push(InputError {
                field,
                message: err.says(),
            })
        })
        .ok()
}

/// A given, non-blank text.
fn given(field: &Option<String>) -> Option<&str> {
    field.as_deref().filter(|text| !text.trim().is_empty())
}

impl LinkInput {
    /// [`LinkInput::parse`] under the service's rules, read from the database now.
    pub async fn read(
        &self,
        app: &Inklink,
        zone: Tz,
    ) -> Result<Result<NewLink, Vec<InputError>>, DbErr> {
        let own_hosts = crate::services::domains::own_hosts(&app.db).await?;
        Ok(self.parse(&super::url_rules(app, &own_hosts), zone))
    }

    /// The typed link, or what is wrong with each field (every mistake at once, in field
    /// order). Times without an offset are read in `zone`.
    pub fn parse(&self, rules: &UrlRules<'_>, zone: Tz) -> Result<NewLink, Vec<InputError>> {
        let mut errors = Vec::new();
        let target = check(
            &mut errors,
            Field::Url,
            TargetUrl::parse(self.url.trim(), rules),
        );
        let code = given(&self.code)
            .and_then(|code| check(&mut errors, Field::Code, ShortCode::parse(code.trim())));
        let domain = given(&self.domain)
            .and_then(|host| check(&mut errors, Field::Domain, DomainHost::parse(host.trim())));
        let expires_at = given(&self.expires_at).and_then(|text| {
            check(
                &mut errors,
                Field::ExpiresAt,
                time::parse(text, zone, DateAlone::Ends),
            )
        });
        let valid_from = given(&self.valid_from).and_then(|text| {
            check(
                &mut errors,
                Field::ValidFrom,
                time::parse(text, zone, DateAlone::Starts),
            )
        });
        let redirect_status = given(&self.redirect_status).and_then(|text| {
            check(
                &mut errors,
                Field::RedirectStatus,
                text.trim().parse::<RedirectStatus>(),
            )
        });
        let length = given(&self.length)
            .and_then(|text| check(&mut errors, Field::Length, CodeLength::parse(text.trim())));
        // A password is taken as typed: spaces around it are part of it.
        let password = self
            .password
            .as_deref()
            .filter(|text| !text.is_empty())
            .and_then(|text| check(&mut errors, Field::Password, LinkPassword::parse(text)));
        let max_visits = given(&self.max_visits)
            .and_then(|text| check(&mut errors, Field::MaxVisits, VisitLimit::parse(text)));
        let fallback = given(&self.fallback_url).and_then(|url| {
            check(
                &mut errors,
                Field::FallbackUrl,
                TargetUrl::parse(url.trim(), rules),
            )
        });
        let in_app = self
            .in_app_page
            .as_deref()
            .and_then(|text| check(&mut errors, Field::InAppPage, InAppApps::parse(text)));
        let targets = check(
            &mut errors,
            Field::Targets,
            AltTargets::parse_lines(self.targets.iter().map(String::as_str), rules),
        );
        let tags = check(
            &mut errors,
            Field::Tags,
            match &self.tags {
                TagInput::List(text) => Tag::parse_list(text),
                TagInput::Each(tags) => Tag::parse_each(tags.iter().map(String::as_str)),
            },
        );
        match (target, targets, tags) {
            (Some(target), Some(targets), Some(tags)) if errors.is_empty() => Ok(NewLink {
                custom_code: code,
                domain,
                description: given(&self.description).map(str::to_owned),
                expires_at,
                redirect_status,
                strategy: self.strategy,
                reuse: self.reuse,
                length,
                campaign: Campaign {
                    password,
                    max_visits,
                    valid_from,
                    fallback,
                    in_app,
                    targets,
                },
                tags,
                ..NewLink::to(target)
            }),
            _ => Err(errors),
        }
    }
}
