//! Signing in to the admin UI: the password check, throttling of guesses, and the record of
//! each sign-in.
//!
//! Guessing is throttled by counters, each reserved with one atomic update *before* the
//! password is checked, so that parallel guesses cannot slip past a limit (argon2 takes tens of
//! milliseconds, time enough for many requests to pass a check made before it):
//! - one account from one address: [`PAIR_LIMIT`] tries per window;
//! - one address, any accounts: [`ADDRESS_LIMIT`];
//! - one account from addresses it never signed in from: [`NEW_ADDRESS_LIMIT`].
//!
//! No limit is one a stranger can use to lock a person out: an address that signed in to the
//! account before is not held by the new-address limit, and a stranger's own address runs out
//! of tries long before anyone else's does (OWASP ASVS 2.2.1: anti-automation that cannot be
//! turned into a denial of service). A successful sign-in gives its tries back.

use super::audit::{self, Actor, Entry, Principal};
use super::secret::random_hex;
use super::users::{self, verify_password};
use crate::db::entities::{login_throttle, users as user_rows};
use crate::rules::Username;
use chrono::{NaiveDateTime, TimeDelta};
use sea_orm::sea_query::{Expr, ExprTrait, OnConflict};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, Condition, DatabaseConnection, DbErr, EntityTrait, QueryFilter,
    Set,
};
use std::sync::LazyLock;

/// Tries are counted over this window.
pub const WINDOW: TimeDelta = TimeDelta::minutes(15);
/// Tries for one account from one address.
pub const PAIR_LIMIT: i32 = 5;
/// Tries from one address, whatever the accounts.
pub const ADDRESS_LIMIT: i32 = 20;
/// Tries for one account from all the addresses it has not signed in from before.
pub const NEW_ADDRESS_LIMIT: i32 = 10;
/// An address that signed in to an account is known to it for this long.
const KNOWN_FOR: TimeDelta = TimeDelta::days(90);

