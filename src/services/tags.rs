//! Tags on links (campaigns), and the UTM preset of each tag.

use super::audit::{self, Actor, Entry};
use crate::db::entities::{link_tag, tag_preset, url_map};
use crate::rules::Tag;
use sea_orm::sea_query::Query;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait,
    QueryFilter, QueryOrder, QuerySelect, Set,
};
use serde_json::json;
use std::collections::HashMap;

/// The tags of each of `link_ids` (links without tags are absent), each list sorted.
pub async fn tags_of<C: ConnectionTrait>(
    db: &C,
    link_ids: &[i64],
) -> Result<HashMap<i64, Vec<String>>, DbErr> {
    let mut found: HashMap<i64, Vec<String>> = HashMap::new();
    // Chunks stay under every backend's parameter limit.
    for chunk in link_ids.chunks(1000) {
        let rows = link_tag::Entity::find()
            .filter(link_tag::Column::LinkId.is_in(chunk.iter().copied()))
            .order_by_asc(link_tag::Column::Tag)
            .all(db)
            .await?;
        for row in rows {
            found.entry(row.link_id).or_default().push(row.tag);
        }
    }
    Ok(found)
}

/// Replaces the tags of a link, inside the caller's transaction.
pub async fn set_in<C: ConnectionTrait>(db: &C, link_id: i64, tags: &[Tag]) -> Result<(), DbErr> {
    link_tag::Entity::delete_many()
        .filter(link_tag::Column::LinkId.eq(link_id))
        .exec(db)
        .await?;
    if tags.is_empty() {
        return Ok(());
    }
    link_tag::Entity::insert_many(tags.iter().map(|tag| link_tag::ActiveModel {
        link_id: Set(link_id),
        tag: Set(tag.to_string()),
    }))
    .exec_without_returning(db)
    .await?;
    Ok(())
}

/// Every tag with how many (not deleted) links carry it, most used first.
pub async fn list(db: &DatabaseConnection) -> Result<Vec<(String, i64)>, DbErr> {
    let live = Query::select()
        .column(url_map::Column::Id)
        .from(url_map::Entity)
        .and_where(url_map::Column::Deleted.eq(false))
        .take();
    let mut rows: Vec<(String, i64)> = link_tag::Entity::find()
        .select_only()
        .column(link_tag::Column::Tag)
        .column_as(link_tag::Column::LinkId.count(), "links")
        .filter(link_tag::Column::LinkId.in_subquery(live))
        .group_by(link_tag::Column::Tag)
        .into_tuple()
        .all(db)
        .await?;
    rows.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    Ok(rows)
}

/// The tags a tags field suggests as one types: the most used first, at most 500.
pub async fn suggestions(db: &DatabaseConnection) -> Result<Vec<String>, DbErr> {
    Ok(list(db)
        .await?
        .into_iter()
        .take(500)
        .map(|(tag, _)| tag)
        .collect())
}

/// The UTM parameters a tag's links get by default.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Utm {
    pub source: String,
    pub medium: String,
    pub campaign: String,
    pub term: String,
    pub content: String,
}

impl Utm {
    pub fn is_empty(&self) -> bool {
        [
            &self.source,
            &self.medium,
            &self.campaign,
            &self.term,
            &self.content,
        ]
        .iter()
        .all(|value| value.trim().is_empty())
    }

    /// The parameters as URL query pairs, the empty ones left out.
    pub fn pairs(&self) -> Vec<(&'static str, &str)> {
        [
            ("utm_source", self.source.trim()),
            ("utm_medium", self.medium.trim()),
            ("utm_campaign", self.campaign.trim()),
            ("utm_term", self.term.trim()),
            ("utm_content", self.content.trim()),
        ]
        .into_iter()
        .filter(|(_, value)| !value.is_empty())
        .collect()
    }
}

fn to_utm(row: tag_preset::Model) -> Utm {
    Utm {
        source: row.utm_source.unwrap_or_default(),
        medium: row.utm_medium.unwrap_or_default(),
        campaign: row.utm_campaign.unwrap_or_default(),
        term: row.utm_term.unwrap_or_default(),
        content: row.utm_content.unwrap_or_default(),
    }
}

/// Every tag's preset.
pub async fn presets(db: &DatabaseConnection) -> Result<HashMap<String, Utm>, DbErr> {
    Ok(tag_preset::Entity::find()
        .all(db)
        .await?
        .into_iter()
        .map(|row| (row.tag.clone(), to_utm(row)))
        .collect())
}

/// The preset of the first of `tags` that has one.
pub async fn preset_for(db: &DatabaseConnection, tags: &[Tag]) -> Result<Option<Utm>, DbErr> {
    let mut all = presets(db).await?;
    Ok(tags.iter().find_map(|tag| all.remove(tag.as_str())))
}

#[derive(Debug, thiserror::Error, crate::i18n::Says)]
pub enum PresetError {
    #[error(
        "only an admin can change a tag's UTM preset: it goes into the new links of every operator"
    )]
    NotAdmin,
    #[error("database error: {0}")]
    Db(#[from] DbErr),
}

/// Sets (or, when every value is empty, removes) a tag's preset, with an audit entry holding
/// the preset before and after. Presets are admins' alone: a tag is shared by every operator
/// who uses it, and its preset is written into their new links.
pub async fn set_preset(
    db: &DatabaseConnection,
    tag: &Tag,
    utm: &Utm,
    actor: &Actor,
) -> Result<(), PresetError> {
    if !actor.is_admin() {
        return Err(PresetError::NotAdmin);
    }
    let txn = crate::db::begin_write(db).await?;
    let result = async {
        let before = tag_preset::Entity::find_by_id(tag.to_string())
            .one(&txn)
            .await?
            .map(to_utm);
        tag_preset::Entity::delete_by_id(tag.to_string())
            .exec(&txn)
            .await?;
        let value = |text: &str| Some(text.trim().to_owned()).filter(|t| !t.is_empty());
        if !utm.is_empty() {
            tag_preset::ActiveModel {
                tag: Set(tag.to_string()),
                utm_source: Set(value(&utm.source)),
                utm_medium: Set(value(&utm.medium)),
                utm_campaign: Set(value(&utm.campaign)),
                utm_term: Set(value(&utm.term)),
                utm_content: Set(value(&utm.content)),
            }
            .insert(&txn)
            .await?;
        }
        audit::record(
            &txn,
            actor,
            Entry {
                action: "tag.preset",
                target_kind: "tag",
                target_id: tag.as_str(),
                before: before.map(|utm| json!(utm)),
                after: (!utm.is_empty()).then(|| json!(utm)),
            },
        )
        .await
    }
    .await;
    Ok(crate::db::finish(txn, result).await?)
}
