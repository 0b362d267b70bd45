//! Creating and changing short links.

pub mod bulk;
mod create;
mod edit;
pub mod input;
pub mod listing;
pub mod many;

pub use create::{create, create_many};
pub use edit::{edit, set_status, update};
pub use input::{Field, InputError, LinkInput, TagInput};

use super::audit::{self, Actor, Entry};
use super::domains;
use crate::db::entities::domain_conf::{self, DomainStatus};
use crate::db::entities::url_map::{self, LinkState, LinkStatus, Strategy};
use crate::db::{self, is_unique_violation};
use crate::rules::codes::CodeSpaceExhausted;
use crate::rules::{
    AltTargets, CodeError, CodeLength, DomainHost, InAppApps, LinkPassword, RedirectStatus,
    ShortCode, Tag, TargetUrl, TargetUrlError, UrlRules, VisitLimit,
};
use crate::state::Inklink;
use chrono::{DateTime, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveEnum, ActiveModelTrait, ColumnTrait, DatabaseConnection, DatabaseTransaction, DbErr,
    EntityTrait, QueryFilter, Set,
};
use serde_json::json;
use std::collections::HashMap;

pub const MAX_DESCRIPTION_CHARS: usize = 2000;
/// Sequence ids tried before giving up; only custom codes of the generated shape can take one.
const SEQUENCE_ATTEMPTS: usize = 1000;
const HASH_CANDIDATES: usize = 64;

#[derive(Debug, thiserror::Error, crate::i18n::Says)]
pub enum LinkError {
    #[error("the code '{0}' is already taken; choose another")]
    CodeTaken(String),
    #[error("there is no domain '{0}'; add it first (inklink domain add {0})")]
    UnknownDomain(String),
    #[error("the domain '{0}' is disabled; choose an active domain")]
    DomainDisabled(String),
    #[error(
        "the domain '{0}' is a standby: it takes new links once it is the default; choose another domain"
    )]
    DomainStandby(String),
    #[error("no default domain is configured; add one with: inklink domain add HOST --default")]
    NoDefaultDomain,
    #[error("the expiry {0} is in the past; choose a later date and time")]
    ExpiryInPast(String),
    #[error("the description is {0} characters long; at most {MAX_DESCRIPTION_CHARS} are allowed")]
    DescriptionTooLong(usize),
    #[error("there is no link with the code '{0}'")]
    NotFound(String),
    #[error("you may change only the links you created; ask an admin to change '{0}'")]
    NotYours(String),
    #[error(transparent)]
    InvalidUrl(#[from] TargetUrlError),
    #[error(transparent)]
    InvalidCode(#[from] CodeError),
    #[error(transparent)]
    Exhausted(#[from] CodeSpaceExhausted),
    #[error("no free code was found for this URL; try again or choose a custom code")]
    NoFreeCode,
    #[error("a custom code was asked for, but no code was given; give the code you want")]
    CustomWithoutCode,
    #[error(
        "the link '{0}' was changed by someone else since you opened it; reload it and make your change again"
    )]
    Stale(String),
    #[error(
        "the link opens at {0}, which is after its expiry; choose a valid-from time before the expiry"
    )]
    OpensAfterExpiry(String),
    #[error("database error: {0}")]
    Db(#[from] DbErr),
}

/// What a campaign link carries besides its target. The default is a plain link.
#[derive(Clone, Debug, Default)]
pub struct Campaign {
    /// Visitors must give it before they are sent on.
    pub password: Option<LinkPassword>,
    /// Redirects the link serves at most, over all instances.
    pub max_visits: Option<VisitLimit>,
    /// Before this time the link answers "not yet open".
    pub valid_from: Option<DateTime<Utc>>,
    /// Where the link sends visitors once disabled, expired or used up.
    pub fallback: Option<TargetUrl>,
    /// The in-app browsers shown "open in your browser"; `None`: the domain's choice.
    pub in_app: Option<InAppApps>,
    /// Other targets by device and app, the first matching rule winning.
    pub targets: AltTargets,
}

impl Campaign {
    pub fn is_plain(&self) -> bool {
        self.password.is_none()
            && self.max_visits.is_none()
            && self.valid_from.is_none()
            && self.fallback.is_none()
            && self.in_app.is_none()
            && self.targets.is_empty()
    }
}

/// A change of a link's campaign settings: each `Some` replaces that setting (`Some(None)`
/// removes it), each `None` keeps it.
#[derive(Clone, Debug, Default)]
pub struct CampaignEdit {
    pub password: Option<Option<LinkPassword>>,
    pub max_visits: Option<Option<VisitLimit>>,
    pub valid_from: Option<Option<DateTime<Utc>>>,
    pub fallback: Option<Option<TargetUrl>>,
    pub in_app: Option<Option<InAppApps>>,
    pub targets: Option<AltTargets>,
}

