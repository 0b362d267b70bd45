//! The texts a click repeats, kept once: user agents with what was read from them, places,
//! referrers, outcomes, and short texts (codes, hosts, query strings). A click stores their
//! ids (see the migration `lean_clicks`).
//!
//! A dictionary row is found by its digest, a hash of its values, so that every instance
//! finds the same row for the same values. Two different values whose digests collide are
//! told apart by comparing the values, the later one moving on to the next digest.
//!
//! Each row carries `seen`, the last day (UTC) a writer used it. Writers look every value up
//! again on each new day, which moves `seen` on, so a purge can delete the rows that only
//! purged clicks used (those not seen since the day before the purge's) while no writer
//! still holds their ids.

use super::row::{EventRow, Text};
use crate::db::sql::{delete_in_batches, statement};
use sea_orm::{ConnectionTrait, DatabaseConnection, DbBackend, DbErr, Value};
use siphasher::sip::SipHasher13;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::hash::Hasher;

/// A dictionary table and its value columns.
pub struct Dictionary {
    pub table: &'static str,
    pub columns: &'static [&'static str],
    /// The columns it was made with: a column added later counts in a row's digest only when
    /// the row has a value there, so that the rows stored before keep their digests.
    pub first: usize,
}

pub const AGENTS: Dictionary = Dictionary {
    table: "click_agent",
    columns: &[
        "user_agent",
        "browser",
        "browser_version",
        "os",
        "os_version",
        "device",
    ],
    first: 6,
};
pub const PLACES: Dictionary = Dictionary {
    table: "click_place",
    columns: &["country", "province", "city", "carrier"],
    first: 3,
};
pub const REFERERS: Dictionary = Dictionary {
    table: "click_referer",
    columns: &["referer", "referer_host"],
    first: 2,
};
pub const OUTCOMES: Dictionary = Dictionary {
    table: "click_outcome",
    columns: &["transform_status", "failure_reason", "target_rule"],
    first: 3,
};
pub const TEXTS: Dictionary = Dictionary {
    table: "click_text",
    columns: &["value"],
    first: 1,
};

pub const ALL: [&Dictionary; 5] = [&AGENTS, &PLACES, &REFERERS, &OUTCOMES, &TEXTS];

/// The most value columns a dictionary has.
const WIDEST: usize = 6;

/// A dictionary row's values (columns past the dictionary's own are `None`).
pub type Values = [Option<Text>; WIDEST];

/// Where a click refers to a dictionary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    Code,
    Host,
    Agent,
    Referer,
    Query,
    Place,
    Outcome,
}

pub const SLOTS: [Slot; 7] = [
    Slot::Code,
    Slot::Host,
    Slot::Agent,
    Slot::Referer,
    Slot::Query,
    Slot::Place,
    Slot::Outcome,
];

/// A click's ids, by [`Slot`].
pub type Ids = [Option<i32>; SLOTS.len()];

impl Slot {
    pub fn dictionary(self) -> &'static Dictionary {
        match self {
            Self::Code | Self::Host | Self::Query => &TEXTS,
            Self::Agent => &AGENTS,
            Self::Referer => &REFERERS,
            Self::Place => &PLACES,
            Self::Outcome => &OUTCOMES,
        }
    }

    /// What `row` keeps in this slot; `None` when it has nothing there.
    fn values(self, row: &EventRow) -> Option<Values> {
        let one = |text: Option<&Text>| text.map(|t| values([Some(t.clone())]));
        match self {
            Self::Code => one(Some(&row.compression_code)),
            Self::Host => one(row.host.as_ref()),
            Self::Query => one(row.query_string.as_ref()),
            Self::Agent => {
                let all = [
                    row.user_agent.clone(),
                    row.agent.browser.clone(),
                    row.agent.browser_version.clone(),
                    row.agent.os.clone(),
                    row.agent.os_version.clone(),
                    row.agent.device.clone(),
                ];
                all.iter().any(Option::is_some).then_some(all)
            }
            Self::Referer => {
                let all = [row.referer.clone(), row.referer_host.clone()];
                all.iter().any(Option::is_some).then(|| values(all))
            }
            Self::Place => {
                let all = [
                    row.country.clone(),
                    row.province.clone(),
                    row.city.clone(),
                    row.carrier.clone(),
                ];
                all.iter().any(Option::is_some).then(|| values(all))
            }
            Self::Outcome => Some(values(outcome_texts(row.outcome))),
        }
    }
}

