//! Visitors' and addresses' numbers: every visitor identity and every client address gets a
//! number the first time it is counted, per kind counted up from 0 (`stats_tally.next_visitor`,
//! `next_address`), and is found again through a 64-bit hash of it (`visit_key`). The day sets
//! (the module above) are bitmaps of these numbers. Only counting hands numbers out, holding the
//! `stats_tally` lock row, so one transaction at a time does.
//!
//! On SQLite a new number goes to `visit_key_recent` first, and each turn moves one of
//! [`SLICES`] stretches of the hash range from there into `visit_key` ([`move_slice`]): SQLite
//! keeps a table in the order of its key, a hash, so written straight into `visit_key` a
//! turn's new visitors changed nearly every page of it once millions were numbered
//! (bench/README.md). Every number is in exactly one of the two tables, and a lookup asks both
//! in one statement, so it sees them as one snapshot. PostgreSQL adds rows at the end of a
//! table and MySQL/MariaDB write changed pages back in the background: counting there did not
//! slow as visitors were numbered, and paid for a second lookup more than it gained, so their
//! numbers go straight into `visit_key` ([`new_numbers_table`]).

use crate::db::sql::{ask_packed_whole, each_row_in, statement};
use sea_orm::sea_query::Value;
use sea_orm::{ConnectionTrait, DbBackend, DbErr};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fmt::{self, Write};

/// The set of visitor identities.
pub const VISITORS: &str = "v";
/// The set of client addresses.
pub const ADDRESSES: &str = "i";

/// A visitor or an address as counting knows it: its kind (`VISITORS` or `ADDRESSES`) and the
/// hash of its text that its number is found by (`visit_key.hash`). Two of 2^64 colliding
/// would count two visitors as one: about one in 37 over a billion visitors.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub struct Who {
    pub hash: i64,
    pub kind: &'static str,
}

impl Who {
    /// `who` of `kind`, hashed as written out; none for an empty text (nobody to count).
    pub fn of(kind: &'static str, who: impl fmt::Display) -> Option<Who> {
        // Fed as written, in parts: the digest of `kind`, a line break and the text, without
        // building that text first (two allocations a page view, and a map keyed by them).
        struct Feed(Sha256, usize);
        impl Write for Feed {
            fn write_str(&mut self, part: &str) -> fmt::Result {
                self.0.update(part);
                self.1 += part.len();
                Ok(())
            }
        }
        let mut feed = Feed(Sha256::new().chain_update(kind).chain_update("\n"), 0);
        write!(feed, "{who}").ok()?;
        let Feed(sha, written) = feed;
        (written > 0).then(|| {
            let digest = sha.finalize();
            let mut first = [0u8; 8];
            first.copy_from_slice(&digest[..8]);
            Who {
                hash: i64::from_le_bytes(first),
                kind,
            }
        })
    }
}

/// The numbers of `wanted` by hash, handing out new ones to those not seen before.
pub async fn numbers(
    txn: &impl ConnectionTrait,
    wanted: impl IntoIterator<Item = Who>,
) -> Result<foldhash::HashMap<i64, u32>, DbErr> {
    let (numbers, new) = look_up_numbers(txn, wanted, &Handed::default()).await?;
    new.store(txn).await?;
    Ok(numbers)
}

