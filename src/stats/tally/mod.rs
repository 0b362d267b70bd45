//! Counting stored clicks into the daily statistics, a batch at a time, each click once.
//!
//! Every stored click starts in the waiting list (`click_waiting`, written with the click). A
//! tally takes the lock row (`stats_tally`, so that instances count in turn), reads the
//! oldest waiting clicks, adds them to their day's rows, and takes them off the list — in one
//! transaction, so that a crash, a retry or a second instance never counts an event twice or
//! not at all. The work is proportional to the new events, not to the day.
//!
//! A turn reads everything before it writes anything ([`Work`]). On SQLite, where the turn's
//! first write takes the database's one write lock, which the click writer needs too, the
//! reading and working out happen before the turn, in a read transaction; the turn then only
//! checks that no other turn came between and that the waiting list's front is still the
//! clicks read, and writes. When either changed, the turn reads again, as on the other
//! databases. While a full turn writes and commits there, the counting thread works out the
//! next one from what the database holds and what the turn under way writes ([`Carry`]),
//! so that catching up with a backlog keeps both cores busy.
//!
//! Distinct counts come from first visits: `daysets` holds, per day and link (and for all
//! links), the visitors and addresses seen among page views. A page view whose visitor is new
//! there adds one to UV, and to the UV of its country, province, city, browser, OS and device
//! (a visitor is an address with a user agent, so those are the visitor's own). For the
//! dimensions one visitor can have several values of in a day — referrer, hour and the short
//! URL's query parameters — there is a set of visitors per value.
//!
//! `stats rebuild` forgets a day's rows and lists its events as waiting again; the tally then
//! counts them again, the same way.

use super::daysets::Remembered;
use super::dimension::ALL_LINKS;
use super::frozen::purged_before;
use super::visits::Visits;
use crate::clickstore::waiting::Since;
use crate::db::sql::{add_on_conflict, statement};
use chrono::NaiveDate;
use chrono_tz::Tz;
use sea_orm::sea_query::Value;
use sea_orm::{ConnectionTrait, DatabaseConnection, DbBackend, DbErr, TransactionTrait};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use work::{Breakdown, Work, work_out};

mod first;
use first::Marks;
pub use first::{ReadFirst, read_first};

mod size;
mod work;

pub use size::{burst_turn, quiet_turn};

/// Events counted per transaction at most: the more a batch holds, the more of its clicks add
/// to the same rows (a link's day, its browsers, …), which are written once; the fewer, the
/// shorter the click writer waits for it (on SQLite counting holds the write lock).
pub const BATCH: u64 = 10_000;

/// Distinct values a day keeps per link for a dimension visitors choose themselves (the
/// referrer and the query parameters): later ones are counted together as [`OTHER`], so that
/// nobody can grow the statistics without bound by inventing values.
pub const MAX_VALUES: usize = 200;
pub const OTHER: &str = "(other)";

/// What a turn counted: its clicks, and the links' days they fell on. A turn holds in memory,
/// and writes, a row per link's day, rows for its values and the visitor sets of each: with
/// clicks spread over many links this grows with the clicks, with clicks on a few links it
/// hardly grows at all.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counted {
    pub clicks: u64,
    pub link_days: u64,
    /// How long the turn held its transaction open (on SQLite, the write lock).
    pub held: Duration,
    /// Whether the turn counted as many as it asked for (its limit, or the limit of the turn
    /// before, when it was worked out while that one committed): more may be waiting.
    pub full: bool,
    /// When it committed (on SQLite, let go of the write lock); none when it wrote nothing.
    pub committed: Option<Instant>,
}

/// Counts up to `limit` waiting events; returns how many it counted (0: none was waiting).
pub async fn tally(db: &DatabaseConnection, tz: Tz, limit: u64) -> Result<u64, DbErr> {
    Ok(tally_counted(db, tz, limit).await?.clicks)
}

/// [`tally`], telling also how many links' days the turn touched.
pub async fn tally_counted(db: &DatabaseConnection, tz: Tz, limit: u64) -> Result<Counted, DbErr> {
    Counter::default().counted(db, tz, limit, false).await
}

/// What a counting thread carries from one turn to the next: the day sets its last turn
/// left (see [`Remembered`]), and on SQLite, after a full turn, the next turn, worked out
/// while the last one wrote and committed (see [`Carry`]).
#[derive(Default)]
pub struct Counter {
    remembered: Remembered,
    next: Option<Ahead>,
}

