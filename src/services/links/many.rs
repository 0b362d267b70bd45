//! Actions on many links at once (the API's bulk endpoint): disable, enable, tag, untag or
//! delete the links given by code or matching a filter. Each link is changed through the same
//! service as one at a time, with its own audit entry; links the actor may not change are
//! counted and left alone.

use crate::db::entities::url_map::{self, LinkStatus};
use crate::rules::{ShortCode, Tag};
use crate::services::audit::Actor;
use crate::services::links::listing::{self, LinkFilter, Order, Paging};
use crate::services::links::{self, LinkEdit, LinkError};
use crate::state::Inklink;
use sea_orm::DbErr;

/// The most links one bulk action changes.
pub const MAX_LINKS: u64 = 10_000;
/// Tries at one link's change while others change it at the same time.
const STALE_RETRIES: usize = 5;

fn worth_retrying(err: &LinkError) -> bool {
    match err {
        LinkError::Stale(_) => true,
        LinkError::Db(err) => crate::db::is_retryable(err),
        _ => false,
    }
}

/// What an action does to one link, as it is now.
enum Plan {
    /// It is already as asked.
    Nothing,
    /// Tagging would give it more tags than a link may have.
    TooManyTags,
    Edit(Box<LinkEdit>),
}

fn plan(action: &BulkAction, link: &url_map::Model, had: &[String]) -> Plan {
    let stored = || had.iter().cloned().map(Tag::stored);
    match action {
        BulkAction::Disable | BulkAction::Enable => {
            let status = match action {
                BulkAction::Disable => LinkStatus::Disabled,
                _ => LinkStatus::Active,
            };
            match link.url_status == status {
                true => Plan::Nothing,
                false => Plan::Edit(Box::new(LinkEdit {
                    status: Some(status),
                    ..LinkEdit::default()
                })),
            }
        }
        BulkAction::Tag(add) => {
            let mut tags: Vec<Tag> = stored().collect();
            tags.extend(
                add.iter()
                    .filter(|tag| !had.contains(&tag.to_string()))
                    .cloned(),
            );
            if tags.len() == had.len() {
                Plan::Nothing
            } else if tags.len() > crate::rules::tag::MAX_TAGS_PER_LINK {
                Plan::TooManyTags
            } else {
                Plan::Edit(Box::new(LinkEdit {
                    tags: Some(tags),
                    ..LinkEdit::default()
                }))
            }
        }
        BulkAction::Untag(remove) => {
            let tags: Vec<Tag> = stored().filter(|tag| !remove.contains(tag)).collect();
            match tags.len() == had.len() {
                true => Plan::Nothing,
                false => Plan::Edit(Box::new(LinkEdit {
                    tags: Some(tags),
                    ..LinkEdit::default()
                })),
            }
        }
        // Deleting goes through its own service call.
        BulkAction::Delete => Plan::Nothing,
    }
}

#[derive(Clone, Debug)]
pub enum BulkAction {
    Disable,
    Enable,
    Tag(Vec<Tag>),
    Untag(Vec<Tag>),
    Delete,
}

/// Which links: these codes, or every link the filter matches.
#[derive(Clone, Debug)]
pub enum Selection {
    Codes(Vec<ShortCode>),
    Filter(LinkFilter),
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BulkOutcome {
    /// Links selected.
    pub matched: u64,
    /// Links that changed.
    pub changed: u64,
    /// Links the actor may not change (an operator's view of others' links).
    pub refused: u64,
    /// Codes given that name no link.
    pub missing: Vec<String>,
}

#[derive(Debug, thiserror::Error, crate::i18n::Says)]
pub enum BulkError {
    #[error("the selection matches {0} links; at most {MAX_LINKS} can be changed at once")]
    TooMany(u64),
    #[error("database error: {0}")]
    Db(#[from] DbErr),
}

async fn selected(
    app: &Inklink,
    selection: &Selection,
    outcome: &mut BulkOutcome,
) -> Result<Vec<url_map::Model>, BulkError> {
    match selection {
        Selection::Codes(codes) => {
            if codes.len() as u64 > MAX_LINKS {
                return Err(BulkError::TooMany(codes.len() as u64));
            }
            let mut found = Vec::with_capacity(codes.len());
            for code in codes {
                match links::find_by_code(&app.db, code).await? {
                    Some(link) => found.push(link),
                    None => outcome.missing.push(code.to_string()),
                }
            }
            Ok(found)
        }
        Selection::Filter(filter) => {
            let total = listing::count(&app.db, filter).await?;
            if total > MAX_LINKS {
                return Err(BulkError::TooMany(total));
            }
            Ok(listing::list(
                &app.db,
                filter,
                Order::Newest,
                Paging::Before(None),
                MAX_LINKS,
            )
            .await?)
        }
    }
}

pub async fn apply(
    app: &Inklink,
    selection: &Selection,
    action: &BulkAction,
    actor: &Actor,
) -> Result<BulkOutcome, BulkError> {
    let mut outcome = BulkOutcome::default();
    let found = selected(app, selection, &mut outcome).await?;
    outcome.matched = found.len() as u64;
    let ids: Vec<i64> = found.iter().map(|link| link.id).collect();
    let mut current_tags = crate::services::tags::tags_of(&app.db, &ids).await?;
    for mut link in found {
        if links::may_change(actor, &link).is_err() {
            outcome.refused += 1;
            continue;
        }
        let code = ShortCode::stored(link.compression_code.to_string());
        if let BulkAction::Delete = action {
            match links::delete(app, &code, actor).await {
                Ok(()) => outcome.changed += 1,
                Err(LinkError::Db(err)) => return Err(err.into()),
                Err(LinkError::NotFound(_)) => {}
                Err(err) => {
                    tracing::warn!(error = %err, "bulk delete skipped a link");
                    outcome.refused += 1;
                }
            }
            continue;
        }
        let mut had: Vec<String> = current_tags.remove(&link.id).unwrap_or_default();
        // Each change applies to the link as it was read (its version): a change made
        // meanwhile (another bulk action adding a tag) is read again and kept, not lost.
        for attempt in 0..STALE_RETRIES {
            let edit = match plan(action, &link, &had) {
                Plan::Nothing => break,
                Plan::TooManyTags => {
                    outcome.refused += 1;
                    break;
                }
                Plan::Edit(edit) => edit,
            };
            match links::edit(app, &code, Some(link.version), *edit, actor).await {
                Ok(_) => outcome.changed += 1,
                // Changed meanwhile, or a deadlock between two bulk actions (MariaDB picks a
                // victim when both lock the same links' rows): read the link again and retry.
                Err(err) if worth_retrying(&err) && attempt + 1 < STALE_RETRIES => {
                    let Some(fresh) = links::find_by_code(&app.db, &code).await? else {
                        break;
                    };
                    had = crate::services::tags::tags_of(&app.db, &[fresh.id])
                        .await?
                        .remove(&fresh.id)
                        .unwrap_or_default();
                    link = fresh;
                    continue;
                }
                Err(LinkError::Db(err)) => return Err(err.into()),
                Err(LinkError::NotFound(_)) => {}
                Err(err) => {
                    tracing::warn!(error = %err, "bulk change skipped a link");
                    outcome.refused += 1;
                }
            }
            break;
        }
    }
    Ok(outcome)
}
