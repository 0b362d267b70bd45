use sea_orm::entity::prelude::*;

/// A campaign batch: one message sent to many recipients (`batch_recipient`), each with a link
/// of their own.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "campaign_batch")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub name: String,
    pub link_id: i64,
    /// `code` or `param`.
    pub mode: String,
    /// Length of the recipients' codes, or of their `r` parameter.
    pub token_length: i16,
    pub template: String,
    /// The recipients' variables, a JSON array of names in the order of the file's columns.
    pub variables: String,
    pub count_rule: String,
    /// Proves a receipt callback without an API key (`?secret=`).
    pub secret: String,
    pub creator: Option<String>,
    pub creator_kind: Option<String>,
    pub creator_id: Option<i64>,
    pub created_at: DateTime,
    pub recipients: i64,
    pub rejected: i64,
    pub max_segments: i32,
    /// Messages that a variable pushed into one more segment than the template alone takes.
    pub grown_segments: i64,
    /// False while the recipients are being added.
    pub ready: bool,
    /// When the phone numbers were deleted (retention).
    pub purged_at: Option<DateTime>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