/// The numbers of `wanted` (given as often as they come) by hash, with the new ones worked
/// out but not yet handed out: they are the caller's once it has stored [`NewNumbers`] in a
/// turn that nobody else's came between. `handed` are the numbers a turn not committed yet
/// hands out, for the turn after it (worked out meanwhile, see `tally`): they count as stored.
pub async fn look_up_numbers(
    txn: &impl ConnectionTrait,
    wanted: impl IntoIterator<Item = Who>,
    handed: &Handed,
) -> Result<(foldhash::HashMap<i64, u32>, NewNumbers), DbErr> {
    let backend = txn.get_database_backend();
    // In the hashes' order, as the index is read and new keys are written.
    let mut whos: Vec<Who> = wanted.into_iter().collect();
    whos.sort_unstable();
    whos.dedup_by_key(|who| who.hash);
    let mut found: foldhash::HashMap<i64, u32> = foldhash::HashMap::default();
    found.reserve(whos.len());
    for who in &whos {
        if let Some(number) = handed.numbers.get(&who.hash) {
            found.insert(who.hash, *number);
        }
    }
    let keys: Vec<i64> = (whos.iter().map(|who| who.hash))
        .filter(|hash| !found.contains_key(hash))
        .collect();
    if backend == DbBackend::Sqlite {
        // A turn looks up as many as two numbers a click: one statement naming them all,
        // answered packed, instead of a statement per 500 and a row handed over per number
        // (bench/README.md). It asks both tables: SQLite keeps recent numbers apart.
        let wanted = serde_json::to_string(&keys).map_err(|err| DbErr::Custom(err.to_string()))?;
        let sql = "SELECT hash, id FROM visit_key WHERE hash IN (SELECT value FROM json_each(?)) \
                   UNION ALL \
                   SELECT hash, id FROM visit_key_recent WHERE hash IN (SELECT value FROM json_each(?))";
        let values = vec![wanted.clone().into(), wanted.into()];
        let pairs = ask_packed_whole(txn, "hash, id", sql, values).await?;
        let pairs: Vec<(i64, i64)> = serde_json::from_str(&pairs)
            .map_err(|err| DbErr::Custom(format!("visitor numbers read as JSON: {err}")))?;
        for (hash, id) in pairs {
            found.insert(hash, number(id)?);
        }
    } else {
        let select = "SELECT hash, id FROM visit_key WHERE hash";
        each_row_in(txn, (select, &keys), ("", &[]), |row| {
            let id: i64 = row.try_get("", "id")?;
            found.insert(row.try_get("", "hash")?, number(id)?);
            Ok(())
        })
        .await?;
    }
    let new: Vec<Who> = (whos.into_iter())
        .filter(|who| !found.contains_key(&who.hash))
        .collect();
    let mut new_numbers = NewNumbers::default();
    if !new.is_empty() {
        let (visitor, address) = match handed.next {
            Some(next) => next,
            None => {
                let sql = "SELECT next_visitor, next_address FROM stats_tally WHERE id = 1";
                let row = txn
                    .query_one_raw(statement(backend, sql, vec![]))
                    .await?
                    .ok_or_else(|| DbErr::Custom("the stats_tally row is missing".into()))?;
                (
                    row.try_get("", "next_visitor")?,
                    row.try_get("", "next_address")?,
                )
            }
        };
        let mut next: HashMap<&str, i64> =
            HashMap::from([(VISITORS, visitor), (ADDRESSES, address)]);
        for Who { hash, kind } in new {
            let id = next.get_mut(kind).map_or(0, |n| {
                *n += 1;
                *n - 1
            });
            let number = number(id)?;
            found.insert(hash, number);
            new_numbers.rows.push((hash, number));
        }
        new_numbers.next = Some((next[VISITORS], next[ADDRESSES]));
    }
    Ok((found, new_numbers))
}

/// Numbers worked out for visitors and addresses not seen before, to be stored.
#[derive(Default)]
pub struct NewNumbers {
    /// Hash and number.
    rows: Vec<(i64, u32)>,
    /// The next visitor's and address's number afterwards.
    next: Option<(i64, i64)>,
}

/// The numbers a turn hands out, as the turn after it sees them while the first commits.
#[derive(Default)]
pub struct Handed {
    numbers: foldhash::HashMap<i64, u32>,
    /// The next visitor's and address's number after the turn (none: it handed out none).
    next: Option<(i64, i64)>,
}

impl NewNumbers {
    /// What the turn storing these hands out.
    pub fn handed(&self) -> Handed {
        Handed {
            numbers: self.rows.iter().copied().collect(),
            next: self.next,
        }
    }

    pub async fn store(self, txn: &impl ConnectionTrait) -> Result<(), DbErr> {
        let Some((visitor, address)) = self.next else {
            return Ok(());
        };
        let backend = txn.get_database_backend();
        // Each number is new (only a turn hands them out, holding the lock row, and a turn
        // worked out ahead stands only when no turn came between). On SQLite a statement that
        // can fail on a key after it changed some rows keeps a copy of every page it changes,
        // to take it back alone (a statement journal, written to a temporary file): the rows
        // of a turn after a burst, 50,000 new visitors spread over the whole table, took a
        // median 118–149 ms a turn to add that way, 75–121 without (bench/README.md). `OR IGNORE`
        // cannot fail on a key, and what each statement added is counted instead.
        let or_ignore = match backend {
            DbBackend::Sqlite => "OR IGNORE ",
            _ => "",
        };
        let table = new_numbers_table(backend);
        for chunk in self.rows.chunks(500) {
            let sql = format!(
                "INSERT {or_ignore}INTO {table} (hash, id) VALUES {}",
                vec!["(?, ?)"; chunk.len()].join(", ")
            );
            let values = chunk
                .iter()
                .flat_map(|(h, id)| [Value::from(*h), Value::from(i64::from(*id))])
                .collect();
            let added = txn.execute_raw(statement(backend, &sql, values)).await?;
            if added.rows_affected() != chunk.len() as u64 {
                return Err(DbErr::Custom(format!(
                    "{} of {} new visitors' and addresses' numbers were stored already ({table})",
                    chunk.len() as u64 - added.rows_affected(),
                    chunk.len()
                )));
            }
        }
        let sql = "UPDATE stats_tally SET next_visitor = ?, next_address = ? WHERE id = 1";
        let values = vec![visitor.into(), address.into()];
        txn.execute_raw(statement(backend, sql, values)).await?;
        Ok(())
    }
}

