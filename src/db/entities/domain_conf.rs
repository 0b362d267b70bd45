use sea_orm::entity::prelude::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq, EnumIter, DeriveActiveEnum)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::N(16))")]
pub enum DomainStatus {
    #[sea_orm(string_value = "active")]
    Active,
    #[sea_orm(string_value = "disabled")]
    Disabled,
}

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "domain_conf")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    #[sea_orm(unique)]
    pub host: String,
    pub protocol: String,
    pub status: DomainStatus,
    pub is_default: bool,
    pub replaced_by_id: Option<i64>,
    pub created_by: Option<String>,
    pub updated_by: Option<String>,
    pub created_at: DateTime,
    pub updated_at: DateTime,
    /// The in-app browsers its links show the "open in your browser" page to, unless a link
    /// chooses for itself (`InAppApps`' text).
    pub in_app_page: Option<String>,
    /// Where its disabled, expired and used-up links send visitors, unless a link has its own.
    pub fallback_url: Option<String>,
    /// Active, but takes no new links until it is the default: where fail-over rotates to.
    pub standby: bool,
    /// What happens when this default domain is found blocked: `off`, `confirm`, `auto`.
    pub failover: String,
    /// Its ICP filing number (备案号), as written.
    pub icp_filing: Option<String>,
    /// The carrier-approved SMS templates that embed it, one per line (`SmsTemplates`' text).
    pub sms_templates: Option<String>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