fn values<const N: usize>(given: [Option<Text>; N]) -> Values {
    let mut all: Values = Default::default();
    for (slot, value) in all.iter_mut().zip(given) {
        *slot = value;
    }
    all
}

/// The digest of `values` at `probe` (0 first; a collision moves on to the next).
fn digest(dictionary: &Dictionary, values: &Values, probe: u32) -> i64 {
    let mut hasher = SipHasher13::new_with_keys(0x696e_6b6c_696e_6b00, u64::from(probe));
    hash_values(
        &mut hasher,
        &values[..dictionary.columns.len()],
        dictionary.first,
    );
    // Positive, so that every database sorts and shows it alike.
    (hasher.finish() >> 1) as i64
}

/// Feeds `values` to `hasher`, each told apart from its neighbours; a missing value from the
/// `first`-th on adds nothing.
fn hash_values(hasher: &mut impl Hasher, values: &[Option<Text>], first: usize) {
    for (i, value) in values.iter().enumerate() {
        match value {
            None if i >= first => {}
            None => hasher.write_u8(0),
            Some(text) => {
                hasher.write_u8(1);
                hasher.write_u64(text.len() as u64);
                hasher.write(text.as_bytes());
            }
        }
    }
}

/// The day number (UTC, days since 1970) a writer marks the rows it uses with.
pub fn today() -> i64 {
    chrono::Utc::now().timestamp().div_euclid(86_400)
}

/// Ids a writer has already looked up, by dictionary, for the day it looked them up.
pub struct Dictionaries {
    day: i64,
    /// By the values' [`Fingerprint`], not the values: 32 bytes a row instead of the texts'
    /// copies and six references to them (about 190 bytes a short code; 100,000 links' codes
    /// held about 19 MB, now 5).
    known: HashMap<&'static str, foldhash::HashMap<Fingerprint, i32>>,
    /// This writer's own keys of [`fingerprint`], so that nobody can choose values whose
    /// fingerprints collide.
    keys: (u64, u64),
}

impl Default for Dictionaries {
    fn default() -> Self {
        use std::hash::BuildHasher;
        let random = std::collections::hash_map::RandomState::new();
        Self {
            day: 0,
            known: HashMap::new(),
            keys: (random.hash_one(0u8), random.hash_one(1u8)),
        }
    }
}

/// A row's values as a writer remembers them: 128 bits of a keyed hash. Two of a day's
/// 200,000 values ([`KEPT`]) in one dictionary sharing one happens about once in 10^28 days.
type Fingerprint = u128;

fn fingerprint(keys: (u64, u64), values: &Values) -> Fingerprint {
    use siphasher::sip128::Hasher128;
    let mut hasher = siphasher::sip128::SipHasher13::new_with_keys(keys.0, keys.1);
    hash_values(&mut hasher, values, values.len());
    hasher.finish128().as_u128()
}

/// Ids kept in memory per dictionary before it is emptied (a day of distinct user agents or
/// query strings can be more; those are then looked up again).
const KEPT: usize = 200_000;

/// Rows per statement when adding values.
const CHUNK: usize = 200;

impl Dictionaries {
    /// The ids of every row's values, adding the values not stored yet.
    pub async fn ids(
        &mut self,
        db: &DatabaseConnection,
        rows: &[EventRow],
    ) -> Result<Vec<Ids>, DbErr> {
        let day = today();
        if day != self.day {
            self.known.clear();
            self.day = day;
        }
        // Bounded before the batch, so that every value it needs stays known until its ids
        // are taken (a batch adds far fewer than KEPT).
        for known in self.known.values_mut() {
            if known.len() > KEPT {
                known.clear();
            }
        }
        // Each value's fingerprint once: the values not known yet are stored, then every
        // row's ids are found by the same fingerprints.
        let mut missing: HashMap<&'static str, HashSet<Values>> = HashMap::new();
        let mut prints: Vec<[Option<Fingerprint>; SLOTS.len()]> = Vec::with_capacity(rows.len());
        for row in rows {
            prints.push(SLOTS.map(|slot| {
                let values = slot.values(row)?;
                let print = fingerprint(self.keys, &values);
                let table = slot.dictionary().table;
                if !self
                    .known
                    .get(table)
                    .is_some_and(|known| known.contains_key(&print))
                {
                    missing.entry(table).or_default().insert(values);
                }
                Some(print)
            }));
        }
        for dictionary in ALL {
            if let Some(wanted) = missing.remove(dictionary.table) {
                let found = add(db, dictionary, wanted, day).await?;
                let keys = self.keys;
                self.known.entry(dictionary.table).or_default().extend(
                    found
                        .into_iter()
                        .map(|(values, id)| (fingerprint(keys, &values), id)),
                );
            }
        }
        let mut all = Vec::with_capacity(rows.len());
        for row in prints {
            let mut ids: Ids = [None; SLOTS.len()];
            for ((id, slot), print) in ids.iter_mut().zip(SLOTS).zip(row) {
                let Some(print) = print else {
                    continue;
                };
                let table = slot.dictionary().table;
                let known = self.known.get(table).and_then(|known| known.get(&print));
                *id =
                    Some(*known.ok_or_else(|| {
                        DbErr::Custom(format!("a value of {table} was not stored"))
                    })?);
            }
            all.push(ids);
        }
        Ok(all)
    }
}

