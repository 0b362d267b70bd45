//! Two-factor sign-in: enrolling an authenticator app, checking the code (or a one-time
//! recovery code) that follows the password, turning it off, and an admin's reset.
//!
//! The code step is throttled like the password, by counters reserved before the check (so
//! that parallel guesses cannot pass a limit): [`PAIR_LIMIT`] tries per account and address,
//! [`ACCOUNT_LIMIT`] per account from all addresses, in the sign-in window. Only someone who
//! knows the password reaches this step, so the account-wide limit cannot be used by
//! strangers to lock the owner out. A code opens once: the step of the last code accepted is
//! kept, and a code of that step or an earlier one is refused.
//!
//! The app's secret is sealed in the database with a key derived from the service secret
//! (HMAC-SHA1 as a stream and as a tag): a copy of the database alone does not give the codes.

use super::audit::{self, Actor, Entry};
use super::signin::{WINDOW, release, reserve};
use super::users::{off_the_workers, verify_password};
use crate::db::entities::users;
use crate::db::sql::statement;
use crate::rules::totp::{self, CodeError, RECOVERY_CODES, SecondFactor, TotpSecret};
use crate::state::Inklink;
use hmac::{Hmac, KeyInit, Mac};
use sea_orm::sea_query::Value;
use sea_orm::{ConnectionTrait, DbErr, EntityTrait};
use serde_json::json;

/// Code tries for one account from one address per window.
pub const PAIR_LIMIT: i32 = 5;
/// Code tries for one account from all addresses per window.
pub const ACCOUNT_LIMIT: i32 = 10;

