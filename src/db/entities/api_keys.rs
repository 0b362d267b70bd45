use crate::rules::Role;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "api_keys")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    #[sea_orm(unique)]
    pub name: String,
    #[sea_orm(unique)]
    pub prefix: String,
    #[sea_orm(unique)]
    pub secret_sha256: String,
    pub role: Role,
    pub expires_at: Option<DateTime>,
    pub revoked: bool,
    pub last_used_at: Option<DateTime>,
    pub created_by: Option<String>,
    pub created_at: DateTime,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