/// Stores `wanted` in `dictionary` (marking rows already there as seen on `day`) and returns
/// their ids. Each statement commits on its own: a value added by a batch that then fails is
/// only an unused row, which a purge deletes.
async fn add(
    db: &DatabaseConnection,
    dictionary: &Dictionary,
    wanted: HashSet<Values>,
    day: i64,
) -> Result<HashMap<Values, i32>, DbErr> {
    let backend = db.get_database_backend();
    let width = dictionary.columns.len();
    let names = dictionary.columns.join(", ");
    let mut found = HashMap::with_capacity(wanted.len());
    let mut pending: Vec<(Values, u32)> = wanted.into_iter().map(|v| (v, 0)).collect();
    while !pending.is_empty() {
        // In digest order, so that two writers adding the same values never wait on each
        // other in a circle.
        let mut round: Vec<(i64, Values, u32)> = pending
            .drain(..)
            .map(|(values, probe)| (digest(dictionary, &values, probe), values, probe))
            .collect();
        round.sort_by_key(|(digest, _, _)| *digest);
        // One digest once per statement (PostgreSQL refuses to update a row twice in one).
        let mut seen = HashSet::new();
        let (now, later): (Vec<_>, Vec<_>) =
            round.into_iter().partition(|(d, _, _)| seen.insert(*d));
        pending.extend(later.into_iter().map(|(_, values, probe)| (values, probe)));
        for chunk in now.chunks(CHUNK) {
            let row = format!("(?, ?{})", ", ?".repeat(width));
            let rows = vec![row.as_str(); chunk.len()].join(", ");
            let upsert = match backend {
                DbBackend::MySql => format!(
                    "INSERT INTO {} (digest, seen, {names}) VALUES {rows} \
                     ON DUPLICATE KEY UPDATE seen = VALUES(seen)",
                    dictionary.table
                ),
                _ => format!(
                    "INSERT INTO {} (digest, seen, {names}) VALUES {rows} \
                     ON CONFLICT (digest) DO UPDATE SET seen = excluded.seen",
                    dictionary.table
                ),
            };
            let mut params = Vec::with_capacity(chunk.len() * (width + 2));
            for (digest, values, _) in chunk {
                params.push(Value::from(*digest));
                params.push(Value::from(day));
                for value in &values[..width] {
                    params.push(Value::from(value.as_deref().map(str::to_owned)));
                }
            }
            db.execute_raw(statement(backend, &upsert, params)).await?;
            let select = format!(
                "SELECT id, digest, {names} FROM {} WHERE digest IN ({})",
                dictionary.table,
                vec!["?"; chunk.len()].join(", ")
            );
            let params = chunk
                .iter()
                .map(|(digest, _, _)| Value::from(*digest))
                .collect();
            let mut stored: HashMap<i64, (i32, Vec<Option<String>>)> = HashMap::new();
            for row in db
                .query_all_raw(statement(backend, &select, params))
                .await?
            {
                let id: i32 = row.try_get("", "id")?;
                let digest: i64 = row.try_get("", "digest")?;
                let mut texts = Vec::with_capacity(width);
                for column in &dictionary.columns[..width] {
                    texts.push(row.try_get::<Option<String>>("", column)?);
                }
                stored.insert(digest, (id, texts));
            }
            for (digest, values, probe) in chunk {
                let same = stored.get(digest).filter(|(_, texts)| {
                    texts
                        .iter()
                        .zip(values.iter())
                        .all(|(stored, value)| stored.as_deref() == value.as_deref())
                });
                match same {
                    Some((id, _)) => {
                        found.insert(values.clone(), *id);
                    }
                    None if *probe < 16 => pending.push((values.clone(), probe + 1)),
                    None => {
                        return Err(DbErr::Custom(format!(
                            "no free digest in {} for a value after 16 tries",
                            dictionary.table
                        )));
                    }
                }
            }
        }
    }
    Ok(found)
}

