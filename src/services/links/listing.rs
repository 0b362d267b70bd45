//! Which links a list, a count or an export shows: one typed filter and one query for every
//! front end.

use crate::db::entities::link_tag;
use crate::db::entities::url_map::{self, LinkStatus};
use crate::rules::Tag;
use sea_orm::sea_query::{Expr, LikeExpr, Query};
use sea_orm::{
    ColumnTrait, Condition, DatabaseConnection, DbErr, EntityTrait, PaginatorTrait, QueryFilter,
    QueryOrder, QuerySelect, Select,
};

// One definition for the admin list's menu, the API's `status` and the CLI's `--status`.
/// Which links a list shows, by state.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    serde::Deserialize,
    serde::Serialize,
    clap::ValueEnum,
    utoipa::ToSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum StatusFilter {
    Active,
    Disabled,
    /// Past their expiry, whatever their status.
    Expired,
}

impl StatusFilter {
    /// As a form or a query string names it; anything else is no filter.
    pub fn named(name: &str) -> Option<Self> {
        match name {
            "active" => Some(Self::Active),
            "disabled" => Some(Self::Disabled),
            "expired" => Some(Self::Expired),
            _ => None,
        }
    }
}

/// The links to show. Text is trimmed and never empty; `None` means "any".
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LinkFilter {
    /// Part of the code, target URL or description.
    pub text: Option<String>,
    pub status: Option<StatusFilter>,
    pub domain_id: Option<i64>,
    /// Exactly this creator (user name, "cli", or an API key's name).
    pub creator: Option<String>,
    /// Only links that expire, soonest first.
    pub by_expiry: bool,
    /// Only links with this tag.
    pub tag: Option<Tag>,
    /// Most clicked first.
    pub by_clicks: bool,
}

/// Which way a list runs and how it pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Newest first, paged by id (keyset): fast at any depth.
    Newest,
    /// Soonest expiry first, numbered pages.
    SoonestExpiry,
    /// Most recently expired first, numbered pages: the order people want for expired links,
    /// and the one the expiry index serves.
    RecentlyExpired,
    /// Most page views in all first (from the daily statistics), numbered pages.
    MostClicked,
}

/// The deepest a numbered list may go: a request for a page past this gets the last of them
/// (an empty page), not an offset the database cannot take.
pub const MAX_OFFSET: u64 = 100_000_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Paging {
    /// Links with an id below this (newest-first pages).
    Before(Option<i64>),
    /// Skip this many links.
    Offset(u64),
}

/// Text that reads as a filter value: trimmed, `None` when empty.
pub fn text(value: &str) -> Option<String> {
    Some(value.trim().to_owned()).filter(|value| !value.is_empty())
}

/// A LIKE pattern for text containing `text` literally: `%` and `_` typed into the search
/// box are characters to find, not wildcards. (`!` escapes: a backslash is itself an escape
/// inside MySQL's string literals.)
fn containing(text: &str) -> LikeExpr {
    let mut pattern = String::with_capacity(text.len() + 2);
    pattern.push('%');
    for c in text.chars() {
        if matches!(c, '%' | '_' | '!') {
            pattern.push('!');
        }
        pattern.push(c);
    }
    pattern.push('%');
    LikeExpr::new(pattern).escape('!')
}

impl LinkFilter {
    /// True when any part of the filter narrows the list (the order aside).
    pub fn narrows(&self) -> bool {
        self.text.is_some()
            || self.status.is_some()
            || self.domain_id.is_some()
            || self.creator.is_some()
            || self.tag.is_some()
    }

    /// The order a list page uses for this filter.
    pub fn page_order(&self) -> Order {
        if self.by_clicks {
            Order::MostClicked
        } else if self.by_expiry {
            Order::SoonestExpiry
        } else if self.status == Some(StatusFilter::Expired) {
            Order::RecentlyExpired
        } else {
            Order::Newest
        }
    }

    pub fn condition(&self) -> Condition {
        let mut condition = Condition::all().add(url_map::Column::Deleted.eq(false));
        match self.status {
            Some(StatusFilter::Active) => {
                condition = condition.add(url_map::Column::UrlStatus.eq(LinkStatus::Active))
            }
            Some(StatusFilter::Disabled) => {
                condition = condition.add(url_map::Column::UrlStatus.eq(LinkStatus::Disabled))
            }
            Some(StatusFilter::Expired) => {
                condition = condition.add(url_map::Column::ExpiresAt.lte(crate::db::now()))
            }
            None => {}
        }
        if let Some(domain) = self.domain_id {
            condition = condition.add(url_map::Column::DomainId.eq(domain));
        }
        if let Some(creator) = &self.creator {
            condition = condition.add(url_map::Column::Creator.eq(creator.as_str()));
        }
        if self.by_expiry {
            condition = condition.add(url_map::Column::ExpiresAt.is_not_null());
        }
        if let Some(tag) = &self.tag {
            let tagged = Query::select()
                .column(link_tag::Column::LinkId)
                .from(link_tag::Entity)
                .and_where(link_tag::Column::Tag.eq(tag.as_str()))
                .take();
            condition = condition.add(url_map::Column::Id.in_subquery(tagged));
        }
        if let Some(q) = &self.text {
            condition = condition.add(
                Condition::any()
                    .add(url_map::Column::CompressionCode.like(containing(q)))
                    .add(url_map::Column::LongUrl.like(containing(q)))
                    .add(url_map::Column::Description.like(containing(q))),
            );
        }
        condition
    }

    fn select(&self) -> Select<url_map::Entity> {
        url_map::Entity::find().filter(self.condition())
    }
}

/// Up to `limit` links the filter matches, in `order`, from `paging` on.
pub async fn list(
    db: &DatabaseConnection,
    filter: &LinkFilter,
    order: Order,
    paging: Paging,
    limit: u64,
) -> Result<Vec<url_map::Model>, DbErr> {
    let mut select = filter.select();
    select = match order {
        Order::Newest => select.order_by_desc(url_map::Column::Id),
        Order::SoonestExpiry => select
            .order_by_asc(url_map::Column::ExpiresAt)
            .order_by_asc(url_map::Column::Id),
        Order::RecentlyExpired => select
            .order_by_desc(url_map::Column::ExpiresAt)
            .order_by_desc(url_map::Column::Id),
        Order::MostClicked => select
            .order_by_desc(Expr::cust(
                "(SELECT COALESCE(SUM(visit_statistics.pv), 0) FROM visit_statistics \
                 WHERE visit_statistics.url_map_id = url_map.id)",
            ))
            .order_by_desc(url_map::Column::Id),
    };
    select = match paging {
        Paging::Before(Some(before)) => select.filter(url_map::Column::Id.lt(before)),
        Paging::Before(None) => select,
        Paging::Offset(offset) => select.offset(offset.min(MAX_OFFSET)),
    };
    select.limit(limit).all(db).await
}

/// How many links the filter matches.
pub async fn count(db: &DatabaseConnection, filter: &LinkFilter) -> Result<u64, DbErr> {
    filter.select().count(db).await
}
