use sea_orm::entity::prelude::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq, EnumIter, DeriveActiveEnum)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::N(16))")]
pub enum LinkStatus {
    #[sea_orm(string_value = "active")]
    Active,
    #[sea_orm(string_value = "disabled")]
    Disabled,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, EnumIter, DeriveActiveEnum, clap::ValueEnum)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::N(16))")]
pub enum Strategy {
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
    pub compression_code: String,
    pub long_url: String,
    pub long_url_digest: String,
    pub domain_id: i64,
    pub description: Option<String>,
    pub url_status: LinkStatus,
    pub redirect_status: Option<i16>,
    pub expires_at: Option<DateTime>,
    pub strategy: Strategy,
    pub creator: Option<String>,
    pub editor: Option<String>,
    pub created_at: DateTime,
    pub edited_at: DateTime,
    pub deleted: bool,
    pub version: i32,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
