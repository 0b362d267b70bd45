//! Single sign-on: what a person the provider vouched for means to inklink. The person is
//! matched to a user by the provider's stable subject (never by a name or an e-mail the
//! provider lets people change); a first sign-in makes a user when the settings allow, with
//! the role the provider's groups give; each sign-in's state is spent once, on every
//! instance. Talking to the provider is `net::oidc`'s.

use super::audit::{self, Actor, Entry};
use super::signin::{WINDOW, release, reserve};
use super::users::hash_password_async;
use crate::config::Settings;
use crate::db::entities::users;
use crate::db::sql::statement;
use crate::db::{self, is_unique_violation};
use crate::net::oidc::{Flight, OidcError, Provider, ProviderFault};
use crate::rules::oidc::{Claims, Issuer};
use crate::rules::{DisplayName, Password, Role, Username};
use crate::state::Inklink;
use sea_orm::{ActiveModelTrait, ConnectionTrait, DbErr, EntityTrait, Set};
use serde_json::json;

#[derive(Debug, thiserror::Error, crate::i18n::Says)]
pub enum SsoError {
    #[error(transparent)]
    Provider(#[from] OidcError),
    #[error("this sign-in has expired or was already used; start again")]
    Stale,
    #[error("no inklink user is linked to your account at {0}; ask an administrator to add you")]
    NoUser(String),
    #[error("your inklink user is disabled; ask an administrator")]
    Disabled,
    #[error("too many failed sign-ins; try again in {minutes} minutes")]
    Throttled { minutes: i64 },
    #[error("database error: {0}")]
    Db(#[from] DbErr),
}

/// Failed single sign-ins from one address per window (`signin::WINDOW`): each spends a row of
/// `sso_state` and a request to the provider, so a stranger's are bounded.
pub const ADDRESS_LIMIT: i32 = 20;

/// The provider the settings name, if any; an issuer without a client id is refused.
pub fn provider(settings: &Settings) -> Result<Option<Provider>, String> {
    let Some(issuer) = settings.oidc_issuer.clone() else {
        return Ok(None);
    };
    let client_id = settings
        .oidc_client_id
        .as_deref()
        .filter(|id| !id.trim().is_empty())
        .ok_or("INKLINK_OIDC_ISSUER is set but INKLINK_OIDC_CLIENT_ID is not")?;
    Ok(Some(Provider::new(
        issuer,
        settings.oidc_name.as_deref(),
        client_id,
        settings.oidc_client_secret.as_deref(),
        settings.public_url.as_deref(),
    )))
}

/// Finishes the sign-in `flight` with the provider's `code`: the user it signs in (made on a
/// first sign-in when the settings allow, with the role the provider's groups give).
pub async fn finish(
    app: &Inklink,
    provider: &Provider,
    flight: &Flight,
    code: &str,
    origin: &str,
    ip: &str,
) -> Result<users::Model, SsoError> {
    // Reserved before, given back after a success: only failures count, even in parallel.
    let bucket = format!("sso:{}", ip.chars().take(45).collect::<String>());
    if !reserve(&app.db, &bucket, ADDRESS_LIMIT).await? {
        tracing::warn!(ip = %ip, "single sign-on throttled");
        return Err(SsoError::Throttled {
            minutes: WINDOW.num_minutes(),
        });
    }
    let signed = async {
        spend_state(app, flight).await?;
        let claims = provider.finish(flight, code, origin).await?;
        user_for(app, provider, &claims).await
    }
    .await;
    if signed.is_ok() {
        release(&app.db, &[bucket]).await?;
    }
    signed
}

/// The role the provider's groups give under INKLINK_OIDC_ADMIN_VALUES (`None`: roles are
/// inklink's own).
fn role_of(settings: &Settings, claims: &Claims) -> Option<Role> {
    let claim = settings.oidc_role_claim.trim();
    let mut admin_values = settings
        .oidc_admin_values
        .split(',')
        .map(str::trim)
        .filter(|value| !value.is_empty())
        .peekable();
    admin_values.peek()?;
    let admin = admin_values.any(|value| claims.has_value(claim, value));
    Some(if admin { Role::Admin } else { Role::Operator })
}

/// The user linked to the token's subject; on a first sign-in, a new operator (or admin)
/// when allowed.
async fn user_for(
    app: &Inklink,
    provider: &Provider,
    claims: &Claims,
) -> Result<users::Model, SsoError> {
    let user = match linked_user(app, &provider.issuer, &claims.subject).await? {
        Some(user) => user,
        None if app.settings.oidc_create_users => create(app, provider, claims).await?,
        None => {
            tracing::warn!(issuer = %provider.issuer, subject = %claims.subject, "single sign-on by a person linked to no user");
            return Err(SsoError::NoUser(provider.name.clone()));
        }
    };
    if user.disabled {
        return Err(SsoError::Disabled);
    }
    match role_of(&app.settings, claims) {
        Some(role) if role != user.role => {
            let actor = Actor::System;
            let change = super::users::UserChange::Role(role);
            match super::users::change(&app.db, user.id, change, None, &actor).await {
                Ok(changed) => Ok(changed),
                // The last admin keeps the role the provider would take: inklink is never
                // left without one.
                Err(super::users::UserChangeError::LastAdmin(_)) => Ok(user),
                Err(super::users::UserChangeError::Db(err)) => Err(err.into()),
                Err(err) => {
                    tracing::warn!(user = %user.username, error = %err, "role from single sign-on not applied");
                    Ok(user)
                }
            }
        }
        _ => Ok(user),
    }
}

async fn create(
    app: &Inklink,
    provider: &Provider,
    claims: &Claims,
) -> Result<users::Model, SsoError> {
    // Nobody knows this password: the person signs in through the provider.
    let unknown = Password::parse(&super::secret::random_hex(24)).expect("48 characters");
    let hash = hash_password_async(&unknown).await;
    let role = role_of(&app.settings, claims).unwrap_or(Role::Operator);
    let shown = claims
        .text("name")
        .and_then(|name| DisplayName::parse(name).ok().flatten())
        .map(|name| name.as_str().to_owned());
    for name in username_candidates(claims) {
        let txn = db::begin_write(&app.db).await?;
        let now = db::now();
        let inserted = users::ActiveModel {
            username: Set(name.to_string()),
            password_hash: Set(hash.clone()),
            role: Set(role),
            disabled: Set(false),
            last_login_at: Set(None),
            display_name: Set(shown.clone()),
            created_at: Set(now),
            updated_at: Set(now),
            ..Default::default()
        }
        .insert(&txn)
        .await;
        let user = match inserted {
            Ok(user) => user,
            Err(err) if is_unique_violation(&err) => {
                txn.rollback().await?;
                continue;
            }
            Err(err) => return Err(err.into()),
        };
        let linked = link_in(&txn, &provider.issuer, &claims.subject, user.id).await;
        match linked {
            Ok(()) => {}
            // The same person's first sign-in in another tab won: theirs is the user.
            Err(err) if is_unique_violation(&err) => {
                txn.rollback().await?;
                return linked_user(app, &provider.issuer, &claims.subject)
                    .await?
                    .ok_or(SsoError::Stale);
            }
            Err(err) => return Err(err.into()),
        }
        audit::record(
            &txn,
            &Actor::System,
            Entry {
                action: "user.add",
                target_kind: "user",
                target_id: &user.username,
                before: None,
                after: Some(json!({
                    "username": user.username,
                    "role": user.role,
                    "sso": {"issuer": provider.issuer.as_str(), "subject": claims.subject},
                })),
            },
        )
        .await?;
        txn.commit().await?;
        return Ok(user);
    }
    Err(OidcError::from(ProviderFault::NoName).into())
}

/// User names to try for a person new to inklink: their preferred name or their e-mail's
/// local part as inklink spells names, then numbered, then one made of the subject's digest.
fn username_candidates(claims: &Claims) -> Vec<Username> {
    let spelled = |text: &str| -> String {
        text.chars()
            .filter_map(|c| match c {
                'a'..='z' | '0'..='9' | '.' | '_' | '-' => Some(c),
                'A'..='Z' => Some(c.to_ascii_lowercase()),
                _ => None,
            })
            .take(56)
            .collect()
    };
    let base = [
        claims.text("preferred_username").map(spelled),
        claims
            .text("email")
            .and_then(|email| email.split('@').next())
            .map(spelled),
    ]
    .into_iter()
    .flatten()
    .find(|name| !name.is_empty());
    let mut names: Vec<String> = Vec::new();
    if let Some(base) = base {
        names.push(base.clone());
        names.extend((2..=9).map(|n| format!("{base}-{n}")));
    }
    let digest = crate::digest::sha256_hex(&claims.subject);
    names.push(format!("sso-{}", &digest[..12]));
    names.push(format!("sso-{digest}"));
    names
        .iter()
        .filter_map(|name| Username::parse(name).ok())
        .collect()
}

/// Records that the flight's state was used: a callback with a state seen before is refused,
/// whichever instance sees it. States of expired flights are forgotten on the way.
async fn spend_state(app: &Inklink, flight: &Flight) -> Result<(), SsoError> {
    let backend = app.db.get_database_backend();
    // Someone is waiting to sign in (SQLite: see `db::write_turn`).
    let _turn = db::write_turn(&app.db).await;
    let now = db::now();
    app.db
        .execute_raw(statement(
            backend,
            "DELETE FROM sso_state WHERE expires_at < ?",
            vec![now.into()],
        ))
        .await?;
    let expires = chrono::DateTime::from_timestamp(flight.expires, 0)
        .map(|at| at.naive_utc())
        .unwrap_or(now);
    let inserted = app
        .db
        .execute_raw(statement(
            backend,
            "INSERT INTO sso_state (digest, expires_at) VALUES (?, ?)",
            vec![
                crate::digest::sha256_hex(&flight.state).into(),
                expires.into(),
            ],
        ))
        .await;
    match inserted {
        Ok(_) => Ok(()),
        Err(err) if is_unique_violation(&err) => Err(SsoError::Stale),
        Err(err) => Err(err.into()),
    }
}

async fn linked_user(
    app: &Inklink,
    issuer: &Issuer,
    subject: &str,
) -> Result<Option<users::Model>, DbErr> {
    let backend = app.db.get_database_backend();
    let row = app
        .db
        .query_one_raw(statement(
            backend,
            "SELECT user_id FROM user_identity WHERE issuer = ? AND subject = ?",
            vec![issuer.as_str().into(), subject.into()],
        ))
        .await?;
    let Some(row) = row else { return Ok(None) };
    let id: i64 = row.try_get("", "user_id")?;
    users::Entity::find_by_id(id).one(&app.db).await
}

async fn link_in(
    db: &impl ConnectionTrait,
    issuer: &Issuer,
    subject: &str,
    user: i64,
) -> Result<(), DbErr> {
    db.execute_raw(statement(
        db.get_database_backend(),
        "INSERT INTO user_identity (issuer, subject, user_id, created_at) VALUES (?, ?, ?, ?)",
        vec![
            issuer.as_str().into(),
            subject.into(),
            user.into(),
            db::now().into(),
        ],
    ))
    .await?;
    Ok(())
}

#[derive(Debug, thiserror::Error, crate::i18n::Says)]
pub enum LinkError {
    #[error("single sign-on is not set up (INKLINK_OIDC_ISSUER)")]
    NotSetUp,
    #[error("there is no user '{0}'")]
    NoUser(String),
    #[error("the subject must be 1 to 255 characters")]
    Subject,
    #[error("that subject is already linked to user '{0}'")]
    Taken(String),
    #[error("database error: {0}")]
    Db(#[from] DbErr),
}

/// Links the provider's `subject` to the user `name` (an admin's step when people are not
/// created on their first sign-in), audited.
pub async fn link(
    app: &Inklink,
    sso: Option<&Provider>,
    name: &Username,
    subject: &str,
    actor: &Actor,
) -> Result<(), LinkError> {
    let sso = sso.ok_or(LinkError::NotSetUp)?;
    let subject = subject.trim();
    if subject.is_empty() || subject.len() > 255 || subject.chars().any(char::is_control) {
        return Err(LinkError::Subject);
    }
    let user = super::users::find(&app.db, name)
        .await?
        .ok_or_else(|| LinkError::NoUser(name.to_string()))?;
    let txn = db::begin_write(&app.db).await?;
    if let Err(err) = link_in(&txn, &sso.issuer, subject, user.id).await {
        txn.rollback().await?;
        if is_unique_violation(&err) {
            let holder = linked_user(app, &sso.issuer, subject).await?;
            return Err(LinkError::Taken(
                holder.map(|u| u.username).unwrap_or_default(),
            ));
        }
        return Err(err.into());
    }
    audit::record(
        &txn,
        actor,
        Entry {
            action: "user.link_sso",
            target_kind: "user",
            target_id: &user.username,
            before: None,
            after: Some(json!({"issuer": sso.issuer.as_str(), "subject": subject})),
        },
    )
    .await?;
    txn.commit().await?;
    Ok(())
}

/// The subject each linked user is known by at `issuer`, by user id.
pub async fn subjects(
    app: &Inklink,
    issuer: &Issuer,
) -> Result<std::collections::HashMap<i64, String>, DbErr> {
    let rows = app
        .db
        .query_all_raw(statement(
            app.db.get_database_backend(),
            "SELECT user_id, subject FROM user_identity WHERE issuer = ?",
            vec![issuer.as_str().into()],
        ))
        .await?;
    rows.iter()
        .map(|row| Ok((row.try_get("", "user_id")?, row.try_get("", "subject")?)))
        .collect()
}

/// Whether `name` may sign in with a password under the settings.
pub fn password_allowed(settings: &Settings, name: &str) -> bool {
    settings.password_signin
        || settings
            .break_glass_users
            .split(',')
            .map(str::trim)
            .any(|allowed| !allowed.is_empty() && allowed.eq_ignore_ascii_case(name.trim()))
}