/// Whether `backend` keeps the numbers handed out lately apart (see the module's comment).
fn keeps_recent_apart(backend: DbBackend) -> bool {
    backend == DbBackend::Sqlite
}

/// Where `backend` puts the numbers a turn hands out.
pub fn new_numbers_table(backend: DbBackend) -> &'static str {
    if keeps_recent_apart(backend) {
        "visit_key_recent"
    } else {
        "visit_key"
    }
}

/// Stretches of the hash range: the recent table holds about the last `SLICES` turns' new
/// numbers, and a turn moves about one turn's worth into one `SLICES`th of `visit_key`. With
/// 50,000 new visitors a turn and 6 million numbered, that is about 2,400 pages of the recent
/// table and 2,200 of `visit_key` changed a turn, against about 35,000 of `visit_key` before.
pub const SLICES: i64 = 16;

/// Moves the numbers in turn `turn`'s stretch of the hash range (turns take the stretches in
/// order) from `visit_key_recent` into `visit_key`, in one transaction with the turn's other
/// writes. Every turn moves one, whether it handed out numbers or not, so none is left behind.
/// Nothing to do where new numbers go straight into `visit_key`.
pub async fn move_slice(txn: &impl ConnectionTrait, turn: i64) -> Result<(), DbErr> {
    let backend = txn.get_database_backend();
    if !keeps_recent_apart(backend) {
        return Ok(());
    }
    let width = (1i128 << 64) / i128::from(SLICES);
    let low = i128::from(i64::MIN) + i128::from(turn.rem_euclid(SLICES)) * width;
    let bounds = || -> Vec<Value> {
        let (low, high) = (low as i64, (low + width - 1) as i64);
        vec![low.into(), high.into()]
    };
    // `OR IGNORE` for the reason `NewNumbers::store` gives: a number found in `visit_key`
    // already is skipped, and what was moved is compared with what was taken instead.
    let sql = "INSERT OR IGNORE INTO visit_key (hash, id) \
               SELECT hash, id FROM visit_key_recent WHERE hash BETWEEN ? AND ? ORDER BY hash";
    let added = txn.execute_raw(statement(backend, sql, bounds())).await?;
    let sql = "DELETE FROM visit_key_recent WHERE hash BETWEEN ? AND ?";
    let taken = txn.execute_raw(statement(backend, sql, bounds())).await?;
    let (added, taken) = (added.rows_affected(), taken.rows_affected());
    if taken != added {
        return Err(DbErr::Custom(format!(
            "{} of {taken} recent visitors' and addresses' numbers were in visit_key already",
            taken.saturating_sub(added)
        )));
    }
    Ok(())
}

fn number(id: i64) -> Result<u32, DbErr> {
    u32::try_from(id).map_err(|_| DbErr::Custom(format!("visitor number {id} out of range")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The numbers stored are found by this hash: it must not change.
    #[test]
    fn the_hash_is_that_of_kind_and_who_joined_by_a_line_break() {
        for (kind, who) in [
            (VISITORS, "203.0.113.9\nMozilla/5.0"),
            (ADDRESSES, ""),
            ("i", "::1"),
        ] {
            let joined = Sha256::digest(format!("{kind}\n{who}").as_bytes());
            let first: [u8; 8] = joined[..8].try_into().unwrap();
            let hash = Who::of(kind, who).map(|who| who.hash);
            assert_eq!(hash, (!who.is_empty()).then(|| i64::from_le_bytes(first)));
        }
        assert_eq!(
            Who::of(VISITORS, "a").unwrap().hash,
            6_371_480_695_797_368_297
        );
        // Written in parts (an address is), the digest is that of the whole.
        let ip: std::net::IpAddr = "203.0.113.9".parse().unwrap();
        assert_eq!(Who::of(ADDRESSES, ip), Who::of(ADDRESSES, "203.0.113.9"));
    }
}
