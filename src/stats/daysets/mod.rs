//! Who visited on each day, kept as compressed bitmaps (`roaring`) of dense numbers.
//!
//! Every visitor identity and every client address has a number (`numbers`). A day's set of
//! one link (or of all links) is a bitmap of those numbers in `visit_day_bits`; for the
//! dimensions one visitor can have several values of in a day (referrer, hour, campaign
//! parameters) there is a bitmap of visitors per value. Numbers handed out together sit
//! together, so a day's new visitors compress to a few runs, and a range's UV is the size of
//! the union of its days' bitmaps: a few kilobytes read per day, however many clicks the day
//! had.
//!
//! A turn that adds a few members to a large set writes them as a row of their own
//! (`visit_day_added`, keyed by the set and the turn) instead of the whole set again, until
//! the additions have grown past a share of the set; then it writes the set whole and drops
//! them. A set is the union of its row and its additions.
//!
//! Only counting writes here, holding the `stats_tally` lock row, so bitmaps are rewritten by
//! one transaction at a time.

use super::dimension::{ALL_LINKS, Dimension};
use crate::clickstore::row::Text;
use crate::db::sql::{in_statements, statement};
use chrono::NaiveDate;
use members::Members;
use packed::LinkDay;
pub use packed::Written as PackRow;
use roaring::RoaringBitmap;
use sea_orm::sea_query::Value;
use sea_orm::{ConnectionTrait, DbBackend, DbErr};
use std::collections::BTreeSet;

pub use numbers::{ADDRESSES, VISITORS, numbers};
pub use range::{Union, union};
pub use upkeep::{adopt_old_day, forget, oldest_old_set_day};

mod members;
pub mod numbers;
mod packed;
mod range;
mod upkeep;

/// A set's key as the parameters of its primary key's columns, in their order: `url_map_id`,
/// `kind`, `value`, `stat_date`.
fn key_values((day, scope, kind, value): &SetKey) -> [Value; 4] {
    [
        Value::from(*scope),
        Value::from(*kind),
        Value::from(&**value),
        Value::from(*day),
    ]
}

/// Sets asked for by their keys in one statement at most (four parameters each).
const SETS_ASKED: usize = 800;

/// The rows of `table` (the sets whole, or their additions) of each of `keys`.
fn by_keys(backend: DbBackend, table: &str, keys: &[&SetKey]) -> sea_orm::Statement {
    let columns = "b.url_map_id, b.kind, b.value, b.stat_date, b.members";
    let key = [
        ("url_map_id", "bigint"),
        ("kind", "text"),
        ("value", "text"),
        ("stat_date", "date"),
    ];
    let params = keys.iter().flat_map(|key| key_values(key)).collect();
    crate::db::sql::by_keys(backend, table, columns, &key, params)
}

/// A stored kind letter as one of ours (`None`: a kind this version does not know).
fn known_kind(stored: &str) -> Option<&'static str> {
    [VISITORS, ADDRESSES]
        .into_iter()
        .chain(Dimension::SHOWN.into_iter().filter_map(Dimension::set_kind))
        .chain(Dimension::Hour.set_kind())
        .find(|kind| *kind == stored)
}

/// The sets, each in one row.
const WHOLE: &str = "visit_day_bits";
/// What turns added to them since each was last written whole.
const ADDED: &str = "visit_day_added";

/// Rows of additions a set has at most: a reader reads them all.
const MAX_ADDED_ROWS: u32 = 24;