impl Counter {
    /// Counts up to `limit` waiting events (or the turn worked out ahead, however many it
    /// holds); returns what it counted.
    pub async fn turn(
        &mut self,
        db: &DatabaseConnection,
        tz: Tz,
        limit: u64,
    ) -> Result<Counted, DbErr> {
        self.counted(db, tz, limit, true).await
    }

    /// [`Self::turn`], working out the next turn meanwhile only with `look_ahead`.
    async fn counted(
        &mut self,
        db: &DatabaseConnection,
        tz: Tz,
        limit: u64,
        look_ahead: bool,
    ) -> Result<Counted, DbErr> {
        // On SQLite a turn holds the write lock the click writer needs from its first
        // statement on. Its clicks are read and worked out before, in a read transaction (WAL
        // lets the writer store meanwhile), or while the turn before wrote; the turn then
        // checks that nothing it read has changed, and only writes. PostgreSQL and MySQL lock
        // rows, and the writer stores while a turn runs.
        let sqlite = db.get_database_backend() == DbBackend::Sqlite;
        let ahead = match self.next.take() {
            Some(next) => Some(next),
            None if sqlite => {
                work_out_ahead_remembering(db, tz, limit, &mut self.remembered).await?
            }
            None => None,
        };
        let look_ahead = (look_ahead && sqlite).then_some(LookAhead { db, tz, limit });
        let (counted, next) =
            tally_worked_out_remembering(db, tz, limit, ahead, &mut self.remembered, look_ahead)
                .await?;
        self.next = next;
        Ok(counted)
    }
}

/// Takes a counting turn that counts what `ahead` worked out if nothing it read has changed
/// since, and up to `limit` waiting events otherwise; returns what it counted. [`tally`]
/// is [`work_out_ahead`] and this; the tests call the two apart to change the database in
/// between.
pub async fn tally_worked_out(
    db: &DatabaseConnection,
    tz: Tz,
    limit: u64,
    ahead: Option<Ahead>,
) -> Result<Counted, DbErr> {
    let mut remembered = Remembered::default();
    let turn = tally_worked_out_remembering(db, tz, limit, ahead, &mut remembered, None);
    Ok(turn.await?.0)
}

/// Where a turn works out the next one while it writes, and how large.
#[derive(Clone, Copy)]
struct LookAhead<'a> {
    db: &'a DatabaseConnection,
    tz: Tz,
    limit: u64,
}

async fn tally_worked_out_remembering(
    db: &DatabaseConnection,
    tz: Tz,
    limit: u64,
    mut ahead: Option<Ahead>,
    remembered: &mut Remembered,
    look_ahead: Option<LookAhead<'_>>,
) -> Result<(Counted, Option<Ahead>), DbErr> {
    let mut attempt = 0;
    loop {
        let txn = crate::db::begin_write(db).await?;
        let taken = Instant::now();
        let decided = decide(&txn, tz, limit, ahead.take(), remembered).await;
        let result = match decided {
            Ok(Some(turn)) => apply(txn, turn, look_ahead).await,
            Ok(None) => crate::db::finish(txn, Ok(Applied::default())).await,
            Err(err) => crate::db::finish(txn, Err(err)).await,
        };
        match result {
            Err(err) if crate::db::is_retryable(&err) && attempt < 5 => attempt += 1,
            done => {
                return done.map(|applied| {
                    // Committed: the sets are what the database holds after this turn, and
                    // the next turn worked out meanwhile stands on it.
                    if let Some((turn, sets, bytes)) = applied.left {
                        remembered.keep(turn, sets, bytes);
                    }
                    let counted = Counted {
                        held: applied.committed.unwrap_or_else(Instant::now) - taken,
                        committed: applied.committed,
                        ..applied.counted
                    };
                    (counted, applied.next)
                });
            }
        }
    }
}

/// Counts every event waiting, in the turns the schedule takes in a burst (see
/// [`burst_turn`]); returns how many.
pub async fn drain(db: &DatabaseConnection, tz: Tz) -> Result<u64, DbErr> {
    let backend = db.get_database_backend();
    let mut total = 0;
    let mut limit = BATCH;
    let mut counter = Counter::default();
    loop {
        let counted = counter.turn(db, tz, limit).await?;
        total += counted.clicks;
        if !counted.full {
            return Ok(total);
        }
        limit = burst_turn(backend, counted);
    }
}

