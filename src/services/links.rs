//! Creating and changing short links.

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

#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    #[error("the code '{0}' is already taken; choose another")]
    CodeTaken(String),
    #[error("there is no domain '{0}'; add it first (inklink domain add {0})")]
    UnknownDomain(String),
    #[error("the domain '{0}' is disabled; choose an active domain")]
    DomainDisabled(String),
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
    let rules = UrlRules {
        max_length: app.settings.max_url_length as usize,
        own_hosts: &own_hosts,
    };
    Ok(TargetUrl::parse(input, &rules)?)
}

pub fn url_digest(url: &str) -> String {
    crate::digest::sha256_hex(url)
}

pub async fn create(app: &Inklink, new: NewLink, actor: &Actor) -> Result<SavedLink, LinkError> {
    let db = &app.db;
    let domain = resolve_domain(db, new.domain.as_ref()).await?;
    check_new(&new)?;
    let digest = url_digest(new.target.as_str());
    if new.reuse
        && let Some(link) = find_reusable(db, &new.target, &digest, domain.id).await?
    {
        return Ok(SavedLink {
            link,
            domain,
            outcome: Outcome::Reused,
        });
    }
    let password_hash = match &new.campaign.password {
        Some(password) => Some(super::users::hash_secret_async(password.expose()).await),
        None => None,
    };
    let draft = Draft {
        new: &new,
        digest: &digest,
        domain_id: domain.id,
        actor,
        password_hash,
    };

    let saved = if let Some(code) = &new.custom_code {
        app.codes.format().check_custom(code)?;
        match draft.insert(db, code, Strategy::Custom).await {
            Err(err) if is_unique_violation(&err) => Err(LinkError::CodeTaken(code.to_string())),
            other => Ok(other?),
        }?
    } else if new.strategy == Strategy::Hash {
        match create_hashed(app, &draft).await? {
            Hashed::New(link) => link,
            Hashed::Existing(link) => {
                return Ok(SavedLink {
                    link,
                    domain,
                    outcome: Outcome::Reused,
                });
            }
        }
    } else {
        create_sequenced(app, &draft).await?
    };
    // An unknown-code answer for this code may be cached from before it existed.
    app.link_cache.forget(&saved.compression_code);
    Ok(SavedLink {
        link: saved,
        domain,
        outcome: Outcome::Created,
    })
}

/// Links per transaction in [`create_many`]: 500 rows of url_map stay under every backend's
/// parameter limit.
const BULK_CHUNK: usize = 500;

