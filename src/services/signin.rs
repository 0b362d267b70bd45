//! Signing in to the admin UI: the password check, throttling of guesses, and the record of
//! each sign-in.

use super::audit::{self, Actor, Entry};
use super::secret::random_hex;
use super::users::{self, verify_password};
use crate::db::entities::{login_failures, users as user_rows};
use crate::rules::Username;
use chrono::TimeDelta;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, DatabaseConnection, DbErr, EntityTrait, PaginatorTrait,
    QueryFilter, Set,
};
use std::sync::LazyLock;

/// Failed sign-ins counted over this window…
const THROTTLE_WINDOW: TimeDelta = TimeDelta::minutes(15);
/// …refuse further tries for one account after this many,
const MAX_FAILURES_PER_ACCOUNT: u64 = 5;
/// …and from one address after this many (any accounts).
const MAX_FAILURES_PER_IP: u64 = 20;

#[derive(Debug, thiserror::Error)]
pub enum SignInError {
    /// The same answer for an unknown user, a wrong password and a disabled account, so
    /// that the form does not reveal which accounts exist.
    #[error("wrong user name or password")]
    Invalid,
    #[error("too many failed sign-ins; try again in {minutes} minutes")]
    Throttled { minutes: i64 },
    #[error("database error: {0}")]
    Db(#[from] DbErr),
}

/// Checks a sign-in attempt against throttling, the password and the account's state; records
/// a failure, or the sign-in (last sign-in time and an audit entry).
pub async fn sign_in(
    db: &DatabaseConnection,
    name: &str,
    password: &str,
    ip: &str,
) -> Result<user_rows::Model, SignInError> {
    let name = name.trim().to_ascii_lowercase();
    let since = crate::db::now() - THROTTLE_WINDOW;
    let account_failures = login_failures::Entity::find()
        .filter(login_failures::Column::Username.eq(&name))
        .filter(login_failures::Column::At.gt(since))
        .count(db)
        .await?;
    let ip_failures = login_failures::Entity::find()
        .filter(login_failures::Column::Ip.eq(ip))
        .filter(login_failures::Column::At.gt(since))
        .count(db)
        .await?;
    if account_failures >= MAX_FAILURES_PER_ACCOUNT || ip_failures >= MAX_FAILURES_PER_IP {
        return Err(SignInError::Throttled {
            minutes: THROTTLE_WINDOW.num_minutes(),
        });
    }
    let user = match Username::parse(&name) {
        Ok(username) => users::find(db, &username).await?,
        Err(_) => None,
    };
    // Verify against a real hash even for unknown users, so timing reveals nothing.
    let hash = user
        .as_ref()
        .map_or(DUMMY_HASH.as_str(), |u| u.password_hash.as_str());
    let password_ok = verify_password(hash, password);
    match user {
        Some(user) if password_ok && !user.disabled => {
            record_sign_in(db, &user, ip).await?;
            Ok(user)
        }
        _ => {
            login_failures::ActiveModel {
                username: Set(name.chars().take(64).collect()),
                ip: Set(ip.to_owned()),
                at: Set(crate::db::now()),
                ..Default::default()
            }
            .insert(db)
            .await?;
            Err(SignInError::Invalid)
        }
    }
}

/// An argon2id hash of a random password nobody knows.
static DUMMY_HASH: LazyLock<String> = LazyLock::new(|| {
    let password = crate::rules::Password::parse(&random_hex(16)).expect("32 characters");
    users::hash_password(&password)
});

async fn record_sign_in(
    db: &DatabaseConnection,
    user: &user_rows::Model,
    ip: &str,
) -> Result<(), DbErr> {
    user_rows::ActiveModel {
        id: Set(user.id),
        last_login_at: Set(Some(crate::db::now())),
        ..Default::default()
    }
    .update(db)
    .await?;
    audit::record(
        db,
        &Actor::User(user.username.clone()),
        Entry {
            action: "user.sign_in",
            target_kind: "user",
            target_id: &user.username,
            before: None,
            after: Some(serde_json::json!({ "ip": ip })),
        },
    )
    .await
}