/// Fresh planner statistics of the tables a turn reads and writes, on PostgreSQL (see
/// [`crate::db::sql::refresh_statistics`]).
pub async fn refresh_statistics(db: &DatabaseConnection) -> Result<(), DbErr> {
    // Each turn rewrites the day sets and totals it touches (and deletes the additions it
    // folds into a set); keys are only ever added (`visit_key_recent` is SQLite's alone).
    let rewritten = [
        "visit_day_bits",
        "visit_day_added",
        "visit_statistics",
        "visit_statistics_breakdown",
        "visit_day_values",
    ];
    let upkeep = crate::db::sql::Upkeep {
        analyze: &["visit_key"],
        rewritten: &rewritten,
        ..Default::default()
    };
    crate::db::sql::refresh_statistics(db, upkeep).await
}

/// Takes the lock row: one instance counts at a time (on SQLite this also takes the write
/// lock first, so the transaction never has to upgrade a read). Returns the turn's number,
/// counted up with every turn taken: what it changes is stamped with it (see `kept`).
pub(super) async fn take_turn(txn: &impl ConnectionTrait) -> Result<i64, DbErr> {
    let backend = txn.get_database_backend();
    let sql = "UPDATE stats_tally SET taken = taken + 1 WHERE id = 1";
    txn.execute_raw(statement(backend, sql, vec![])).await?;
    last_turn(txn).await
}

/// The statement reading the last turn taken.
const TAKEN: &str = "SELECT taken FROM stats_tally WHERE id = 1";

/// The turn last taken (the next one is this plus one).
async fn last_turn(txn: &impl ConnectionTrait) -> Result<i64, DbErr> {
    let backend = txn.get_database_backend();
    match txn.query_one_raw(statement(backend, TAKEN, vec![])).await? {
        Some(row) => row.try_get("", "taken"),
        None => Err(DbErr::Custom("the stats_tally row is missing".into())),
    }
}

/// A turn worked out before it was taken, from what the database held after turn `taken`.
pub struct Ahead {
    taken: i64,
    /// The most clicks it was to count.
    limit: u64,
    frozen: Option<NaiveDate>,
    /// The waiting clicks it counts: the front of the list, in order.
    keys: Vec<(i64, Vec<u8>)>,
    work: Work,
}

/// Reads and works out the next turn without taking it (nothing here writes, so on SQLite it
/// holds no lock a writer waits for); `None` when no click waits.
pub async fn work_out_ahead(
    db: &DatabaseConnection,
    tz: Tz,
    limit: u64,
) -> Result<Option<Ahead>, DbErr> {
    work_out_ahead_remembering(db, tz, limit, &mut Remembered::default()).await
}

async fn work_out_ahead_remembering(
    db: &DatabaseConnection,
    tz: Tz,
    limit: u64,
    remembered: &mut Remembered,
) -> Result<Option<Ahead>, DbErr> {
    work_out_ahead_from(db, tz, limit, Start::Stored(remembered), None).await
}

/// What working out a turn ahead starts from.
enum Start<'a> {
    /// What the database holds (with the sets the counting thread kept, if still theirs).
    Stored(&'a mut Remembered),
    /// What the database will hold once the turn under way commits.
    Carried(Carry),
}

/// What a turn under way writes that working out the one after it reads, so that the next
/// turn can be worked out while it writes and commits (on SQLite its write lock keeps
/// everyone else from writing meanwhile; a read sees the database as it was before it, or
/// once it has committed): its number, the last click it counts (the next reads on from
/// there), the numbers it hands out, the capped values it adds, and the day sets it leaves.
/// The next turn's work stands only on this turn's commit: it is kept only when it committed,
/// and it checks, like any turn worked out ahead, that no other turn came between.
struct Carry {
    turn: i64,
    after: (i64, Vec<u8>),
    handed: crate::stats::daysets::numbers::Handed,
    values: Vec<work::CappedValue>,
    sets: super::daysets::Left,
}

/// Reads and works out the next turn from `from`; tells `has_read` (when given) once it has
/// read everything and ended its read, before it works out the turn.
async fn work_out_ahead_from(
    db: &DatabaseConnection,
    tz: Tz,
    limit: u64,
    from: Start<'_>,
    has_read: Option<tokio::sync::oneshot::Sender<()>>,
) -> Result<Option<Ahead>, DbErr> {
    let after = match &from {
        Start::Carried(carry) => Some((carry.after.0, carry.after.1.as_slice())),
        Start::Stored(_) => None,
    };
    let first = read_first(db, limit, after).await?;
    work_out_ahead_with(db, tz, limit, from, first, has_read).await
}