/// Rows deleted per statement by [`purge`].
const PURGE_BATCH: i64 = 5_000;

/// Deletes the dictionary rows no writer has used since before `day` (UTC day number);
/// returns how many. `seen` is indexed in every dictionary.
pub async fn purge(db: &impl ConnectionTrait, day: i64) -> Result<u64, DbErr> {
    let mut deleted = 0;
    for dictionary in ALL {
        deleted += delete_in_batches(db, dictionary.table, "seen", day, PURGE_BATCH).await?;
    }
    Ok(deleted)
}

/// The texts an outcome is kept as, each made once (a row's are reference counts).
fn outcome_texts(outcome: crate::rules::Outcome) -> [Option<Text>; 3] {
    static TEXTS: std::sync::LazyLock<Vec<(crate::rules::Outcome, [Option<Text>; 3])>> =
        std::sync::LazyLock::new(|| {
            crate::rules::Outcome::ALL
                .into_iter()
                .map(|outcome| {
                    let texts = [
                        Some(Text::from(outcome.status())),
                        outcome.reason().map(Text::from),
                        outcome.target_rule().map(|rule| Text::from(rule.as_str())),
                    ];
                    (outcome, texts)
                })
                .collect()
        });
    TEXTS
        .iter()
        .find(|(known, _)| *known == outcome)
        .map(|(_, texts)| texts.clone())
        .expect("every outcome is in Outcome::ALL")
}

/// The short codes and other texts (`click_text` rows) `ids`.
pub async fn texts(
    db: &impl ConnectionTrait,
    ids: BTreeSet<i32>,
) -> Result<HashMap<i32, Text>, DbErr> {
    let found = look_up(db, &TEXTS, ["value"], ids).await?;
    Ok(found
        .into_iter()
        .filter_map(|(id, [value])| Some((id, value?)))
        .collect())
}

/// The text `columns` (some of the dictionary's own) of `dictionary`'s rows `ids`, in that
/// order.
pub(super) async fn look_up<const N: usize>(
    db: &impl ConnectionTrait,
    dictionary: &Dictionary,
    columns: [&str; N],
    ids: BTreeSet<i32>,
) -> Result<HashMap<i32, [Option<Text>; N]>, DbErr> {
    debug_assert!(columns.iter().all(|c| dictionary.columns.contains(c)));
    let (table, names) = (dictionary.table, columns.join(", "));
    let ids: Vec<i32> = ids.into_iter().collect();
    let mut out = HashMap::with_capacity(ids.len());
    let select = format!("SELECT id, {names} FROM {table} WHERE id");
    crate::db::sql::each_row_in(db, (&select, &ids), ("", &[]), |row| {
        let mut texts: [Option<Text>; N] = std::array::from_fn(|_| None);
        for (text, column) in texts.iter_mut().zip(columns) {
            *text = row.try_get::<Option<String>>("", column)?.map(Text::from);
        }
        out.insert(row.try_get("", "id")?, texts);
        Ok(())
    })
    .await?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_that_differ_only_in_where_a_text_ends_or_is_missing_have_other_fingerprints() {
        let keys = Dictionaries::default().keys;
        let of =
            |given: [Option<&str>; 3]| fingerprint(keys, &values(given.map(|t| t.map(Text::from))));
        let all = [
            of([Some("ab"), None, None]),
            of([Some("a"), Some("b"), None]),
            of([Some("a"), None, Some("b")]),
            of([Some(""), None, None]),
            of([None, None, None]),
            of([None, Some(""), None]),
        ];
        let distinct: HashSet<Fingerprint> = all.into_iter().collect();
        assert_eq!(distinct.len(), all.len());
        assert_eq!(of([Some("ab"), None, None]), all[0]);
        // Another writer's keys: the same values, another fingerprint.
        let other = Dictionaries::default().keys;
        assert_ne!(
            fingerprint(other, &values([Some(Text::from("ab"))])),
            all[0]
        );
    }
}