/// Creates many links, results in input order. Plain ones (a generated sequence code, no
/// reuse) go in chunks: one transaction and three statements per chunk instead of two
/// statements and a commit per link. The rest, and any chunk the database refuses as a whole
/// (a custom code that happens to equal a generated one), go one by one through [`create`].
pub async fn create_many(
    app: &Inklink,
    items: Vec<NewLink>,
    actor: &Actor,
) -> Vec<Result<SavedLink, LinkError>> {
    let mut results: Vec<Option<Result<SavedLink, LinkError>>> =
        std::iter::repeat_with(|| None).take(items.len()).collect();
    let mut domains: HashMap<Option<String>, domain_conf::Model> = HashMap::new();
    let mut plain = Vec::new();
    for (index, new) in items.into_iter().enumerate() {
        if new.custom_code.is_some()
            || new.reuse
            || new.strategy != Strategy::Sequence
            || new.length.is_some()
            || !new.campaign.is_plain()
            || !new.tags.is_empty()
        {
            results[index] = Some(create(app, new, actor).await);
            continue;
        }
        let key = new.domain.as_ref().map(ToString::to_string);
        let domain = match domains.get(&key) {
            Some(domain) => domain.clone(),
            None => match resolve_domain(&app.db, new.domain.as_ref()).await {
                Ok(domain) => {
                    domains.insert(key, domain.clone());
                    domain
                }
                Err(err) => {
                    results[index] = Some(Err(err));
                    continue;
                }
            },
        };
        if let Err(err) = check_new(&new) {
            results[index] = Some(Err(err));
            continue;
        }
        plain.push((index, new, domain));
    }
    for chunk in plain.chunks(BULK_CHUNK) {
        match insert_chunk(app, chunk, actor).await {
            Ok(saved) => {
                for ((index, _, _), link) in chunk.iter().zip(saved) {
                    app.link_cache.forget(&link.link.compression_code);
                    results[*index] = Some(Ok(link));
                }
            }
            Err(err) => {
                tracing::debug!(error = %err, "bulk insert refused; creating this chunk one by one");
                for (index, new, _) in chunk {
                    results[*index] = Some(create(app, new.clone(), actor).await);
                }
            }
        }
    }
    results
        .into_iter()
        .map(|result| result.expect("every item has a result"))
        .collect()
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

async fn insert_chunk(
    app: &Inklink,
    chunk: &[(usize, NewLink, domain_conf::Model)],
    actor: &Actor,
) -> Result<Vec<SavedLink>, LinkError> {
    let mut codes = Vec::with_capacity(chunk.len());
    while codes.len() < chunk.len() {
        let id = app.allocator.next_id(&app.db).await?;
        if let Some(code) = app.codes.code_for_id(id)? {
            codes.push(code);
        }
    }
    let now = db::now();
    let models = chunk
        .iter()
        .zip(&codes)
        .map(|((_, new, domain), code)| url_map::ActiveModel {
            compression_code: Set(code.clone()),
            long_url: Set(new.target.to_string()),
            long_url_digest: Set(url_digest(new.target.as_str())),
            domain_id: Set(domain.id),
            description: Set(new.description.clone().filter(|d| !d.is_empty())),
            url_status: Set(LinkStatus::Active),
            redirect_status: Set(new.redirect_status.map(|s| s.code() as i16)),
            expires_at: Set(new.expires_at.map(db::to_stored)),
            strategy: Set(Strategy::Sequence),
            creator: Set(Some(actor.name().to_owned())),
            creator_kind: Set(Some(actor.kind().to_owned())),
            creator_id: Set(actor.id()),
            editor: Set(Some(actor.name().to_owned())),
            created_at: Set(now),
            edited_at: Set(now),
            deleted: Set(false),
            version: Set(1),
            ..Default::default()
        });
    let txn = db::begin_write(&app.db).await?;
    let inserted = async {
        url_map::Entity::insert_many(models).exec(&txn).await?;
        let mut stored: HashMap<String, url_map::Model> = url_map::Entity::find()
            .filter(url_map::Column::CompressionCode.is_in(codes.iter().map(ShortCode::as_str)))
            .all(&txn)
            .await?
            .into_iter()
            .map(|link| (link.compression_code.to_string(), link))
            .collect();
        let links: Vec<url_map::Model> = codes
            .iter()
            .map(|code| {
                stored
                    .remove(code.as_str())
                    .ok_or_else(|| DbErr::RecordNotFound(code.to_string()))
            })
            .collect::<Result<_, _>>()?;
        let entries = links
            .iter()
            .map(|link| Entry {
                action: "link.create",
                target_kind: "link",
                target_id: &link.compression_code,
                before: None,
                after: Some(snapshot(link)),
            })
            .collect();
        audit::record_many(&txn, actor, entries).await?;
        Ok::<_, DbErr>(links)
    }
    .await;
    let links = db::finish(txn, inserted).await?;
    Ok(chunk
        .iter()
        .zip(links)
        .map(|((_, _, domain), link)| SavedLink {
            link,
            domain: domain.clone(),
            outcome: Outcome::Created,
        })
        .collect())
}

async fn create_sequenced(app: &Inklink, draft: &Draft<'_>) -> Result<url_map::Model, LinkError> {
    let (codes, allocator) = app.sequence(draft.new.length);
    for _ in 0..SEQUENCE_ATTEMPTS {
        let id = allocator.next_id(&app.db).await?;
        let Some(code) = codes.code_for_id(id)? else {
            continue;
        };
        match draft.insert(&app.db, &code, Strategy::Sequence).await {
            // A custom code already holds this one: the next id gives another.
            Err(err) if is_unique_violation(&err) => continue,
            other => return Ok(other?),
        }
    }
    Err(LinkError::NoFreeCode)
}

enum Hashed {
    New(url_map::Model),
    Existing(url_map::Model),
}

/// The same URL on the same domain yields the same code: its first free candidate, or the
/// link that candidate already is.
async fn create_hashed(app: &Inklink, draft: &Draft<'_>) -> Result<Hashed, LinkError> {
    let (codes, _) = app.sequence(draft.new.length);
    for code in codes
        .hash_candidates(draft.new.target.as_str())
        .take(HASH_CANDIDATES)
    {
        if let Some(existing) = find_by_code(&app.db, &code).await? {
            if existing.long_url == draft.new.target.as_str()
                && existing.domain_id == draft.domain_id
                && is_live(&existing)
            {
                return Ok(Hashed::Existing(existing));
            }
            continue;
        }
        match draft.insert(&app.db, &code, Strategy::Hash).await {
            Err(err) if is_unique_violation(&err) => continue,
            other => return Ok(Hashed::New(other?)),
        }
    }
    Err(LinkError::NoFreeCode)
}

struct Draft<'a> {
    new: &'a NewLink,
    digest: &'a str,
    domain_id: i64,
    actor: &'a Actor,
    password_hash: Option<String>,
}