/// [`work_out_ahead`] with the clicks `first` read, which it counts only when no turn or purge
/// came between (else it reads the list again).
pub async fn work_out_ahead_after(
    db: &DatabaseConnection,
    tz: Tz,
    limit: u64,
    first: ReadFirst,
) -> Result<Option<Ahead>, DbErr> {
    let from = Start::Stored(&mut Remembered::default());
    work_out_ahead_with(db, tz, limit, from, first, None).await
}

async fn work_out_ahead_with(
    db: &DatabaseConnection,
    tz: Tz,
    limit: u64,
    from: Start<'_>,
    first: ReadFirst,
    has_read: Option<tokio::sync::oneshot::Sender<()>>,
) -> Result<Option<Ahead>, DbErr> {
    #[expect(
        clippy::disallowed_methods,
        reason = "it only reads, and on SQLite must not hold the write lock while it does"
    )]
    let txn = db.begin().await?;
    let result = async {
        let stored = last_turn(&txn).await?;
        let frozen = purged_before(&txn).await?;
        let (taken, after, before) = match from {
            Start::Stored(remembered) => {
                let sets = remembered.take_after(stored);
                (stored, None, work::Before::stored(sets))
            }
            Start::Carried(carry) => {
                // Read before the turn under way commits, or after: any other turn between
                // and the work would not stand (it would be refused when taken anyway).
                if stored != carry.turn - 1 && stored != carry.turn {
                    return Ok(None);
                }
                let before = work::Before {
                    sets: carry.sets,
                    handed: carry.handed,
                    values: carry.values,
                };
                (carry.turn, Some(carry.after), before)
            }
        };
        let after = after.as_ref().map(|(at, key)| (*at, key.as_slice()));
        let clicks = match first.0 {
            Some((seen, clicks)) if seen == Marks::of(stored, frozen) => clicks,
            _ => crate::clickstore::waiting::peek_waiting_after(&txn, limit, after).await?,
        };
        if clicks.is_empty() {
            return Ok(None);
        }
        let keys: Vec<_> = clicks.iter().map(|c| (c.at, c.key.clone())).collect();
        let read = work::read(&txn, tz, frozen, clicks, before).await?;
        Ok::<_, DbErr>(Some((taken, frozen, keys, read)))
    }
    .await;
    let read = crate::db::finish(txn, result).await;
    drop(has_read);
    let Some((taken, frozen, keys, read)) = read? else {
        return Ok(None);
    };
    Ok(Some(Ahead {
        taken,
        limit,
        frozen,
        keys,
        work: read.work_out()?,
    }))
}

/// Takes a turn and decides what it counts: what `ahead` worked out when it still stands,
/// else up to `limit` waiting events read now; `None` when none waits.
async fn decide(
    txn: &impl ConnectionTrait,
    tz: Tz,
    limit: u64,
    ahead: Option<Ahead>,
    remembered: &mut Remembered,
) -> Result<Option<Decided>, DbErr> {
    let turn = take_turn(txn).await?;
    let frozen = purged_before(txn).await?;
    if let Some(ahead) = ahead {
        // Everything a turn reads besides the waiting list is written only by turns (and a
        // purge's boundary): when no turn came between, and the clicks read are still
        // waiting, the work stands. Usually they are still the list's front, taken in one
        // range; clicks stored since that are earlier than some of them (a spool written
        // late) wait for the next turn.
        use crate::clickstore::waiting::{take_front, take_listed};
        if ahead.taken + 1 == turn && ahead.frozen == frozen {
            let since = changes_since(&ahead);
            if take_front(txn, &ahead.keys, since).await?
                || take_listed(txn, &ahead.keys, since).await?
            {
                let last = ahead.keys.last().cloned();
                let (work, asked) = (ahead.work, ahead.limit);
                return Ok(last.map(|last| Decided {
                    turn,
                    work,
                    last,
                    asked,
                }));
            }
            tracing::debug!(
                "the clicks a counting turn worked out ahead were taken since; it reads the list again"
            );
        }
    }
    let clicks = crate::clickstore::waiting::take_waiting(txn, limit).await?;
    let Some(last) = clicks.last().map(|c| (c.at, c.key.clone())) else {
        crate::clickstore::waiting::forget_orphans(txn).await?;
        return Ok(None);
    };
    let before = work::Before::stored(remembered.take_after(turn - 1));
    let work = work_out(txn, tz, frozen, clicks, before).await?;
    let asked = limit;
    Ok(Some(Decided {
        turn,
        work,
        last,
        asked,
    }))
}

