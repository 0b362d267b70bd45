use crate::rules::{RedirectStatus, ShortCode};
use sea_orm::entity::prelude::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq, EnumIter, DeriveActiveEnum)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::N(16))")]
pub enum LinkStatus {
    #[sea_orm(string_value = "active")]
    Active,
    #[sea_orm(string_value = "disabled")]
    Disabled,
}

/// What a link does when visited now: its status and its expiry, read together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkState {
    Live,
    Disabled,
    Expired,
}

impl LinkState {
    /// A disabled link is disabled whether or not it has expired too.
    pub fn of(status: LinkStatus, expires_at: Option<DateTime>, now: DateTime) -> Self {
        if status != LinkStatus::Active {
            Self::Disabled
        } else if expires_at.is_some_and(|at| at <= now) {
            Self::Expired
        } else {
            Self::Live
        }
    }
}

#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, EnumIter, DeriveActiveEnum, clap::ValueEnum,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::N(16))")]
pub enum Strategy {
    #[default]
    #[sea_orm(string_value = "sequence")]
    Sequence,
    #[sea_orm(string_value = "hash")]
    Hash,
    #[sea_orm(string_value = "custom")]
    Custom,
}

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "url_map")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    #[sea_orm(unique)]
    pub compression_code: ShortCode,
    pub long_url: String,
    pub long_url_digest: String,
    pub domain_id: i64,
    pub description: Option<String>,
    pub url_status: LinkStatus,
    pub redirect_status: Option<i16>,
    pub expires_at: Option<DateTime>,
    pub strategy: Strategy,
    /// The creator's name as it was, for display and filters.
    pub creator: Option<String>,
    /// Who created the link, by kind (`user`, `api_key`, `cli`) and id: what ownership is
    /// decided by.
    pub creator_kind: Option<String>,
    pub creator_id: Option<i64>,
    pub editor: Option<String>,
    pub created_at: DateTime,
    pub edited_at: DateTime,
    pub deleted: bool,
    pub version: i32,
    /// argon2 hash of the password visitors must give; `None`: open to all.
    pub password_hash: Option<String>,
    /// Redirects the link may serve; `None`: unlimited.
    pub max_visits: Option<i64>,
    /// Redirects served while `max_visits` was set (counted only then).
    pub visit_count: i64,
    /// Before this time the link answers "not yet open".
    pub valid_from: Option<DateTime>,
    /// Where disabled, expired and used-up links send visitors instead of the 410 page;
    /// `None`: the domain's fallback, if any.
    pub fallback_url: Option<String>,
    /// In-app browsers that get the "open in your browser" page (`InAppApps`' text);
    /// `None`: the domain's choice.
    pub in_app_page: Option<String>,
    /// Alternative targets by device and app (`AltTargets`' text).
    pub alt_targets: Option<String>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

impl Model {
    pub fn state(&self, now: DateTime) -> LinkState {
        LinkState::of(self.url_status, self.expires_at, now)
    }

    /// The link's own redirect status; `None`: the server's default.
    pub fn redirect(&self) -> Option<RedirectStatus> {
        self.redirect_status
            .and_then(|code| u16::try_from(code).ok())
            .and_then(|code| RedirectStatus::from_code(code).ok())
    }
}
