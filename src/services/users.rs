//! People who sign in to the admin UI.

use super::audit::{self, Actor, Entry};
use super::secret::random_bytes;
use crate::db::entities::users;
use crate::db::{self, is_unique_violation};
use crate::rules::account::AccountError;
use crate::rules::{Password, Role, Username};
use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DatabaseConnection, DatabaseTransaction, DbErr,
    EntityTrait, QueryFilter, Set,
};
use serde_json::json;
use std::sync::LazyLock;
use tokio::sync::Semaphore;

pub const FIRST_ADMIN: &str = "admin";

#[derive(Debug, thiserror::Error, crate::i18n::Says)]
pub enum UserError {
    #[error("the user '{0}' already exists")]
    Exists(String),
    #[error("there is no user '{0}'")]
    NotFound(String),
    #[error(transparent)]
    Invalid(#[from] AccountError),
    #[error("database error: {0}")]
    Db(#[from] DbErr),
}

pub fn hash_password(password: &Password) -> String {
    let salt = SaltString::encode_b64(&random_bytes::<16>()).expect("16 bytes fit a salt");
    Argon2::default()
        .hash_password(password.expose().as_bytes(), &salt)
        .expect("argon2id with default parameters hashes any password")
        .to_string()
}

pub fn verify_password(stored_hash: &str, candidate: &str) -> bool {
    PasswordHash::new(stored_hash)
        .map(|hash| {
            Argon2::default()
                .verify_password(candidate.as_bytes(), &hash)
                .is_ok()
        })
        .unwrap_or(false)
}

/// At most this many argon2 computations run at once, on blocking threads: half the cores,
/// so that a flood of sign-ins (each hash is tens of milliseconds of CPU) leaves the HTTP
/// workers room to serve redirects.
static ARGON2_SLOTS: LazyLock<Semaphore> = LazyLock::new(|| {
    let cores = std::thread::available_parallelism().map_or(2, usize::from);
    Semaphore::new((cores / 2).max(1))
});

/// Runs `work` (argon2) on the bounded pool, never on an HTTP worker.
pub async fn off_the_workers<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    let _slot = ARGON2_SLOTS
        .acquire()
        .await
        .expect("the semaphore is never closed");
    tokio::task::spawn_blocking(work)
        .await
        .expect("argon2 does not panic")
}

/// An argon2 hash of any secret (a link's visitor password), on the bounded argon2 pool.
pub async fn hash_secret_async(secret: &str) -> String {
    let secret = secret.to_owned();
    off_the_workers(move || {
        let salt = SaltString::encode_b64(&random_bytes::<16>()).expect("16 bytes fit a salt");
        Argon2::default()
            .hash_password(secret.as_bytes(), &salt)
            .expect("argon2id with default parameters hashes any secret")
            .to_string()
    })
    .await
}

/// [`hash_password`] on the bounded argon2 pool.
pub async fn hash_password_async(password: &Password) -> String {
    let password = password.clone();
    off_the_workers(move || hash_password(&password)).await
}

pub async fn by_id(db: &DatabaseConnection, id: i64) -> Result<Option<users::Model>, DbErr> {
    users::Entity::find_by_id(id).one(db).await
}

pub async fn find(db: &DatabaseConnection, name: &Username) -> Result<Option<users::Model>, DbErr> {
    users::Entity::find()
        .filter(users::Column::Username.eq(name.as_str()))
        .one(db)
        .await
}

pub async fn add(
    db: &DatabaseConnection,
    name: &Username,
    password: &Password,
    role: Role,
    actor: &Actor,
) -> Result<users::Model, UserError> {
    let hash = hash_password_async(password).await;
    let now = db::now();
    let user = users::ActiveModel {
        username: Set(name.to_string()),
        password_hash: Set(hash),
        role: Set(role),
        disabled: Set(false),
        last_login_at: Set(None),
        created_at: Set(now),
        updated_at: Set(now),
        ..Default::default()
    }
    .insert(db)
    .await
    .map_err(|err| match is_unique_violation(&err) {
        true => UserError::Exists(name.to_string()),
        false => UserError::Db(err),
    })?;
    audit::record(
        db,
        actor,
        Entry {
            action: "user.add",
            target_kind: "user",
            target_id: &user.username,
            before: None,
            after: Some(json!({"username": user.username, "role": user.role})),
        },
    )
    .await?;
    Ok(user)
}

pub async fn set_password(
    db: &DatabaseConnection,
    name: &Username,
    password: &Password,
    actor: &Actor,
) -> Result<(), UserError> {
    let user = find(db, name)
        .await?
        .ok_or_else(|| UserError::NotFound(name.to_string()))?;
    let hash = hash_password_async(password).await;
    // Raising the epoch ends every session the user has, here and on every instance.
    users::Entity::update_many()
        .col_expr(users::Column::PasswordHash, Expr::value(hash))
        .col_expr(users::Column::UpdatedAt, Expr::value(db::now()))
        .col_expr(
            users::Column::SessionEpoch,
            Expr::col(users::Column::SessionEpoch).add(1),
        )
        .filter(users::Column::Id.eq(user.id))
        .exec(db)
        .await?;
    audit::record(
        db,
        actor,
        Entry {
            action: "user.password",
            target_kind: "user",
            target_id: &user.username,
            before: None,
            after: None,
        },
    )
    .await?;
    Ok(())
}

/// The first admin, when the database has no user yet. Returns the generated password when
/// none was configured, for the caller to show once.
pub async fn ensure_admin(
    db: &DatabaseConnection,
    configured: Option<&str>,
) -> Result<Option<String>, UserError> {
    if users::Entity::find().one(db).await?.is_some() {
        return Ok(None);
    }
    let (password, generated) = match configured {
        Some(text) => (Password::parse(text)?, false),
        None => (Password::parse(&random_password())?, true),
    };
    let name = Username::parse(FIRST_ADMIN).expect("a valid name");
    match add(db, &name, &password, Role::Admin, &Actor::System).await {
        Ok(_) => Ok(generated.then(|| password.expose().to_owned())),
        // Another instance created the first admin at the same moment.
        Err(UserError::Exists(_)) => Ok(None),
        Err(err) => Err(err),
    }
}

fn random_password() -> String {
    const CHARS: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789";
    random_bytes::<20>()
        .iter()
        .map(|b| char::from(CHARS[usize::from(*b) % CHARS.len()]))
        .collect()
}

#[derive(Debug, thiserror::Error, crate::i18n::Says)]
pub enum UserChangeError {
    #[error("there is no such user")]
    NotFound,
    #[error("{0} is the last active admin; make someone else an admin first")]
    LastAdmin(String),
    #[error("you cannot disable your own account or take away your own admin role")]
    Yourself,
    #[error(transparent)]
    Invalid(#[from] AccountError),
    #[error("database error: {0}")]
    Db(#[from] DbErr),
}

pub async fn list(db: &DatabaseConnection) -> Result<Vec<users::Model>, DbErr> {
    use sea_orm::QueryOrder;
    users::Entity::find()
        .order_by_asc(users::Column::Username)
        .all(db)
        .await
}

async fn other_active_admins(db: &impl ConnectionTrait, except: i64) -> Result<u64, DbErr> {
    use sea_orm::PaginatorTrait;
    users::Entity::find()
        .filter(users::Column::Role.eq(Role::Admin))
        .filter(users::Column::Disabled.eq(false))
        .filter(users::Column::Id.ne(except))
        .count(db)
        .await
}

/// What an admin may change about an account.
#[derive(Clone, Debug)]
pub enum UserChange {
    Disable,
    Enable,
    Role(Role),
    Password(Password),
}

/// Applies `change` to user `id`. Nobody locks themselves out, and there is always an active
/// admin left. A disabled user's sessions stop working at their next request.
pub async fn change(
    db: &DatabaseConnection,
    id: i64,
    change: UserChange,
    actor_id: Option<i64>,
    actor: &Actor,
) -> Result<users::Model, UserChangeError> {
    let new_hash = match &change {
        UserChange::Password(password) => Some(hash_password_async(password).await),
        _ => None,
    };
    let txn = db::begin_write(db).await?;
    let result = change_in(&txn, id, &change, new_hash, actor_id, actor).await;
    db::finish(txn, result).await
}

async fn change_in(
    txn: &DatabaseTransaction,
    id: i64,
    change: &UserChange,
    new_hash: Option<String>,
    actor_id: Option<i64>,
    actor: &Actor,
) -> Result<users::Model, UserChangeError> {
    // Write-lock every admin row before counting them: two admins disabling each other at once
    // then take turns, and the second sees the first's change ("at least one active admin"
    // cannot be raced to zero). An UPDATE locks on every backend: rows on PostgreSQL and
    // MySQL, the database on SQLite.
    users::Entity::update_many()
        .col_expr(
            users::Column::UpdatedAt,
            Expr::col(users::Column::UpdatedAt),
        )
        .filter(users::Column::Role.eq(Role::Admin))
        .exec(txn)
        .await?;
    let user = users::Entity::find_by_id(id)
        .one(txn)
        .await?
        .ok_or(UserChangeError::NotFound)?;
    let loses_admin = match change {
        UserChange::Disable => user.role == Role::Admin,
        UserChange::Role(role) => user.role == Role::Admin && *role != Role::Admin,
        _ => false,
    };
    if actor_id == Some(id) && (loses_admin || matches!(change, UserChange::Disable)) {
        return Err(UserChangeError::Yourself);
    }
    if loses_admin && !user.disabled && other_active_admins(txn, id).await? == 0 {
        return Err(UserChangeError::LastAdmin(user.username));
    }
    let mut row = users::ActiveModel {
        id: Set(id),
        updated_at: Set(db::now()),
        ..Default::default()
    };
    let (action, after) = match change {
        UserChange::Disable => {
            row.disabled = Set(true);
            ("user.disable", json!({"disabled": true}))
        }
        UserChange::Enable => {
            row.disabled = Set(false);
            ("user.enable", json!({"disabled": false}))
        }
        UserChange::Role(role) => {
            row.role = Set(*role);
            ("user.role", json!({"role": role.as_str()}))
        }
        UserChange::Password(_) => {
            row.password_hash = Set(new_hash.unwrap_or_default());
            // Ends the user's sessions, as disabling does.
            row.session_epoch = Set(user.session_epoch + 1);
            ("user.password", json!({}))
        }
    };
    let updated = row.update(txn).await?;
    audit::record(
        txn,
        actor,
        Entry {
            action,
            target_kind: "user",
            target_id: &updated.username,
            before: Some(json!({"role": user.role, "disabled": user.disabled})),
            after: Some(after),
        },
    )
    .await?;
    Ok(updated)
}

/// A person's own setting of the admin UI: its column, and how it is stored.
pub enum Preference {
    /// The time zone pages show times in; `None`: INKLINK_TIMEZONE.
    TimeZone(Option<chrono_tz::Tz>),
    /// The language of the pages; `None`: the browser's.
    Language(Option<crate::i18n::Lang>),
    /// The name shown beside the sign-in name; `None`: none.
    DisplayName(Option<crate::rules::DisplayName>),
}

impl Preference {
    fn column(&self) -> &'static str {
        match self {
            Self::TimeZone(_) => "time_zone",
            Self::Language(_) => "language",
            Self::DisplayName(_) => "display_name",
        }
    }

    fn stored(&self) -> Option<String> {
        match self {
            Self::TimeZone(zone) => zone.map(|tz| tz.name().to_owned()),
            Self::Language(lang) => lang.map(|lang| lang.tag().to_owned()),
            Self::DisplayName(name) => name.as_ref().map(|name| name.as_str().to_owned()),
        }
    }
}

/// Sets (or, with `None` inside, clears) one of a user's own settings; an unchanged setting
/// writes nothing, a change is audited.
pub async fn set_preference(
    db: &DatabaseConnection,
    id: i64,
    preference: Preference,
    actor: &Actor,
) -> Result<(), DbErr> {
    let user = by_id(db, id)
        .await?
        .ok_or_else(|| DbErr::RecordNotFound(format!("user {id}")))?;
    let after = preference.stored();
    let mut row = users::ActiveModel {
        id: Set(id),
        updated_at: Set(crate::db::now()),
        ..Default::default()
    };
    let before = match preference {
        Preference::TimeZone(_) => {
            row.time_zone = Set(after.clone());
            user.time_zone
        }
        Preference::Language(_) => {
            row.language = Set(after.clone());
            user.language
        }
        Preference::DisplayName(_) => {
            row.display_name = Set(after.clone());
            user.display_name
        }
    };
    if before == after {
        return Ok(());
    }
    row.update(db).await?;
    let column = preference.column();
    audit::record(
        db,
        actor,
        Entry {
            action: &format!("user.{column}"),
            target_kind: "user",
            target_id: &user.username,
            before: Some(json!({ column: before })),
            after: Some(json!({ column: after })),
        },
    )
    .await
}