/// A turn taken, with what it counts, the last click of those, and how many it asked for.
struct Decided {
    turn: i64,
    work: Work,
    last: (i64, Vec<u8>),
    asked: u64,
}

/// What a committed turn did: what it counted, (when they are few enough to keep) the day
/// sets it left, with its number, the next turn when it was asked to work it out meanwhile
/// and was full, and when it committed.
#[derive(Default)]
struct Applied {
    counted: Counted,
    left: Left,
    next: Option<Ahead>,
    committed: Option<Instant>,
}

/// The day sets a turn left, with its number and their size serialized (see [`Remembered`]).
type Left = Option<(i64, super::daysets::Left, usize)>;

/// What may have happened to the waiting list since `ahead` read it, when no turn came
/// between and the purged days are the same. Besides turns, only a purge takes clicks off the
/// list: those of days before the one it records first, which is `ahead.frozen` still. That
/// day begins, in any time zone, before the next day begins in UTC: when every click read is
/// later than that, none of them can have been purged, and the writers only add.
fn changes_since(ahead: &Ahead) -> Since {
    let Some((first, _)) = ahead.keys.first() else {
        return Since::Anything;
    };
    let unpurgeable = match ahead.frozen {
        None => true,
        Some(day) => day
            .succ_opt()
            .and_then(|after| after.and_hms_opt(0, 0, 0))
            .is_some_and(|after| *first >= crate::clickstore::insert::micros(after)),
    };
    match unpurgeable {
        true => Since::OnlyAdded,
        false => Since::Anything,
    }
}

/// Writes what turn `decided` worked out, stamped with the turn, and commits; with
/// `look_ahead`, when the turn is full, works out the next one meanwhile.
async fn apply(
    txn: sea_orm::DatabaseTransaction,
    decided: Decided,
    look_ahead: Option<LookAhead<'_>>,
) -> Result<Applied, DbErr> {
    let Decided {
        turn,
        work,
        last,
        asked,
    } = decided;
    let settled = work.sets;
    let link_days = work
        .stats
        .keys()
        .filter(|(_, link)| *link != ALL_LINKS)
        .count() as u64;
    let counted = Counted {
        clicks: work.counted,
        link_days,
        held: Duration::ZERO,
        full: work.counted >= asked,
        committed: None,
    };
    let sets = settled.left;
    let (left, carry) = match look_ahead {
        // The sets go on to the next turn whatever their size: they are what this one held.
        Some(look) if counted.full => {
            let carry = Carry {
                turn,
                after: last,
                handed: work.numbers.handed(),
                values: work::capped_values(&work.breakdown),
                sets,
            };
            (None, Some((look, carry)))
        }
        _ => (Some((turn, sets, settled.left_bytes)), None),
    };
    let (numbers, stats, breakdown, hits) = (work.numbers, work.stats, work.breakdown, work.hits);
    let mut settled = settled.rows;
    let packs = settled.take_packs();
    let write = async move {
        let written = async {
            numbers.store(&txn).await?;
            crate::stats::daysets::numbers::move_slice(&txn, turn).await?;
            settled.store(&txn, turn).await?;
            write_stats(&txn, &stats).await?;
            // Whatever was counted on a day changed its all-links row: dashboards keeping
            // page views per link of finished days look at these stamps.
            let days = stats.keys().map(|(day, _)| (ALL_LINKS, *day)).collect();
            super::daysets::stamp(&txn, turn, days).await?;
            write_breakdown(&txn, &breakdown, packs).await?;
            super::funnel::count_hits(&txn, hits).await
        };
        let written = written.await;
        crate::db::finish(txn, written)
            .await
            .map(|()| Instant::now())
    };
    // Counting runs on a thread of its own with a runtime of one thread, which cannot work
    // out the next turn while it sends this one's statements: the next turn is worked out on
    // a blocking thread (started from the counting thread, so of its lower priority too),
    // driven by the same runtime's handle.
    let mut checkpoint = None;
    let next = carry.map(|(look, carry)| {
        let (db, tz, limit) = (look.db.clone(), look.tz, look.limit);
        let (read, has_read) = tokio::sync::oneshot::channel();
        checkpoint = Some((look.db, has_read));
        let runtime = tokio::runtime::Handle::current();
        tokio::task::spawn_blocking(move || {
            let start = Start::Carried(carry);
            runtime.block_on(work_out_ahead_from(&db, tz, limit, start, Some(read)))
        })
    });
    let committed = write.await;
    if let (Ok(_), Some((db, has_read))) = (&committed, checkpoint) {
        // The next turn read while this one committed, so SQLite could not start its log
        // (WAL) over at that commit: a reader was still on the state before it. Once that read
        // has ended (the next turn then works out what it read, on the other core), a
        // checkpoint lets the next writer start the log over; without, it grew by every
        // turn's writes while a backlog lasted (to 3 GB after a burst; bench/README.md).
        // Before it, each turn waited for the next to be worked out and then for the
        // checkpoint, a fifth of a turn (bench/README.md).
        let _ = has_read.await;
        if let Err(err) = db
            .execute_unprepared("PRAGMA wal_checkpoint(PASSIVE)")
            .await
        {
            tracing::debug!(error = %err, "cannot checkpoint SQLite's log after a counting turn");
        }
    }
    let next = match next {
        Some(next) => match next.await {
            Ok(Ok(next)) => next,
            // The next turn reads on its own.
            Ok(Err(err)) => {
                tracing::debug!(error = %err, "cannot work out the next counting turn ahead");
                None
            }
            Err(err) => {
                tracing::warn!(error = %err, "working out the next counting turn ahead failed");
                None
            }
        },
        None => None,
    };
    Ok(Applied {
        counted,
        left,
        next,
        committed: Some(committed?),
    })
}

