//! Changing a link: its content, status, campaign settings and tags, with optimistic locking.

use super::*;
use sea_orm::UpdateMany;

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
            crate::services::users::hash_secret_async(password.expose()).await,
        )),
        Some(None) => Some(None),
        None => None,
    };
    // Read before the transaction: on SQLite a transaction that reads and then writes cannot
    // wait for the click writer's lock.
    let tags_before = match &edit.tags {
        Some(_) => crate::services::tags::tags_of(&app.db, &[link.id])
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
    let update = stamped(link, actor)
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
        );
    at_version(txn, update, link, actor).await
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
    crate::services::tags::set_in(txn, link.id, tags).await?;
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
    let mut update = stamped(link, actor);
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
    at_version(txn, update, link, actor).await
}

/// An UPDATE of `link` that records who changed it, when, and moves its version on.
fn stamped(link: &url_map::Model, actor: &Actor) -> UpdateMany<url_map::Entity> {
    url_map::Entity::update_many()
        .col_expr(url_map::Column::Editor, Expr::value(actor.name()))
        .col_expr(url_map::Column::EditedAt, Expr::value(db::now()))
        .col_expr(url_map::Column::Version, Expr::value(link.version + 1))
}

/// Runs `update` only while the link is at the version it was read at (and not deleted).
async fn at_version(
    txn: &DatabaseTransaction,
    update: UpdateMany<url_map::Entity>,
    link: &url_map::Model,
    actor: &Actor,
) -> Result<url_map::Model, LinkError> {
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