/// One day's set: day, link (or all links), kind, value (empty for visitors and addresses).
pub type SetKey = (NaiveDate, i64, &'static str, Text);

fn decode(bytes: &[u8]) -> Result<RoaringBitmap, DbErr> {
    RoaringBitmap::deserialize_from(bytes)
        .map_err(|err| DbErr::Custom(format!("a stored visitor set is damaged: {err}")))
}

/// The day sets a counting turn left, as the database holds them once it has committed, kept
/// by the counting thread for its next turn: loading them again each turn was a sixth of a
/// turn once a day's sets had grown (bench/README.md). Only counting turns write the sets
/// (a recount takes a turn too), so they are still what is stored as long as the turn
/// number read in the next turn is theirs; any other instance's turn between makes them stale.
#[derive(Default)]
pub struct Remembered {
    turn: Option<i64>,
    sets: Left,
}

/// The most a turn's day sets may take, serialized, for the counting thread to keep them for
/// the next: beyond it (a day of a big campaign over many links) they are loaded again.
const REMEMBERED_BYTES: usize = 32 << 20;

impl Remembered {
    /// Keeps `sets` as turn `turn` left them (committed), if they take no more than
    /// [`REMEMBERED_BYTES`] serialized (`bytes`).
    pub fn keep(&mut self, turn: i64, sets: Left, bytes: usize) {
        if bytes <= REMEMBERED_BYTES {
            self.turn = Some(turn);
            self.sets = sets;
        }
    }

    /// The sets kept, if they are what the database holds after turn `turn`; forgets them
    /// either way (a turn changes them, and a failed one leaves them unknown).
    pub fn take_after(&mut self, turn: i64) -> Left {
        let sets = std::mem::take(&mut self.sets);
        match self.turn.take() == Some(turn) {
            true => sets,
            false => Left::default(),
        }
    }
}

/// The day sets a batch touches, loaded once, changed in memory, stored once. A set is named
/// by its place in the keys it was loaded for: a turn looks its sets up by day, link, kind and
/// the number it gave the value (see `tally::work`), hashing a few integers, where looking
/// them up by key hashed and compared the value's text for every member added.
///
/// A link's day's sets are held whole or not at all: the pack a turn writes for it holds every
/// set of it that is not a row of its own, those the turn did not touch too (see `packed`).
#[derive(Default)]
pub struct DaySets {
    keys: Vec<SetKey>,
    sets: Vec<Set>,
    /// The links' days held, and whether some of their sets may be rows of their own.
    days: foldhash::HashMap<LinkDay, bool>,
}

/// A set as a turn holds it: what was stored before the turn, and what the turn added.
/// The stored members are only looked in during the turn and the added ones joined to them
/// once, when the set is stored: adding each new member to a stored set of thousands, as
/// it was, moved and regrew its containers member by member, two fifths of working out a
/// turn once a day's sets had grown (bench/README.md).
#[derive(Default)]
struct Set {
    stored: Option<RoaringBitmap>,
    /// What of `stored` is in rows of additions.
    apart: Apart,
    added: Members,
    /// Whether the set is in its link's day's pack (not a row of its own).
    packed: bool,
}

/// A set's rows of additions, as stored: how many and their size.
#[derive(Clone, Copy, Default)]
struct Apart {
    rows: u32,
    bytes: usize,
}

/// A set as a turn leaves it, as the database holds it once the turn has committed.
pub struct Kept {
    set: RoaringBitmap,
    apart: Apart,
    packed: bool,
}

impl Apart {
    /// Whether a turn adding `bytes` (serialized) to set `key`, whose members take `whole`
    /// bytes with them, writes them as a row of their own rather than the set again. The
    /// additions stay under a share of the set (so that reading a set reads at most about
    /// twice its size, and a set is written whole at most about every few turns' worth of
    /// its size); the share varies from link to link between 30 and 60 %, so that the sets of
    /// a burst spread over many links, growing alike, are not all written whole in the same
    /// turn. A small set is always written whole (see [`SMALL_SET`]).
    fn takes(self, key: &SetKey, bytes: usize, whole: usize) -> bool {
        let tenths = 3 + key.1.rem_euclid(4) as usize;
        whole > SMALL_SET
            && self.rows < MAX_ADDED_ROWS
            && (self.bytes + bytes) * 10 <= whole * tenths
    }
}

/// Serialized size up to which a set is written whole whatever a turn adds: a row of
/// additions costs a row as much as the set's own, and is one more to read and later to
/// delete. Over a campaign of one link per recipient nearly every set is one of a few
/// visitors, and half of a turn's sets went to rows of additions (bench/README.md).
const SMALL_SET: usize = 256;

impl DaySets {
    /// Loads the stored sets among `keys`, which are distinct (the others start empty); the
    /// set of `keys[i]` is then set `i`. The other sets of the links' days asked for are
    /// loaded after them (see [`DaySets`]).
    pub async fn load(txn: &impl ConnectionTrait, keys: Vec<SetKey>) -> Result<Self, DbErr> {
        Self::load_knowing(txn, keys, Left::default()).await
    }

    /// [`Self::load`], taking the sets in `known` (as the database holds them: see
    /// [`Remembered`]) from there instead.
    pub async fn load_knowing(
        txn: &impl ConnectionTrait,
        keys: Vec<SetKey>,
        known: Left,
    ) -> Result<Self, DbErr> {
        let backend = txn.get_database_backend();
        let Left {
            sets: mut known,
            days: known_days,
        } = known;
        let mut sets: Vec<Set> = Vec::with_capacity(keys.len());
        let mut days: foldhash::HashMap<LinkDay, bool> = foldhash::HashMap::default();
        // The links' days whose packs are read: those not known.
        let mut unread: Vec<LinkDay> = Vec::new();
        // The sets to read, by key.
        let mut unknown: foldhash::HashMap<&SetKey, usize> = foldhash::HashMap::default();
        for key in &keys {
            let day = (key.0, key.1);
            let packs = key.1 != ALL_LINKS;
            if packs && !days.contains_key(&day) {
                match known_days.get(&day) {
                    Some(apart) => days.insert(day, *apart),
                    None => {
                        unread.push(day);
                        // Until its pack is read: a link's day without one has no sets.
                        days.insert(day, false)
                    }
                };
            }
            let (stored, apart, packed) = match known.remove(key) {
                Some(kept) => (Some(kept.set), kept.apart, kept.packed),
                None => {
                    let twice = unknown.insert(key, sets.len());
                    debug_assert!(twice.is_none(), "a day set asked for twice: {key:?}");
                    (None, Apart::default(), packs)
                }
            };
            sets.push(Set {
                stored,
                apart,
                added: Members::default(),
                packed,
            });
        }
        // The sets of the packs read that were not asked for, and of the links' days known.
        let mut others: Vec<(SetKey, Set)> = Vec::new();
        let held = |set: RoaringBitmap, packed: bool, apart: Apart| Set {
            stored: Some(set),
            apart,
            added: Members::default(),
            packed,
        };
        for pack in packed::read(txn, &unread).await? {
            days.insert(pack.day, pack.apart);
            for (kind, value, set) in pack.sets {
                let Some(kind) = known_kind(&kind) else {
                    continue;
                };
                let key = (pack.day.0, pack.day.1, kind, value);
                match unknown.remove(&key) {
                    Some(at) => sets[at].stored = Some(set),
                    None => others.push((key, held(set, true, Apart::default()))),
                }
            }
        }
        for (key, kept) in known {
            if key.1 != ALL_LINKS && days.contains_key(&(key.0, key.1)) {
                others.push((key, held(kept.set, kept.packed, kept.apart)));
            }
        }
        let mut found = Vec::new();
        let mut push = |row: &sea_orm::QueryResult, table: &str| -> Result<(), DbErr> {
            let day: NaiveDate = row.try_get("", "stat_date")?;
            let scope: i64 = row.try_get("", "url_map_id")?;
            let kind: String = row.try_get("", "kind")?;
            let value: String = row.try_get("", "value")?;
            let Some(kind) = known_kind(&kind) else {
                return Ok(());
            };
            let key = (day, scope, kind, Text::from(value));
            // Only the sets asked for.
            if let Some(&at) = unknown.get(&key) {
                let members: Vec<u8> = row.try_get("", "members")?;
                let added = (table == ADDED).then_some(members.len());
                found.push((at, decode(&members)?, added));
            }
            Ok(())
        };
        // Each set that may be a row of its own (an all-links set, or one of a link's day
        // whose pack says some are) asked for by its whole key, one seek each, in the key's
        // order. Asked for by lists of links, kinds and values, SQLite sought every
        // combination of the three (as PostgreSQL's index scans do before version 17) and
        // MariaDB read every set of the day: over a campaign of one link per recipient, where
        // each link has its own `utm_campaign`, four fifths of a turn's time (bench/README.md).
        let mut wanted: Vec<&SetKey> = (unknown.keys().copied())
            .filter(|key| key.1 == ALL_LINKS || days.get(&(key.0, key.1)) == Some(&true))
            .collect();
        wanted.sort_unstable_by(|a, b| (a.1, a.2, &a.3, a.0).cmp(&(b.1, b.2, &b.3, b.0)));
        for (chunk, table) in wanted
            .chunks(SETS_ASKED)
            .flat_map(|chunk| [(chunk, WHOLE), (chunk, ADDED)])
        {
            for row in txn.query_all_raw(by_keys(backend, table, chunk)).await? {
                push(&row, table)?;
            }
        }
        for (at, found, added) in found {
            let set = &mut sets[at];
            set.packed = false;
            match &mut set.stored {
                Some(stored) => *stored |= found,
                None => set.stored = Some(found),
            }
            if let Some(bytes) = added {
                set.apart.rows += 1;
                set.apart.bytes += bytes;
            }
        }
        let mut keys = keys;
        for (key, set) in others {
            keys.push(key);
            sets.push(set);
        }
        Ok(Self { keys, sets, days })
    }

    /// Adds `number` to set `at` (see [`Self::load`]); true when it was not there (a first
    /// visit).
    pub fn insert(&mut self, at: usize, number: u32) -> bool {
        let stored_max = self.sets[at].stored.as_ref().and_then(RoaringBitmap::max);
        self.insert_above(at, number, stored_max)
    }

    /// [`Self::insert`], knowing the largest stored member of the set: one above it is not
    /// looked for among them.
    fn insert_above(&mut self, at: usize, number: u32, stored_max: Option<u32>) -> bool {
        let set = &mut self.sets[at];
        if stored_max.is_some_and(|max| number <= max)
            && set
                .stored
                .as_ref()
                .is_some_and(|stored| stored.contains(number))
        {
            return false;
        }
        set.added.insert(number)
    }

    /// Adds each of `members` (a set's place, see [`Self::load`], and a number) to its set;
    /// says for each, in the order given, whether it was not there before it (a first visit;
    /// of a member given twice, the first). They are added set by set, each set's in ascending
    /// order: added in the clicks' order, each went to another set and container than the
    /// one before, out of the processor's caches (a turn of 50,000 after a burst, added up and
    /// settled: 337–382 ms that way, 234–271 ms this way; bench/README.md).
    pub fn insert_all(&mut self, members: &[(usize, u32)]) -> Vec<bool> {
        let mut order: Vec<(u64, usize)> = (members.iter().enumerate())
            .map(|(i, &(at, number))| (((at as u64) << 32) | u64::from(number), i))
            .collect();
        order.sort_unstable();
        let mut new = vec![false; members.len()];
        let mut last = None;
        // The set the members are at, and its largest stored member: those above it are not
        // stored. After a burst most members are visitors numbered in the very turn, each of
        // which was looked for in the stored sets (a tenth of the look-ahead's samples went
        // to `Container::contains`; bench/README.md).
        let mut at_set = None;
        for (member, i) in order {
            if last != Some(member) {
                last = Some(member);
                let (at, number) = ((member >> 32) as usize, member as u32);
                let stored_max = match at_set {
                    Some((set, max)) if set == at => max,
                    _ => {
                        let max = self.sets[at].stored.as_ref().and_then(RoaringBitmap::max);
                        at_set = Some((at, max));
                        max
                    }
                };
                new[i] = self.insert_above(at, number, stored_max);
            }
        }
        new
    }

    /// Stores every set that changed, and stamps the days whose visitors or addresses changed
    /// with the counting turn (see `kept`).
    pub async fn store(self, txn: &impl ConnectionTrait, turn: i64) -> Result<(), DbErr> {
        self.settle()?.rows.store(txn, turn).await
    }

    /// Joins what the turn added to the stored sets and serializes what changed (the sets,
    /// or what they gained: see [`Apart::takes`]): everything storing them takes but the
    /// writing, which a turn can do before it takes the lock it writes under.
    pub fn settle(self) -> Result<Settled, DbErr> {
        let mut rows = Rows::default();
        let mut days = self.days;
        let mut sets = foldhash::HashMap::default();
        let mut left_bytes = 0;
        // The links' days whose packs change.
        let mut repacked = foldhash::HashSet::default();
        for (key, held) in self.keys.into_iter().zip(self.sets) {
            let packed = held.packed;
            if held.added.is_empty() {
                let set = held.stored.unwrap_or_default();
                left_bytes += set.serialized_size();
                let apart = held.apart;
                sets.insert(key, Kept { set, apart, packed });
                continue;
            }
            if [VISITORS, ADDRESSES].contains(&key.2) {
                rows.stamped.insert((key.1, key.0));
            }
            let mut added = held.added.into_bitmap();
            if packed {
                let mut set = held.stored.unwrap_or_default();
                set |= added;
                set.optimize();
                let size = set.serialized_size();
                left_bytes += size;
                repacked.insert((key.0, key.1));
                // Grown too large to be rewritten with its pack by every turn: a row of its own.
                let packed = size <= packed::PACKED_MAX;
                if !packed {
                    days.insert((key.0, key.1), true);
                    rows.whole.push((key.clone(), serialized(&set)?));
                }
                let apart = Apart::default();
                sets.insert(key, Kept { set, apart, packed });
                continue;
            }
            let (mut set, apart) = match held.stored {
                Some(mut stored) => {
                    let gained = added.serialized_size();
                    stored |= &added;
                    let whole = stored.serialized_size();
                    match held.apart.takes(&key, gained, whole) {
                        true => {
                            added.optimize();
                            let bytes = serialized(&added)?;
                            let apart = Apart {
                                rows: held.apart.rows + 1,
                                bytes: held.apart.bytes + bytes.len(),
                            };
                            rows.added.push((key.clone(), bytes));
                            left_bytes += whole;
                            let set = stored;
                            sets.insert(key, Kept { set, apart, packed });
                            continue;
                        }
                        false => (stored, held.apart),
                    }
                }
                None => (added, Apart::default()),
            };
            if apart.rows > 0 {
                rows.folded.push(key.clone());
            }
            set.optimize();
            let bytes = serialized(&set)?;
            left_bytes += bytes.len();
            let apart = Apart::default();
            sets.insert(key.clone(), Kept { set, apart, packed });
            rows.whole.push((key, bytes));
        }
        // Each changed pack with every set of its link's day that it holds, in the sets' order.
        let mut packs: std::collections::BTreeMap<LinkDay, Vec<(&SetKey, &RoaringBitmap)>> =
            repacked.into_iter().map(|day| (day, Vec::new())).collect();
        for (key, kept) in &sets {
            if kept.packed
                && !kept.set.is_empty()
                && let Some(pack) = packs.get_mut(&(key.0, key.1))
            {
                pack.push((key, &kept.set));
            }
        }
        for (day, mut held) in packs {
            held.sort_unstable_by(|a, b| (a.0.2, &a.0.3).cmp(&(b.0.2, &b.0.3)));
            let row = packed::pack(held.into_iter().map(|(key, set)| (key.2, &*key.3, set)))?;
            rows.packs.push((day, days.get(&day) == Some(&true), row));
        }
        // In key order, so that two writers never wait for each other's rows in a circle.
        rows.whole.sort_by(|a, b| a.0.cmp(&b.0));
        rows.added.sort_by(|a, b| a.0.cmp(&b.0));
        rows.folded.sort();
        Ok(Settled {
            rows,
            left: Left { sets, days },
            left_bytes,
        })
    }
}

fn serialized(set: &RoaringBitmap) -> Result<Vec<u8>, DbErr> {
    let mut bytes = Vec::with_capacity(set.serialized_size());
    set.serialize_into(&mut bytes)
        .map_err(|err| DbErr::Custom(err.to_string()))?;
    Ok(bytes)
}

/// Every set a turn leaves, as the database holds them once it has committed, and the links'
/// days they are of (each with every set of its pack), with whether some of their sets may be
/// rows of their own.
#[derive(Default)]
pub struct Left {
    sets: foldhash::HashMap<SetKey, Kept>,
    days: foldhash::HashMap<LinkDay, bool>,
}

/// The day sets of a turn, ready to be stored ([`DaySets::settle`]).
pub struct Settled {
    pub rows: Rows,
    /// Every set as the turn leaves it (those it only looked in too; a set that is empty is
    /// not stored).
    pub left: Left,
    /// Their size, serialized.
    pub left_bytes: usize,
}

/// The rows of the sets a turn changed, each list in key order.
#[derive(Default)]
pub struct Rows {
    /// The sets written whole, serialized.
    whole: Vec<(SetKey, Vec<u8>)>,
    /// Of those, the ones that had rows of additions, now folded in.
    folded: Vec<SetKey>,
    /// What the turn added to the other sets, serialized.
    added: Vec<(SetKey, Vec<u8>)>,
    /// The days whose visitors or addresses changed.
    stamped: BTreeSet<(i64, NaiveDate)>,
    /// The links' days' packs that changed, in key order.
    packs: Vec<packed::Written>,
}

impl Rows {
    /// Takes the links' days' packs out, for the turn to write each with its values
    /// (`dayvalues::add`): [`Self::store`] then writes the rest.
    pub fn take_packs(&mut self) -> Vec<PackRow> {
        std::mem::take(&mut self.packs)
    }

    /// Writes the sets that changed (or what they gained), and stamps the days whose visitors
    /// or addresses changed with the counting turn (see `kept`).
    pub async fn store(self, txn: &impl ConnectionTrait, turn: i64) -> Result<(), DbErr> {
        let backend = txn.get_database_backend();
        let tail = match backend {
            DbBackend::MySql => "ON DUPLICATE KEY UPDATE members = VALUES(members)",
            _ => {
                "ON CONFLICT (url_map_id, kind, value, stat_date) \
                 DO UPDATE SET members = excluded.members"
            }
        };
        let columns = "url_map_id, kind, value, stat_date";
        packed::write(txn, &self.packs).await?;
        insert_sets(txn, WHOLE, columns, None, &self.whole, tail).await?;
        for chunk in self.folded.chunks(100) {
            let one = "(url_map_id = ? AND kind = ? AND value = ? AND stat_date = ?)";
            let sql = format!(
                "DELETE FROM {ADDED} WHERE {}",
                vec![one; chunk.len()].join(" OR ")
            );
            let mut values = Vec::with_capacity(chunk.len() * 4);
            for key in chunk {
                values.extend(key_values(key));
            }
            txn.execute_raw(statement(backend, &sql, values)).await?;
        }
        // One row a set and turn: nothing to meet.
        let columns = "url_map_id, kind, value, stat_date, turn";
        insert_sets(txn, ADDED, columns, Some(turn), &self.added, "").await?;
        stamp(txn, turn, self.stamped).await
    }
}

/// Writes links' days' packs of day sets whole, keeping their rows' values (see `packed`).
pub async fn write_packs(txn: &impl ConnectionTrait, packs: &[PackRow]) -> Result<(), DbErr> {
    packed::write(txn, packs).await
}

/// Inserts `sets` into `table` (`columns`, then `members`), with `turn` after the key when
/// given, ending each statement with `tail`.
async fn insert_sets(
    txn: &impl ConnectionTrait,
    table: &str,
    columns: &str,
    turn: Option<i64>,
    sets: &[(SetKey, Vec<u8>)],
    tail: &str,
) -> Result<(), DbErr> {
    let backend = txn.get_database_backend();
    let marks = match turn {
        Some(_) => "(?, ?, ?, ?, ?, ?)",
        None => "(?, ?, ?, ?, ?)",
    };
    for chunk in in_statements(sets, 200, |(_, members)| members.len()) {
        let sql = format!(
            "INSERT INTO {table} ({columns}, members) VALUES {} {tail}",
            vec![marks; chunk.len()].join(", ")
        );
        let mut values = Vec::with_capacity(chunk.len() * 6);
        for (key, members) in chunk {
            values.extend(key_values(key));
            values.extend(turn.map(Value::from));
            values.push(Value::from(members.clone()));
        }
        txn.execute_raw(statement(backend, &sql, values)).await?;
    }
    Ok(())
}

/// Marks `days` (link or all links, day) as changed by the counting turn `turn` (see `kept`).
pub async fn stamp(
    txn: &impl ConnectionTrait,
    turn: i64,
    days: BTreeSet<(i64, NaiveDate)>,
) -> Result<(), DbErr> {
    if days.is_empty() {
        return Ok(());
    }
    let backend = txn.get_database_backend();
    let tail = match backend {
        DbBackend::MySql => "ON DUPLICATE KEY UPDATE turn = VALUES(turn)",
        _ => "ON CONFLICT (url_map_id, stat_date) DO UPDATE SET turn = excluded.turn",
    };
    let days: Vec<_> = days.into_iter().collect();
    for chunk in days.chunks(300) {
        let sql = format!(
            "INSERT INTO visit_day_stamp (url_map_id, stat_date, turn) VALUES {} {tail}",
            vec!["(?, ?, ?)"; chunk.len()].join(", ")
        );
        let mut values = Vec::with_capacity(chunk.len() * 3);
        for (scope, day) in chunk {
            values.extend([Value::from(*scope), Value::from(*day), Value::from(turn)]);
        }
        txn.execute_raw(statement(backend, &sql, values)).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_added_together_are_new_where_added_one_by_one_they_would_be() {
        // Three sets, one of them stored; members asked for in no order, some twice, some
        // already stored.
        let day = NaiveDate::from_ymd_opt(2026, 12, 6).unwrap();
        let key = |link| (day, link, VISITORS, Text::from(""));
        let stored = |sets: &mut DaySets| {
            sets.sets[1].stored = Some(RoaringBitmap::from_iter([4, 70_000, 9]));
        };
        let mut asked = Vec::new();
        let mut next = 17u64;
        for _ in 0..2_000 {
            next = next
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let number = (next >> 33) as u32 % 100_000;
            asked.push(((next >> 20) as usize % 3, number));
        }
        asked.extend([(1, 4), (1, 5), (1, 5), (2, 4), (1, 70_000)]);
        let sets = |keys: usize| DaySets {
            keys: (0..keys as i64).map(key).collect(),
            sets: (0..keys).map(|_| Set::default()).collect(),
            days: Default::default(),
        };
        let (mut together, mut one_by_one) = (sets(3), sets(3));
        stored(&mut together);
        stored(&mut one_by_one);

        let new = together.insert_all(&asked);

        let expected: Vec<bool> = (asked.iter())
            .map(|&(at, number)| one_by_one.insert(at, number))
            .collect();
        assert_eq!(new, expected);
        // And as plain bitmaps holding the stored members and the added ones answer: a
        // member is new unless stored (below the stored set's largest or not) or added.
        let mut model = vec![RoaringBitmap::new(); 3];
        model[1] = RoaringBitmap::from_iter([4, 70_000, 9]);
        let modelled: Vec<bool> = (asked.iter())
            .map(|&(at, number)| model[at].insert(number))
            .collect();
        assert_eq!(new, modelled);
        assert!(new.iter().any(|new| *new) && new.iter().any(|new| !*new));
        let added = |sets: DaySets| -> Vec<RoaringBitmap> {
            (sets.sets.into_iter())
                .map(|set| set.added.into_bitmap())
                .collect()
        };
        assert_eq!(added(together), added(one_by_one));
    }
}