async fn write_stats(
    txn: &impl ConnectionTrait,
    stats: &BTreeMap<(NaiveDate, i64), Visits>,
) -> Result<(), DbErr> {
    let backend = txn.get_database_backend();
    let rows: Vec<_> = stats.iter().collect();
    let now = crate::db::now();
    let tail = add_on_conflict(
        backend,
        "visit_statistics",
        "stat_date, url_map_id",
        &["pv", "uv", "ip_count", "effective", "ineffective"],
    );
    for chunk in rows.chunks(400) {
        let sql = format!(
            "INSERT INTO visit_statistics \
             (stat_date, url_map_id, pv, uv, ip_count, effective, ineffective, updated_at) \
             VALUES {} {tail}",
            vec!["(?, ?, ?, ?, ?, ?, ?, ?)"; chunk.len()].join(", ")
        );
        let mut values = Vec::with_capacity(chunk.len() * 8);
        for ((day, link), v) in chunk {
            values.extend([
                Value::from(*day),
                Value::from(*link),
                Value::from(v.pv),
                Value::from(v.uv),
                Value::from(v.ip),
                Value::from(v.effective),
                Value::from(v.ineffective),
                Value::from(now),
            ]);
        }
        txn.execute_raw(statement(backend, &sql, values)).await?;
    }
    Ok(())
}

/// Writes a turn's breakdown: the links' days packed, with their packs of day sets
/// (`stats::dayvalues`), the all-links rows a row per value.
async fn write_breakdown(
    txn: &impl ConnectionTrait,
    breakdown: &Breakdown,
    packs: Vec<super::daysets::PackRow>,
) -> Result<(), DbErr> {
    let backend = txn.get_database_backend();
    let (mut rows, links): (Vec<_>, Vec<_>) =
        (breakdown.rows()).partition(|((_, link, _, _), _)| *link == ALL_LINKS);
    super::dayvalues::add(txn, links, packs).await?;
    // In key order, so that two writers never wait for each other's rows in a circle.
    rows.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let tail = add_on_conflict(
        backend,
        "visit_statistics_breakdown",
        "stat_date, url_map_id, dimension, value",
        &["pv", "uv"],
    );
    for chunk in rows.chunks(500) {
        let sql = format!(
            "INSERT INTO visit_statistics_breakdown (stat_date, url_map_id, dimension, value, pv, uv) \
             VALUES {} {tail}",
            vec!["(?, ?, ?, ?, ?, ?)"; chunk.len()].join(", ")
        );
        let mut values = Vec::with_capacity(chunk.len() * 6);
        for ((day, link, dimension, value), (pv, uv)) in chunk {
            values.extend([
                Value::from(*day),
                Value::from(*link),
                Value::from(dimension.name()),
                Value::from(&***value),
                Value::from(*pv),
                Value::from(*uv),
            ]);
        }
        txn.execute_raw(statement(backend, &sql, values)).await?;
    }
    Ok(())
}