#[derive(Debug, thiserror::Error, crate::i18n::Says)]
pub enum SignInError {
    /// The same answer for an unknown user, a wrong password and a disabled account, so
    /// that the form does not reveal which accounts exist.
    #[error("wrong user name or password")]
    Invalid,
    #[error("too many failed sign-ins; try again in {minutes} minutes")]
    Throttled { minutes: i64 },
    /// `INKLINK_PASSWORD_SIGNIN` is off and the name is not a break-glass user's.
    #[error("sign-in with a password is turned off; use single sign-on")]
    PasswordOff,
    #[error("database error: {0}")]
    Db(#[from] DbErr),
}

fn pair_bucket(name: &str, ip: &str) -> String {
    format!("pair:{name}@{ip}")
}

fn address_bucket(ip: &str) -> String {
    format!("addr:{ip}")
}

fn new_address_bucket(name: &str) -> String {
    format!("new:{name}")
}

fn known_bucket(name: &str, ip: &str) -> String {
    format!("known:{name}@{ip}")
}

/// Checks a sign-in attempt against throttling, the password and the account's state. The
/// caller records the sign-in ([`record`]) once every step is passed.
pub async fn sign_in(
    db: &DatabaseConnection,
    name: &str,
    password: &str,
    ip: &str,
) -> Result<user_rows::Model, SignInError> {
    let name: String = name.trim().to_ascii_lowercase().chars().take(64).collect();
    let ip: String = ip.chars().take(45).collect();
    let user = match Username::parse(&name) {
        Ok(username) => users::find(db, &username).await?,
        Err(_) => None,
    };
    let mut buckets = vec![
        (address_bucket(&ip), ADDRESS_LIMIT),
        (pair_bucket(&name, &ip), PAIR_LIMIT),
    ];
    // With a second factor, the code is the proof a new address needs: strangers' wrong
    // passwords no longer lock the owner out of addresses new to the account.
    let second_factor = user.as_ref().is_some_and(|u| u.has_second_factor());
    if !second_factor && !is_known(db, &name, &ip).await? {
        buckets.push((new_address_bucket(&name), NEW_ADDRESS_LIMIT));
    }
    for (bucket, limit) in &buckets {
        // A refused try keeps the ones reserved before it: a throttled guess still counts.
        if !reserve(db, bucket, *limit).await? {
            tracing::warn!(user = %name, ip = %ip, bucket = %bucket, "sign-in throttled");
            return Err(SignInError::Throttled {
                minutes: WINDOW.num_minutes(),
            });
        }
    }
    // Verify against a real hash even for unknown users, so timing reveals nothing.
    let hash = user.as_ref().map(|u| u.password_hash.clone());
    let password_ok = users::off_the_workers({
        let password = password.to_owned();
        move || verify_password(hash.as_deref().unwrap_or(&DUMMY_HASH), &password)
    })
    .await;
    match user {
        Some(user) if password_ok && !user.disabled => {
            give_back(db, &name, &ip, &buckets).await?;
            Ok(user)
        }
        _ => {
            tracing::warn!(user = %name, ip = %ip, "failed sign-in");
            Err(SignInError::Invalid)
        }
    }
}

/// Takes one try from `bucket` if it has one left in the current window (a window that has
/// passed starts again). One UPDATE decides, so parallel requests cannot both take the last.
pub(crate) async fn reserve(
    db: &DatabaseConnection,
    bucket: &str,
    limit: i32,
) -> Result<bool, DbErr> {
    let _turn = crate::db::write_turn(db).await;
    let now = crate::db::now();
    let window_over = Expr::col(login_throttle::Column::WindowStart).lte(now - WINDOW);
    let row = login_throttle::ActiveModel {
        bucket: Set(bucket.to_owned()),
        window_start: Set(now),
        attempts: Set(0),
    };
    match login_throttle::Entity::insert(row)
        .on_conflict(
            OnConflict::column(login_throttle::Column::Bucket)
                // MySQL has no DO NOTHING; this writes the key onto itself there.
                .do_nothing_on([login_throttle::Column::Bucket])
                .to_owned(),
        )
        .exec_without_returning(db)
        .await
    {
        Ok(_) | Err(DbErr::RecordNotInserted) => {}
        Err(err) => return Err(err),
    }
    // MySQL assigns left to right, each assignment seeing the ones before: `attempts` must be
    // set while `window_start` still has its old value.
    let taken = login_throttle::Entity::update_many()
        .col_expr(
            login_throttle::Column::Attempts,
            Expr::case(window_over.clone(), 1)
                .finally(Expr::col(login_throttle::Column::Attempts).add(1))
                .into(),
        )
        .col_expr(
            login_throttle::Column::WindowStart,
            Expr::case(window_over.clone(), now)
                .finally(Expr::col(login_throttle::Column::WindowStart))
                .into(),
        )
        .filter(login_throttle::Column::Bucket.eq(bucket))
        .filter(
            Condition::any()
                .add(login_throttle::Column::Attempts.lt(limit))
                .add(window_over),
        )
        .exec(db)
        .await?;
    Ok(taken.rows_affected == 1)
}

/// Gives one reserved try back to each of `buckets` (after a right answer).
pub(crate) async fn release(db: &DatabaseConnection, buckets: &[String]) -> Result<(), DbErr> {
    let _turn = crate::db::write_turn(db).await;
    login_throttle::Entity::update_many()
        .col_expr(
            login_throttle::Column::Attempts,
            Expr::col(login_throttle::Column::Attempts).sub(1),
        )
        .filter(login_throttle::Column::Bucket.is_in(buckets.iter().map(String::as_str)))
        .filter(login_throttle::Column::Attempts.gt(0))
        .exec(db)
        .await?;
    Ok(())
}

/// After a successful sign-in: its tries are given back, the account's failures from this
/// address are forgotten, and the address is known to the account from now on.
async fn give_back(
    db: &DatabaseConnection,
    name: &str,
    ip: &str,
    reserved: &[(String, i32)],
) -> Result<(), DbErr> {
    let _turn = crate::db::write_turn(db).await;
    let pair = pair_bucket(name, ip);
    login_throttle::Entity::update_many()
        .col_expr(
            login_throttle::Column::Attempts,
            Expr::col(login_throttle::Column::Attempts).sub(1),
        )
        .filter(
            login_throttle::Column::Bucket
                .is_in(reserved.iter().map(|(bucket, _)| bucket.as_str()))
                .and(login_throttle::Column::Bucket.ne(pair.as_str())),
        )
        .filter(login_throttle::Column::Attempts.gt(0))
        .exec(db)
        .await?;
    login_throttle::Entity::delete_by_id(pair).exec(db).await?;
    let known = known_bucket(name, ip);
    login_throttle::Entity::delete_by_id(known.clone())
        .exec(db)
        .await?;
    login_throttle::ActiveModel {
        bucket: Set(known),
        window_start: Set(crate::db::now()),
        attempts: Set(0),
    }
    .insert(db)
    .await
    .map(drop)
    .or_else(|err| match crate::db::is_unique_violation(&err) {
        // Another sign-in from the same address just did the same.
        true => Ok(()),
        false => Err(err),
    })
}

async fn is_known(db: &DatabaseConnection, name: &str, ip: &str) -> Result<bool, DbErr> {
    Ok(login_throttle::Entity::find_by_id(known_bucket(name, ip))
        .one(db)
        .await?
        .is_some_and(|row| row.window_start > crate::db::now() - KNOWN_FOR))
}

/// Forgets counters whose window has passed, and addresses not used for [`KNOWN_FOR`]; run
/// now and then.
pub async fn purge_expired(db: &DatabaseConnection) -> Result<u64, DbErr> {
    let now: NaiveDateTime = crate::db::now();
    let done = login_throttle::Entity::delete_many()
        .filter(
            Condition::any()
                .add(
                    login_throttle::Column::WindowStart
                        .lte(now - WINDOW)
                        .and(login_throttle::Column::Bucket.not_like("known:%")),
                )
                .add(login_throttle::Column::WindowStart.lte(now - KNOWN_FOR)),
        )
        .exec(db)
        .await?;
    Ok(done.rows_affected)
}

/// An argon2id hash of a random password nobody knows.
static DUMMY_HASH: LazyLock<String> = LazyLock::new(|| {
    let password = crate::rules::Password::parse(&random_hex(16)).expect("32 characters");
    users::hash_password(&password)
});

/// Records a completed sign-in: the last sign-in time and an audit entry.
pub async fn record(
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
        &Actor::User(Principal {
            id: user.id,
            name: user.username.clone(),
            role: user.role,
        }),
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
