//! Domain rules: what a short code, a target URL, a domain host and an account name may be.
//! Input is parsed into these types once, at the edge; inner code never re-checks strings.

pub mod account;
pub mod api_key;
pub mod campaign;
pub mod codes;
pub mod csv;
pub mod filing;
pub mod health;
pub mod host;
pub mod oidc;
pub mod outcome;
pub mod phone;
pub mod redirect_status;
pub mod sms;
pub mod tag;
pub mod target_url;
pub mod time;
pub mod totp;
pub mod webhook;
pub mod x509;

pub use account::{DisplayName, Password, Role, Username};
pub use api_key::{ApiToken, KeyName};
pub use campaign::{
    AltTargets, App, CampaignError, CodeLength, InAppApps, LinkPassword, TargetRule, VisitLimit,
};
pub use codes::{CodeError, CodeFormat, CodeGenerator, ShortCode};
pub use host::{DomainHost, Protocol};
pub use outcome::Outcome;
pub use phone::{Phone, PhoneError};
pub use redirect_status::RedirectStatus;
pub use tag::{Tag, TagError};
pub use target_url::{OwnHost, TargetUrl, TargetUrlError, UrlRules};