#[derive(Debug, thiserror::Error, crate::i18n::Says)]
pub enum TwoFactorError {
    #[error("the code is not right (or was used already); try the next one from your app")]
    WrongCode,
    #[error("too many wrong codes; try again in {minutes} minutes")]
    Throttled { minutes: i64 },
    #[error(transparent)]
    Code(#[from] CodeError),
    #[error("two-factor sign-in is already on; turn it off first to enrol another app")]
    AlreadyOn,
    #[error("two-factor sign-in is not on for this account")]
    NotOn,
    #[error("the password is not right")]
    WrongPassword,
    #[error("database error: {0}")]
    Db(#[from] DbErr),
}

type HmacSha1 = Hmac<sha1::Sha1>;

fn mac(key: &[u8; 32], parts: &[&[u8]]) -> [u8; 20] {
    let mut mac = <HmacSha1 as KeyInit>::new_from_slice(key).expect("any key length");
    for part in parts {
        mac.update(part);
    }
    mac.finalize().into_bytes().into()
}

/// `v1:` and the hex of nonce (16 bytes), sealed secret (20) and tag (16).
fn seal(key: &[u8; 32], secret: &TotpSecret) -> String {
    let nonce: [u8; 16] = super::secret::random_bytes();
    let pad = mac(key, &[b"pad", &nonce]);
    let sealed: Vec<u8> = secret
        .as_bytes()
        .iter()
        .zip(pad)
        .map(|(a, b)| a ^ b)
        .collect();
    let tag = mac(key, &[b"tag", &nonce, &sealed]);
    let mut all = nonce.to_vec();
    all.extend(&sealed);
    all.extend(&tag[..16]);
    format!("v1:{}", crate::digest::hex(&all))
}

fn open(key: &[u8; 32], stored: &str) -> Option<TotpSecret> {
    let hex = stored.strip_prefix("v1:")?;
    let bytes: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect::<Option<_>>()?;
    if bytes.len() != 16 + 20 + 16 {
        return None;
    }
    let (nonce, rest) = bytes.split_at(16);
    let (sealed, tag) = rest.split_at(20);
    let expected = mac(key, &[b"tag", nonce, sealed]);
    let same = expected[..16]
        .iter()
        .zip(tag)
        .fold(0u8, |acc, (a, b)| acc | (a ^ b))
        == 0;
    if !same {
        return None;
    }
    let pad = mac(key, &[b"pad", nonce]);
    let secret: Vec<u8> = sealed.iter().zip(pad).map(|(a, b)| a ^ b).collect();
    TotpSecret::from_bytes(&secret)
}

fn recovery_digest(code: &str) -> String {
    use sha2::{Digest, Sha256};
    let compact: String = code.chars().filter(|c| *c != '-').collect();
    crate::digest::hex(&Sha256::digest(compact.as_bytes()))
}

fn now_seconds() -> i64 {
    chrono::Utc::now().timestamp()
}

/// Turns two-factor sign-in on for `user` with the app holding `secret`, once `code` shows
/// the app has it; returns the recovery codes, to be shown once (only their digests are kept).
pub async fn enable(
    app: &Inklink,
    user: &users::Model,
    secret: &TotpSecret,
    code: &SecondFactor,
    actor: &Actor,
) -> Result<Vec<String>, TwoFactorError> {
    if user.has_second_factor() {
        return Err(TwoFactorError::AlreadyOn);
    }
    let SecondFactor::Code(code) = code else {
        return Err(TwoFactorError::WrongCode);
    };
    let step = secret
        .matching_step(*code, now_seconds())
        .ok_or(TwoFactorError::WrongCode)?;
    let codes: Vec<String> = (0..RECOVERY_CODES)
        .map(|_| totp::new_recovery_code())
        .collect();
    let sealed = seal(&app.totp_key, secret);
    let txn = crate::db::begin_write(&app.db).await?;
    let result = async {
        let backend = txn.get_database_backend();
        // Only if still off: two enrolments at once end with one secret, the first.
        let done = txn
            .execute_raw(statement(
                backend,
                "UPDATE users SET totp_secret = ?, totp_step = ? WHERE id = ? AND totp_secret IS NULL",
                vec![sealed.into(), step.into(), user.id.into()],
            ))
            .await?;
        if done.rows_affected() != 1 {
            return Ok::<_, DbErr>(false);
        }
        replace_recovery_codes(&txn, user.id, &codes).await?;
        audit::record(
            &txn,
            actor,
            Entry {
                action: "user.two_factor",
                target_kind: "user",
                target_id: &user.username,
                before: Some(json!({"two_factor": false})),
                after: Some(json!({"two_factor": true})),
            },
        )
        .await?;
        Ok(true)
    }
    .await;
    match crate::db::finish(txn, result).await? {
        true => Ok(codes),
        false => Err(TwoFactorError::AlreadyOn),
    }
}

async fn replace_recovery_codes(
    txn: &impl ConnectionTrait,
    user: i64,
    codes: &[String],
) -> Result<(), DbErr> {
    let backend = txn.get_database_backend();
    txn.execute_raw(statement(
        backend,
        "DELETE FROM recovery_code WHERE user_id = ?",
        vec![user.into()],
    ))
    .await?;
    if codes.is_empty() {
        return Ok(());
    }
    let mut values: Vec<Value> = Vec::with_capacity(codes.len() * 2);
    for code in codes {
        values.push(user.into());
        values.push(recovery_digest(code).into());
    }
    let sql = format!(
        "INSERT INTO recovery_code (user_id, digest) VALUES {}",
        vec!["(?, ?)"; codes.len()].join(", ")
    );
    txn.execute_raw(statement(backend, &sql, values)).await?;
    Ok(())
}

/// Checks the second step of `user`'s sign-in from `ip`, throttled; a right code or recovery
/// code is used up by this check.
pub async fn check(
    app: &Inklink,
    user: &users::Model,
    factor: &SecondFactor,
    ip: &str,
) -> Result<(), TwoFactorError> {
    let ip: String = ip.chars().take(45).collect();
    let buckets = [
        (format!("2fa:{}@{ip}", user.id), PAIR_LIMIT),
        (format!("2fa:{}", user.id), ACCOUNT_LIMIT),
    ];
    for (bucket, limit) in &buckets {
        if !reserve(&app.db, bucket, *limit).await? {
            tracing::warn!(user = %user.username, ip = %ip, "second factor throttled");
            return Err(TwoFactorError::Throttled {
                minutes: WINDOW.num_minutes(),
            });
        }
    }
    let right = match factor {
        SecondFactor::Code(code) => use_code(app, user, *code).await?,
        SecondFactor::Recovery(code) => use_recovery_code(app, user.id, code).await?,
    };
    if !right {
        tracing::warn!(user = %user.username, ip = %ip, "wrong second factor");
        return Err(TwoFactorError::WrongCode);
    }
    let reserved: Vec<String> = buckets.into_iter().map(|(bucket, _)| bucket).collect();
    release(&app.db, &reserved).await?;
    Ok(())
}

/// Accepts `code` if it is the app's within the clock skew and newer than the last accepted.
async fn use_code(app: &Inklink, user: &users::Model, code: u32) -> Result<bool, DbErr> {
    // Read again: the row the caller holds may predate an enrolment, a reset or a code.
    let Some(current) = users::Entity::find_by_id(user.id).one(&app.db).await? else {
        return Ok(false);
    };
    let Some(secret) = current
        .totp_secret
        .as_deref()
        .and_then(|sealed| open(&app.totp_key, sealed))
    else {
        return Ok(false);
    };
    let Some(step) = secret.matching_step(code, now_seconds()) else {
        return Ok(false);
    };
    let backend = app.db.get_database_backend();
    // Someone is waiting to sign in (SQLite: see `db::write_turn`).
    let _turn = crate::db::write_turn(&app.db).await;
    // One UPDATE decides: of two requests with the same code, one opens.
    let taken = app
        .db
        .execute_raw(statement(
            backend,
            "UPDATE users SET totp_step = ? WHERE id = ? AND totp_secret IS NOT NULL \
             AND (totp_step IS NULL OR totp_step < ?)",
            vec![step.into(), user.id.into(), step.into()],
        ))
        .await?;
    Ok(taken.rows_affected() == 1)
}

async fn use_recovery_code(app: &Inklink, user: i64, code: &str) -> Result<bool, DbErr> {
    let backend = app.db.get_database_backend();
    // Someone is waiting to sign in (SQLite: see `db::write_turn`).
    let _turn = crate::db::write_turn(&app.db).await;
    let taken = app
        .db
        .execute_raw(statement(
            backend,
            "UPDATE recovery_code SET used_at = ? WHERE user_id = ? AND digest = ? \
             AND used_at IS NULL",
            vec![
                crate::db::now().into(),
                user.into(),
                recovery_digest(code).into(),
            ],
        ))
        .await?;
    Ok(taken.rows_affected() == 1)
}

/// Recovery codes of `user` not used yet.
pub async fn recovery_codes_left(app: &Inklink, user: i64) -> Result<i64, DbErr> {
    let backend = app.db.get_database_backend();
    let row = app
        .db
        .query_one_raw(statement(
            backend,
            "SELECT COUNT(*) AS n FROM recovery_code WHERE user_id = ? AND used_at IS NULL",
            vec![user.into()],
        ))
        .await?;
    row.map_or(Ok(0), |row| row.try_get::<i64>("", "n"))
}

/// Turns `user`'s own second factor off: their password and a code (or recovery code) prove
/// it is them.
pub async fn disable(
    app: &Inklink,
    user: &users::Model,
    password: &str,
    factor: &SecondFactor,
    ip: &str,
    actor: &Actor,
) -> Result<(), TwoFactorError> {
    if !user.has_second_factor() {
        return Err(TwoFactorError::NotOn);
    }
    let hash = user.password_hash.clone();
    let password = password.to_owned();
    if !off_the_workers(move || verify_password(&hash, &password)).await {
        return Err(TwoFactorError::WrongPassword);
    }
    check(app, user, factor, ip).await?;
    turn_off(app, user, actor, "user.two_factor").await
}

/// An admin turns `user`'s second factor off (a lost phone and lost recovery codes): they
/// enrol again at their next sign-in if it is required, or from their settings.
pub async fn reset(
    app: &Inklink,
    user: &users::Model,
    actor: &Actor,
) -> Result<(), TwoFactorError> {
    if !user.has_second_factor() {
        return Err(TwoFactorError::NotOn);
    }
    turn_off(app, user, actor, "user.two_factor_reset").await
}

async fn turn_off(
    app: &Inklink,
    user: &users::Model,
    actor: &Actor,
    action: &str,
) -> Result<(), TwoFactorError> {
    let txn = crate::db::begin_write(&app.db).await?;
    let result = async {
        let backend = txn.get_database_backend();
        txn.execute_raw(statement(
            backend,
            "UPDATE users SET totp_secret = NULL, totp_step = NULL WHERE id = ?",
            vec![user.id.into()],
        ))
        .await?;
        replace_recovery_codes(&txn, user.id, &[]).await?;
        audit::record(
            &txn,
            actor,
            Entry {
                action,
                target_kind: "user",
                target_id: &user.username,
                before: Some(json!({"two_factor": true})),
                after: Some(json!({"two_factor": false})),
            },
        )
        .await
    }
    .await;
    Ok(crate::db::finish(txn, result).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_secret_opens_only_with_its_key_and_unaltered() {
        let key = [7u8; 32];
        let secret = TotpSecret::random();
        let sealed = seal(&key, &secret);
        assert_eq!(open(&key, &sealed), Some(secret.clone()));
        assert_ne!(seal(&key, &secret), sealed, "a new nonce each time");
        assert_eq!(open(&[8u8; 32], &sealed), None);
        let mut altered = sealed.clone().into_bytes();
        let at = altered.len() - 40;
        altered[at] = if altered[at] == b'0' { b'1' } else { b'0' };
        assert_eq!(open(&key, &String::from_utf8(altered).unwrap()), None);
        assert!(!sealed.contains(&secret.base32()));
    }
}
