//! The link fields of the API's JSON read into the service's types: a new link through the
//! [`LinkInput`] every front end shares, an edit's fields one by one, each refusal with its
//! error code.

use super::error::{ApiError, ErrorCode};
use super::model::{AltTarget, CodeStrategy, CreateLink};
use crate::db::entities::url_map::Strategy;
use crate::rules::{AltTargets, InAppApps, LinkPassword, Tag, TargetUrl, UrlRules};
use crate::services::links::{Field, LinkInput, NewLink, TagInput};

/// A field's refusal, with the error code every API client sees for that field.
pub fn refused(field: Field, err: impl std::fmt::Display) -> ApiError {
    let code = match field {
        Field::Url | Field::FallbackUrl => ErrorCode::InvalidUrl,
        Field::Code => ErrorCode::InvalidCode,
        Field::Domain => ErrorCode::UnknownDomain,
        _ => ErrorCode::InvalidValue,
    };
    ApiError::invalid(code, err.to_string(), field.name())
}

pub fn password(input: &str) -> Result<LinkPassword, ApiError> {
    LinkPassword::parse(input).map_err(|err| refused(Field::Password, err))
}

pub fn tag_list(tags: &[String]) -> Result<Vec<Tag>, ApiError> {
    Tag::parse_each(tags.iter().map(String::as_str)).map_err(|err| refused(Field::Tags, err))
}

pub fn fallback(input: &str, rules: &UrlRules<'_>) -> Result<TargetUrl, ApiError> {
    TargetUrl::parse(input, rules).map_err(|err| refused(Field::FallbackUrl, err))
}

pub fn in_app(apps: &[String]) -> Result<InAppApps, ApiError> {
    InAppApps::parse(&apps.join(",")).map_err(|err| refused(Field::InAppPage, err))
}

/// The targets as the `RULE=URL` entries every front end gives.
fn target_entries(targets: &[AltTarget]) -> Vec<String> {
    targets
        .iter()
        .map(|target| format!("{}={}", target.rule, target.url))
        .collect()
}

pub fn alt_targets(targets: &[AltTarget], rules: &UrlRules<'_>) -> Result<AltTargets, ApiError> {
    let entries = target_entries(targets);
    AltTargets::parse_lines(entries.iter().map(String::as_str), rules)
        .map_err(|err| refused(Field::Targets, err))
}

/// Checks one create request against the rules (no database needed beyond `rules`). The
/// JSON has typed its numbers and times already; the rest is read as every front end reads it.
pub fn new_link(input: CreateLink, rules: &UrlRules<'_>) -> Result<NewLink, ApiError> {
    let given = LinkInput {
        url: input.url,
        code: input.code,
        domain: input.domain,
        description: input.description,
        expires_at: input.expires_at.map(|at| at.0.to_rfc3339()),
        valid_from: input.valid_from.map(|at| at.0.to_rfc3339()),
        redirect_status: input.redirect_status.map(|code| code.0.code().to_string()),
        length: input.length.map(|length| length.0.get().to_string()),
        strategy: match input.strategy {
            Some(CodeStrategy::Hash) => Strategy::Hash,
            _ => Strategy::Sequence,
        },
        reuse: input.reuse.unwrap_or(false),
        password: input.password,
        max_visits: input.max_visits.map(|count| count.0.get().to_string()),
        fallback_url: input.fallback_url,
        in_app_page: input.in_app_page.map(|apps| apps.join(",")),
        targets: target_entries(&input.targets.unwrap_or_default()),
        tags: TagInput::Each(input.tags.unwrap_or_default()),
    };
    given.parse(rules, chrono_tz::UTC).map_err(|errors| {
        let first = errors
            .into_iter()
            .next()
            .expect("a refused input names a field");
        let code = match first.field {
            Field::Url | Field::FallbackUrl => ErrorCode::InvalidUrl,
            Field::Code => ErrorCode::InvalidCode,
            Field::Domain => ErrorCode::UnknownDomain,
            _ => ErrorCode::InvalidValue,
        };
        ApiError::invalid(code, first.message.to_string(), first.field.name())
    })
}
