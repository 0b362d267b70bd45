//! What a visitor of a campaign link must get past: its password, with guessing throttled
//! (the same database counters as the admin sign-in, so several instances share them).

use super::signin::{WINDOW, release, reserve};
use super::users::{off_the_workers, verify_password};
use sea_orm::{DatabaseConnection, DbErr};

/// Tries at one link's password from one address per window.
pub const LINK_PASSWORD_LIMIT: i32 = 10;
/// Tries at any links' passwords from one address per window.
pub const ADDRESS_PASSWORD_LIMIT: i32 = 50;
/// Wrong tries at one link's password from all addresses together per window: without it, a
/// short password (a 4-digit PIN) falls to guesses spread over a few hundred addresses. It
/// is high enough that visitors mistyping never reach it, and when an attack does, the link
/// stays closed to everyone for the rest of the window: the lesser harm than opening it.
pub const LINK_PASSWORD_CEILING: i32 = 50;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PasswordCheck {
    Right,
    Wrong,
    /// Too many tries; the window is this many minutes.
    Throttled {
        minutes: i64,
    },
}

/// Checks `candidate` against a link's password hash, after reserving a try from the
/// address's counters and the link's (so that parallel guesses cannot pass a limit); a right
/// answer gives its tries back.
pub async fn check_link_password(
    db: &DatabaseConnection,
    link_id: i64,
    hash: &str,
    candidate: &str,
    ip: &str,
) -> Result<PasswordCheck, DbErr> {
    let ip: String = ip.chars().take(45).collect();
    let buckets = [
        (format!("linkpw-addr:{ip}"), ADDRESS_PASSWORD_LIMIT),
        (format!("linkpw:{link_id}@{ip}"), LINK_PASSWORD_LIMIT),
        (format!("linkpw-link:{link_id}"), LINK_PASSWORD_CEILING),
    ];
    for (bucket, limit) in &buckets {
        if !reserve(db, bucket, *limit).await? {
            tracing::warn!(link = link_id, ip = %ip, "link password throttled");
            return Ok(PasswordCheck::Throttled {
                minutes: WINDOW.num_minutes(),
            });
        }
    }
    let (hash, candidate) = (hash.to_owned(), candidate.to_owned());
    let right = off_the_workers(move || verify_password(&hash, &candidate)).await;
    if !right {
        return Ok(PasswordCheck::Wrong);
    }
    // Only wrong answers count: an office behind one address opens the link as often as it
    // likes with the right password.
    let reserved: Vec<String> = buckets.into_iter().map(|(bucket, _)| bucket).collect();
    release(db, &reserved).await?;
    Ok(PasswordCheck::Right)
}