impl CampaignEdit {
    pub fn is_empty(&self) -> bool {
        self.password.is_none()
            && self.max_visits.is_none()
            && self.valid_from.is_none()
            && self.fallback.is_none()
            && self.in_app.is_none()
            && self.targets.is_none()
    }
}

#[derive(Clone, Debug)]
pub struct NewLink {
    pub target: TargetUrl,
    pub custom_code: Option<ShortCode>,
    pub domain: Option<DomainHost>,
    pub description: Option<String>,
    pub expires_at: Option<DateTime<Utc>>,
    pub redirect_status: Option<RedirectStatus>,
    /// Sequence or hash; ignored when a custom code is given.
    pub strategy: Strategy,
    /// Return the existing active link for the same URL and domain instead of a new one.
    pub reuse: bool,
    /// The generated code's length; `None`: `INKLINK_CODE_LENGTH`. Ignored with a custom code.
    pub length: Option<CodeLength>,
    pub campaign: Campaign,
    /// The campaigns the link belongs to.
    pub tags: Vec<Tag>,
}

impl NewLink {
    pub fn to(target: TargetUrl) -> Self {
        Self {
            target,
            custom_code: None,
            domain: None,
            description: None,
            expires_at: None,
            redirect_status: None,
            strategy: Strategy::Sequence,
            reuse: false,
            length: None,
            campaign: Campaign::default(),
            tags: Vec::new(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Created,
    Reused,
}

#[derive(Clone, Debug)]
pub struct SavedLink {
    pub link: url_map::Model,
    pub domain: domain_conf::Model,
    pub outcome: Outcome,
}

impl SavedLink {
    pub fn short_url(&self) -> String {
        domains::short_url(&self.domain, &self.link.compression_code)
    }
}

/// Reads a target URL the way every front end must: under the configured length limit and
/// never on one of our own domains.
pub async fn parse_target(app: &Inklink, input: &str) -> Result<TargetUrl, LinkError> {
    let own_hosts = domains::own_hosts(&app.db).await?;
    Ok(TargetUrl::parse(input, &url_rules(app, &own_hosts))?)
}

/// The rules every target URL follows: the configured length limit, and none of `own_hosts`
/// (from [`domains::own_hosts`]).
pub fn url_rules<'a>(app: &Inklink, own_hosts: &'a [crate::rules::OwnHost]) -> UrlRules<'a> {
    UrlRules {
        max_length: app.settings.max_url_length as usize,
        own_hosts,
    }
}

pub fn url_digest(url: &str) -> String {
    crate::digest::sha256_hex(url)
}

fn check_new(new: &NewLink) -> Result<(), LinkError> {
    if new.strategy == Strategy::Custom && new.custom_code.is_none() {
        return Err(LinkError::CustomWithoutCode);
    }
    check_fields(new.description.as_deref(), new.expires_at, None)?;
    check_window(new.campaign.valid_from, new.expires_at.map(db::to_stored))
}

/// A link must be open for some time: its valid-from time comes before its expiry.
fn check_window(
    valid_from: Option<DateTime<Utc>>,
    expires_at: Option<chrono::NaiveDateTime>,
) -> Result<(), LinkError> {
    match (valid_from, expires_at) {
        (Some(from), Some(until)) if db::to_stored(from) >= until => {
            Err(LinkError::OpensAfterExpiry(from.to_rfc3339()))
        }
        _ => Ok(()),
    }
}

/// The rules a link's description and expiry follow, on creation and on every edit. An expiry
/// the link already has may stay although it has passed.
fn check_fields(
    description: Option<&str>,
    expires_at: Option<DateTime<Utc>>,
    current_expiry: Option<chrono::NaiveDateTime>,
) -> Result<(), LinkError> {
    if let Some(description) = description {
        let chars = description.chars().count();
        if chars > MAX_DESCRIPTION_CHARS {
            return Err(LinkError::DescriptionTooLong(chars));
        }
    }
    if let Some(expires_at) = expires_at
        && expires_at <= Utc::now()
        && current_expiry != Some(db::to_stored(expires_at))
    {
        return Err(LinkError::ExpiryInPast(expires_at.to_rfc3339()));
    }
    Ok(())
}
/// An audit snapshot with the link's tags.
fn with_tags(mut snapshot: serde_json::Value, tags: &[Tag]) -> serde_json::Value {
    snapshot["tags"] = json!(tags.iter().map(Tag::as_str).collect::<Vec<_>>());
    snapshot
}

fn snapshot(link: &url_map::Model) -> serde_json::Value {
    json!({
        "code": link.compression_code,
        "url": link.long_url,
        "domain_id": link.domain_id,
        "status": link.url_status.to_value(),
        "redirect_status": link.redirect_status,
        "expires_at": link.expires_at.map(|t| t.and_utc().to_rfc3339()),
        "description": link.description,
        "password": link.password_hash.is_some(),
        "max_visits": link.max_visits,
        "valid_from": link.valid_from.map(|t| t.and_utc().to_rfc3339()),
        "fallback_url": link.fallback_url,
        "in_app_page": link.in_app_page,
        "targets": link.alt_targets,
    })
}

fn is_live(link: &url_map::Model) -> bool {
    !link.deleted && link.state(db::now()) == LinkState::Live
}

async fn resolve_domain(
    db: &DatabaseConnection,
    requested: Option<&DomainHost>,
) -> Result<domain_conf::Model, LinkError> {
    let domain = match requested {
        Some(host) => domains::find_by_host(db, host)
            .await?
            .ok_or_else(|| LinkError::UnknownDomain(host.to_string()))?,
        None => domains::default_domain(db)
            .await?
            .ok_or(LinkError::NoDefaultDomain)?,
    };
    if domain.status != DomainStatus::Active {
        return Err(LinkError::DomainDisabled(domain.host));
    }
    if domain.standby {
        return Err(LinkError::DomainStandby(domain.host));
    }
    Ok(domain)
}

async fn find_reusable(
    db: &DatabaseConnection,
    target: &TargetUrl,
    digest: &str,
    domain_id: i64,
) -> Result<Option<url_map::Model>, DbErr> {
    let candidates = url_map::Entity::find()
        .filter(url_map::Column::LongUrlDigest.eq(digest))
        .filter(url_map::Column::DomainId.eq(domain_id))
        .filter(url_map::Column::UrlStatus.eq(LinkStatus::Active))
        .filter(url_map::Column::Deleted.eq(false))
        .all(db)
        .await?;
    Ok(candidates
        .into_iter()
        .find(|link| link.long_url == target.as_str() && is_live(link)))
}

pub async fn find_by_code(
    db: &DatabaseConnection,
    code: &ShortCode,
) -> Result<Option<url_map::Model>, DbErr> {
    url_map::Entity::find()
        .filter(url_map::Column::CompressionCode.eq(code.as_str()))
        .filter(url_map::Column::Deleted.eq(false))
        .one(db)
        .await
}

/// What an edit may change. The code is the link's identity and stays.
#[derive(Clone, Debug)]
pub struct LinkChanges {
    pub target: TargetUrl,
    pub description: Option<String>,
    pub expires_at: Option<DateTime<Utc>>,
    pub redirect_status: Option<RedirectStatus>,
}

/// The one rule for every front end: admins (people, keys, the CLI) change any link;
/// operators only the links they created themselves, whoever else shares their name.
pub fn may_change(actor: &Actor, link: &url_map::Model) -> Result<(), LinkError> {
    match actor.is_admin() || actor.is(link.creator_kind.as_deref(), link.creator_id) {
        true => Ok(()),
        false => Err(LinkError::NotYours(link.compression_code.to_string())),
    }
}

/// An edit: new content, a new status, or both, applied together or not at all.
#[derive(Clone, Debug, Default)]
pub struct LinkEdit {
    pub changes: Option<LinkChanges>,
    pub status: Option<LinkStatus>,
    pub campaign: CampaignEdit,
    /// A new set of tags; `None` keeps them.
    pub tags: Option<Vec<Tag>>,
}

/// Soft-deletes a link: it disappears from lists and answers 404, and its code is never
/// issued again (a code that was once sent out must not lead somewhere new).
pub async fn delete(app: &Inklink, code: &ShortCode, actor: &Actor) -> Result<(), LinkError> {
    let db = &app.db;
    let link = find_by_code(db, code)
        .await?
        .ok_or_else(|| LinkError::NotFound(code.to_string()))?;
    may_change(actor, &link)?;
    let txn = db::begin_write(db).await?;
    let result = async {
        url_map::ActiveModel {
            id: Set(link.id),
            deleted: Set(true),
            editor: Set(Some(actor.name().to_owned())),
            edited_at: Set(db::now()),
            version: Set(link.version + 1),
            ..Default::default()
        }
        .update(&txn)
        .await?;
        audit::record(
            &txn,
            actor,
            Entry {
                action: "link.delete",
                target_kind: "link",
                target_id: &link.compression_code,
                before: Some(snapshot(&link)),
                after: None,
            },
        )
        .await?;
        Ok::<_, LinkError>(())
    }
    .await;
    db::finish(txn, result).await?;
    app.link_cache.forget(code.as_str());
    Ok(())
}
