use crate::rules::Role;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "users")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    #[sea_orm(unique)]
    pub username: String,
    pub password_hash: String,
    pub role: Role,
    pub disabled: bool,
    /// Raised by a password change: sessions signed in under an older value are over.
    pub session_epoch: i32,
    pub last_login_at: Option<DateTime>,
    pub created_at: DateTime,
    pub updated_at: DateTime,
    /// The IANA time zone the admin UI shows this user times in; `None`: INKLINK_TIMEZONE.
    pub time_zone: Option<String>,
    /// `en` or `zh-CN`; `None`: the browser's language.
    pub language: Option<String>,
    /// The authenticator's secret, sealed (`services::two_factor`); `None`: no second factor.
    pub totp_secret: Option<String>,
    /// The time step of the last code accepted: a code opens once.
    pub totp_step: Option<i64>,
    /// The name people know them by, in any script; `None`: the sign-in name.
    pub display_name: Option<String>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

impl Model {
    /// How pages name them: the display name, else the sign-in name.
    pub fn shown_name(&self) -> &str {
        self.display_name.as_deref().unwrap_or(&self.username)
    }

    /// Signs in with a second factor (an authenticator app's code) after the password.
    pub fn has_second_factor(&self) -> bool {
        self.totp_secret.is_some()
    }
}