impl Draft<'_> {
    async fn insert(
        &self,
        db: &DatabaseConnection,
        code: &ShortCode,
        strategy: Strategy,
    ) -> Result<url_map::Model, DbErr> {
        // InnoDB may pick this transaction as a deadlock victim when many inserts race on the
        // same unique indexes; the database asks for exactly this retry.
        let mut attempt = 0;
        loop {
            let txn = db::begin_write(db).await?;
            let inserted = self.insert_in(&txn, code, strategy).await;
            match db::finish(txn, inserted).await {
                Err(err) if db::is_retryable(&err) && attempt < 10 => {
                    attempt += 1;
                    tokio::time::sleep(std::time::Duration::from_millis(5 * attempt)).await;
                }
                other => return other,
            }
        }
    }

    async fn insert_in(
        &self,
        txn: &DatabaseTransaction,
        code: &ShortCode,
        strategy: Strategy,
    ) -> Result<url_map::Model, DbErr> {
        let now = db::now();
        let link = url_map::ActiveModel {
            compression_code: Set(code.clone()),
            long_url: Set(self.new.target.to_string()),
            long_url_digest: Set(self.digest.to_owned()),
            domain_id: Set(self.domain_id),
            description: Set(self.new.description.clone().filter(|d| !d.is_empty())),
            url_status: Set(LinkStatus::Active),
            redirect_status: Set(self.new.redirect_status.map(|s| s.code() as i16)),
            expires_at: Set(self.new.expires_at.map(db::to_stored)),
            strategy: Set(strategy),
            creator: Set(Some(self.actor.name().to_owned())),
            creator_kind: Set(Some(self.actor.kind().to_owned())),
            creator_id: Set(self.actor.id()),
            editor: Set(Some(self.actor.name().to_owned())),
            created_at: Set(now),
            edited_at: Set(now),
            deleted: Set(false),
            version: Set(1),
            password_hash: Set(self.password_hash.clone()),
            max_visits: Set(self.new.campaign.max_visits.map(VisitLimit::get)),
            valid_from: Set(self.new.campaign.valid_from.map(db::to_stored)),
            fallback_url: Set(self.new.campaign.fallback.as_ref().map(ToString::to_string)),
            in_app_page: Set(self.new.campaign.in_app.map(|apps| apps.to_string())),
            alt_targets: Set(self.new.campaign.targets.to_stored()),
            ..Default::default()
        }
        .insert(txn)
        .await?;
        super::tags::set_in(txn, link.id, &self.new.tags).await?;
        audit::record(
            txn,
            self.actor,
            Entry {
                action: "link.create",
                target_kind: "link",
                target_id: &link.compression_code,
                before: None,
                after: Some(with_tags(snapshot(&link), &self.new.tags)),
            },
        )
        .await?;
        Ok(link)
    }
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

/// Disables or enables a link. Setting the status it already has changes nothing.
pub async fn set_status(
    app: &Inklink,
    code: &ShortCode,
    status: LinkStatus,
    actor: &Actor,
) -> Result<url_map::Model, LinkError> {
    edit(
        app,
        code,
        None,
        LinkEdit {
            status: Some(status),
            ..LinkEdit::default()
        },
        actor,
    )
    .await
}

async fn change_status_in(
    txn: &DatabaseTransaction,
    link: &url_map::Model,
    status: LinkStatus,
    actor: &Actor,
) -> Result<url_map::Model, DbErr> {
    let updated = url_map::ActiveModel {
        id: Set(link.id),
        url_status: Set(status),
        editor: Set(Some(actor.name().to_owned())),
        edited_at: Set(db::now()),
        version: Set(link.version + 1),
        ..Default::default()
    }
    .update(txn)
    .await?;
    let action = match status {
        LinkStatus::Active => "link.enable",
        LinkStatus::Disabled => "link.disable",
    };
    audit::record(
        txn,
        actor,
        Entry {
            action,
            target_kind: "link",
            target_id: &updated.compression_code,
            before: Some(snapshot(link)),
            after: Some(snapshot(&updated)),
        },
    )
    .await?;
    Ok(updated)
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

/// Applies `changes` if the link is still at `version` (optimistic locking): two people
/// editing at once cannot silently overwrite each other.
pub async fn update(
    app: &Inklink,
    code: &ShortCode,
    version: i32,
    changes: LinkChanges,
    actor: &Actor,
) -> Result<url_map::Model, LinkError> {
    let edit_all = LinkEdit {
        changes: Some(changes),
        ..LinkEdit::default()
    };
    edit(app, code, Some(version), edit_all, actor).await
}

/// Applies an edit in one transaction, each part with its audit entry, and drops the link
/// from this instance's cache (other instances see the change through `edited_at`). With a
/// `version`, the edit applies only if the link is still at that version.
pub async fn edit(
    app: &Inklink,
    code: &ShortCode,
    version: Option<i32>,
    edit: LinkEdit,
    actor: &Actor,
) -> Result<url_map::Model, LinkError> {
    let link = find_by_code(&app.db, code)
        .await?
        .ok_or_else(|| LinkError::NotFound(code.to_string()))?;
    may_change(actor, &link)?;
    if let Some(changes) = &edit.changes {
        check_fields(
            changes.description.as_deref(),
            changes.expires_at,
            link.expires_at,
        )?;
    }
    if version.is_some_and(|version| version != link.version) {
        return Err(LinkError::Stale(code.to_string()));
    }
    let expiry = match &edit.changes {
        Some(changes) => changes.expires_at.map(db::to_stored),
        None => link.expires_at,
    };
    let valid_from = match edit.campaign.valid_from {
        Some(valid_from) => valid_from,
        None => link.valid_from.map(|at| at.and_utc()),
    };
    if edit.changes.is_some() || edit.campaign.valid_from.is_some() {
        check_window(valid_from, expiry)?;
    }
    let status_change = edit.status.filter(|status| *status != link.url_status);
    if edit.changes.is_none()
        && status_change.is_none()
        && edit.campaign.is_empty()
        && edit.tags.is_none()
    {
        return Ok(link);
    }
    let password_hash = match &edit.campaign.password {
        Some(Some(password)) => Some(Some(
            super::users::hash_secret_async(password.expose()).await,
        )),
        Some(None) => Some(None),
        None => None,
    };
    // Read before the transaction: on SQLite a transaction that reads and then writes cannot
    // wait for the click writer's lock.
    let tags_before = match &edit.tags {
        Some(_) => super::tags::tags_of(&app.db, &[link.id])
            .await?
            .remove(&link.id)
            .unwrap_or_default(),
        None => Vec::new(),
    };
    let txn = db::begin_write(&app.db).await?;
    let result = async {
        let mut current = link.clone();
        if let Some(changes) = &edit.changes {
            current = update_in(&txn, &current, changes, actor).await?;
        }
        if !edit.campaign.is_empty() {
            current =
                campaign_in(&txn, &current, &edit.campaign, password_hash.clone(), actor).await?;
        }
        if let Some(tags) = &edit.tags {
            current = tags_in(&txn, &current, tags, &tags_before, actor).await?;
        }
        if let Some(status) = status_change {
            current = change_status_in(&txn, &current, status, actor).await?;
        }
        Ok::<_, LinkError>(current)
    }
    .await;
    let saved = db::finish(txn, result).await?;
    app.link_cache.forget(&saved.compression_code);
    Ok(saved)
}

/// The content change of [`edit`], only while the link is at the version it was read at.
async fn update_in(
    txn: &DatabaseTransaction,
    link: &url_map::Model,
    changes: &LinkChanges,
    actor: &Actor,
) -> Result<url_map::Model, LinkError> {
    let updated = url_map::Entity::update_many()
        .col_expr(
            url_map::Column::LongUrl,
            Expr::value(changes.target.as_str()),
        )
        .col_expr(
            url_map::Column::LongUrlDigest,
            Expr::value(url_digest(changes.target.as_str())),
        )
        .col_expr(
            url_map::Column::Description,
            Expr::value(changes.description.clone().filter(|d| !d.is_empty())),
        )
        .col_expr(
            url_map::Column::ExpiresAt,
            Expr::value(changes.expires_at.map(db::to_stored)),
        )
        .col_expr(
            url_map::Column::RedirectStatus,
            Expr::value(changes.redirect_status.map(|s| s.code() as i16)),
        )
        .col_expr(url_map::Column::Editor, Expr::value(actor.name()))
        .col_expr(url_map::Column::EditedAt, Expr::value(db::now()))
        .col_expr(url_map::Column::Version, Expr::value(link.version + 1))
        .filter(url_map::Column::Id.eq(link.id))
        .filter(url_map::Column::Version.eq(link.version))
        .filter(url_map::Column::Deleted.eq(false))
        .exec(txn)
        .await?;
    edited(txn, link, updated.rows_affected, actor).await
}

/// The tag part of [`edit`]: the link's tags replaced, its version moved on (so that an edit
/// based on the old tags is refused), and an audit entry with both sets.
async fn tags_in(
    txn: &DatabaseTransaction,
    link: &url_map::Model,
    tags: &[Tag],
    before: &[String],
    actor: &Actor,
) -> Result<url_map::Model, LinkError> {
    super::tags::set_in(txn, link.id, tags).await?;
    let updated = url_map::Entity::update_many()
        .col_expr(url_map::Column::Editor, Expr::value(actor.name()))
        .col_expr(url_map::Column::EditedAt, Expr::value(db::now()))
        .col_expr(url_map::Column::Version, Expr::value(link.version + 1))
        .filter(url_map::Column::Id.eq(link.id))
        .filter(url_map::Column::Version.eq(link.version))
        .exec(txn)
        .await?;
    if updated.rows_affected == 0 {
        return Err(LinkError::Stale(link.compression_code.to_string()));
    }
    audit::record(
        txn,
        actor,
        Entry {
            action: "link.tags",
            target_kind: "link",
            target_id: &link.compression_code,
            before: Some(json!({ "tags": before })),
            after: Some(json!({ "tags": tags.iter().map(Tag::as_str).collect::<Vec<_>>() })),
        },
    )
    .await?;
    url_map::Entity::find_by_id(link.id)
        .one(txn)
        .await?
        .ok_or_else(|| LinkError::NotFound(link.compression_code.to_string()))
}

/// The campaign part of [`edit`], only while the link is at the version it was read at. The
/// visits counted so far stay when the limit changes.
async fn campaign_in(
    txn: &DatabaseTransaction,
    link: &url_map::Model,
    edit: &CampaignEdit,
    password_hash: Option<Option<String>>,
    actor: &Actor,
) -> Result<url_map::Model, LinkError> {
    let mut update = url_map::Entity::update_many()
        .col_expr(url_map::Column::Editor, Expr::value(actor.name()))
        .col_expr(url_map::Column::EditedAt, Expr::value(db::now()))
        .col_expr(url_map::Column::Version, Expr::value(link.version + 1));
    if let Some(hash) = password_hash {
        update = update.col_expr(url_map::Column::PasswordHash, Expr::value(hash));
    }
    if let Some(limit) = edit.max_visits {
        update = update.col_expr(
            url_map::Column::MaxVisits,
            Expr::value(limit.map(VisitLimit::get)),
        );
    }
    if let Some(valid_from) = edit.valid_from {
        update = update.col_expr(
            url_map::Column::ValidFrom,
            Expr::value(valid_from.map(db::to_stored)),
        );
    }
    if let Some(fallback) = &edit.fallback {
        update = update.col_expr(
            url_map::Column::FallbackUrl,
            Expr::value(fallback.as_ref().map(ToString::to_string)),
        );
    }
    if let Some(in_app) = edit.in_app {
        update = update.col_expr(
            url_map::Column::InAppPage,
            Expr::value(in_app.map(|apps| apps.to_string())),
        );
    }
    if let Some(targets) = &edit.targets {
        update = update.col_expr(
            url_map::Column::AltTargets,
            Expr::value(targets.to_stored()),
        );
    }
    let updated = update
        .filter(url_map::Column::Id.eq(link.id))
        .filter(url_map::Column::Version.eq(link.version))
        .filter(url_map::Column::Deleted.eq(false))
        .exec(txn)
        .await?;
    edited(txn, link, updated.rows_affected, actor).await
}

/// After an edit's conditional UPDATE: stale when it matched no row (someone else's edit came
/// first), else the link as it is now, with its audit entry.
async fn edited(
    txn: &DatabaseTransaction,
    link: &url_map::Model,
    rows_affected: u64,
    actor: &Actor,
) -> Result<url_map::Model, LinkError> {
    if rows_affected == 0 {
        return Err(LinkError::Stale(link.compression_code.to_string()));
    }
    let after = url_map::Entity::find_by_id(link.id)
        .one(txn)
        .await?
        .ok_or_else(|| LinkError::NotFound(link.compression_code.to_string()))?;
    audit::record(
        txn,
        actor,
        Entry {
            action: "link.edit",
            target_kind: "link",
            target_id: &after.compression_code,
            before: Some(snapshot(link)),
            after: Some(snapshot(&after)),
        },
    )
    .await?;
    Ok(after)
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
