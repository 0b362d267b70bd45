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
//! databases.
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

mod work;

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
}

/// Counts up to `limit` waiting events; returns how many it counted (0: none was waiting).
pub async fn tally(db: &DatabaseConnection, tz: Tz, limit: u64) -> Result<u64, DbErr> {
    Ok(tally_counted(db, tz, limit).await?.clicks)
}

/// [`tally`], telling also how many links' days the turn touched.
pub async fn tally_counted(db: &DatabaseConnection, tz: Tz, limit: u64) -> Result<Counted, DbErr> {
    tally_remembering(db, tz, limit, &mut Remembered::default()).await
}

/// [`tally_counted`] by a counting thread that keeps the day sets its last turn left in
/// `remembered`, for the next (see [`Remembered`]).
pub async fn tally_remembering(
    db: &DatabaseConnection,
    tz: Tz,
    limit: u64,
    remembered: &mut Remembered,
) -> Result<Counted, DbErr> {
    // On SQLite a turn holds the write lock the click writer needs from its first statement
    // on. Its clicks are read and worked out before, in a read transaction (WAL lets the
    // writer store meanwhile); the turn then checks that nothing it read has changed, and
    // only writes. PostgreSQL and MySQL lock rows, and the writer stores while a turn runs.
    let ahead = match db.get_database_backend() {
        DbBackend::Sqlite => work_out_ahead_remembering(db, tz, limit, remembered).await?,
        _ => None,
    };
    tally_worked_out_remembering(db, tz, limit, ahead, remembered).await
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
    tally_worked_out_remembering(db, tz, limit, ahead, &mut Remembered::default()).await
}

async fn tally_worked_out_remembering(
    db: &DatabaseConnection,
    tz: Tz,
    limit: u64,
    mut ahead: Option<Ahead>,
    remembered: &mut Remembered,
) -> Result<Counted, DbErr> {
    let mut attempt = 0;
    loop {
        let txn = crate::db::begin_write(db).await?;
        let taken = Instant::now();
        let result = tally_in(&txn, tz, limit, ahead.take(), remembered).await;
        match crate::db::finish(txn, result).await {
            Err(err) if crate::db::is_retryable(&err) && attempt < 5 => attempt += 1,
            done => {
                return done.map(|(counted, left)| {
                    // Committed: the sets are what the database holds after this turn.
                    if let Some((turn, sets)) = left {
                        remembered.keep(turn, sets);
                    }
                    Counted {
                        held: taken.elapsed(),
                        ..counted
                    }
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
    let mut remembered = Remembered::default();
    loop {
        let counted = tally_remembering(db, tz, limit, &mut remembered).await?;
        total += counted.clicks;
        if counted.clicks < limit {
            return Ok(total);
        }
        limit = burst_turn(backend, counted);
    }
}

/// Events counted per turn while more are waiting (a burst, a rebuild): the rows a turn writes
/// hardly grow with its clicks (a link's day, its values, its sets are written once a turn),
/// so a backlog is counted in fewer, larger turns. On SQLite a turn holds the write lock the
/// click writer needs, so its turns stay shorter.
fn burst_batch(backend: DbBackend) -> u64 {
    match backend {
        DbBackend::Sqlite => 50_000,
        _ => 100_000,
    }
}

/// Links' days a turn of a burst may touch, about: with clicks spread over many links (every
/// click another link's day), a turn of 50,000 held 120 MB or more while it worked them out
/// (bench/README.md, "Where the memory goes"), for no gain, as each link's day is written for
/// few clicks anyway. Clicks on fewer links than this keep the whole turn.
const BURST_LINK_DAYS: u64 = 10_000;

/// How long a turn may hold SQLite's write lock, about: the click writer and the webhooks'
/// hand-over wait that long to write. Under a load that keeps both cores busy, a turn of
/// 10,000 clicks over 100,000 links held it 1–9 s (counting runs at the background's
/// priority), and both gave up after SQLite's busy timeout (bench/README.md).
const SQLITE_HOLD: Duration = Duration::from_secs(1);

/// The smallest turn on SQLite, however slowly the last one went: each turn also rewrites
/// the day's rows for all links, and turns of 1,000 delivered a webhook burst later.
const SQLITE_MIN_TURN: u64 = 2_000;

/// The next turn of a burst, after one that counted `last`: as many clicks as fall on about
/// [`BURST_LINK_DAYS`] links' days at the last turn's rate, between a quiet turn's [`BATCH`]
/// and [`burst_batch`]. Over 1,000 links, turns of 50,000 instead of 10,000 cost counting
/// 15.9 µs of CPU a click instead of 37.3 on SQLite (bench/README.md). On SQLite, also no
/// more than would hold the write lock for [`SQLITE_HOLD`] at the last turn's pace (and then
/// as few as [`SQLITE_MIN_TURN`]).
pub fn burst_turn(backend: DbBackend, last: Counted) -> u64 {
    let per_link_day = last.clicks as f64 / last.link_days.max(1) as f64;
    let by_link_days = per_link_day * BURST_LINK_DAYS as f64;
    match backend {
        DbBackend::Sqlite => {
            let pace = last.clicks as f64 / last.held.as_secs_f64().max(0.001);
            let by_time = pace * SQLITE_HOLD.as_secs_f64();
            (by_link_days.min(by_time) as u64).clamp(SQLITE_MIN_TURN, burst_batch(backend))
        }
        _ => (by_link_days as u64).clamp(BATCH, burst_batch(backend)),
    }
}

/// The next turn after one that counted `last` and found no more waiting: a quiet turn's
/// [`BATCH`], or on SQLite less, when the last held the write lock longer than [`SQLITE_HOLD`]
/// (a burst's first turns, while the cores are busy).
pub fn quiet_turn(backend: DbBackend, last: Counted) -> u64 {
    match backend {
        DbBackend::Sqlite if last.held > SQLITE_HOLD => burst_turn(backend, last).min(BATCH),
        _ => BATCH,
    }
}

/// Fresh planner statistics of the tables a turn reads and writes, on PostgreSQL (see
/// [`crate::db::sql::refresh_statistics`]).
pub async fn refresh_statistics(db: &DatabaseConnection) -> Result<(), DbErr> {
    // Each turn rewrites the day sets and totals it touches; keys are only ever added.
    let rewritten = [
        "visit_day_bits",
        "visit_statistics",
        "visit_statistics_breakdown",
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

/// The turn last taken (the next one is this plus one).
async fn last_turn(txn: &impl ConnectionTrait) -> Result<i64, DbErr> {
    let backend = txn.get_database_backend();
    let sql = "SELECT taken FROM stats_tally WHERE id = 1";
    match txn.query_one_raw(statement(backend, sql, vec![])).await? {
        Some(row) => row.try_get("", "taken"),
        None => Err(DbErr::Custom("the stats_tally row is missing".into())),
    }
}

/// A turn worked out before it was taken, from what the database held after turn `taken`.
pub struct Ahead {
    taken: i64,
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
    #[expect(
        clippy::disallowed_methods,
        reason = "it only reads, and on SQLite must not hold the write lock while it does"
    )]
    let txn = db.begin().await?;
    let result = async {
        let taken = last_turn(&txn).await?;
        let frozen = purged_before(&txn).await?;
        let clicks = crate::clickstore::waiting::peek_waiting(&txn, limit).await?;
        if clicks.is_empty() {
            return Ok(None);
        }
        let keys = clicks.iter().map(|c| (c.at, c.key.clone())).collect();
        let known = remembered.take_after(taken);
        let work = work_out(&txn, tz, frozen, clicks, known).await?;
        Ok(Some(Ahead {
            taken,
            frozen,
            keys,
            work,
        }))
    }
    .await;
    crate::db::finish(txn, result).await
}

/// A turn: what it counted, and (when they are few enough to keep) the day sets it left, with
/// its number.
async fn tally_in(
    txn: &impl ConnectionTrait,
    tz: Tz,
    limit: u64,
    ahead: Option<Ahead>,
    remembered: &mut Remembered,
) -> Result<(Counted, Left), DbErr> {
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
                return apply(txn, turn, ahead.work).await;
            }
            tracing::debug!(
                "the clicks a counting turn worked out ahead were taken since; it reads the list again"
            );
        }
    }
    let clicks = crate::clickstore::waiting::take_waiting(txn, limit).await?;
    if clicks.is_empty() {
        crate::clickstore::waiting::forget_orphans(txn).await?;
        return Ok((Counted::default(), None));
    }
    let known = remembered.take_after(turn - 1);
    let work = work_out(txn, tz, frozen, clicks, known).await?;
    apply(txn, turn, work).await
}

/// The day sets a turn left, with its number (see [`Remembered`]).
type Left = Option<(
    i64,
    foldhash::HashMap<super::daysets::SetKey, roaring::RoaringBitmap>,
)>;

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

/// Writes what a turn worked out, stamped with the turn.
async fn apply(
    txn: &impl ConnectionTrait,
    turn: i64,
    work: Work,
) -> Result<(Counted, Left), DbErr> {
    work.numbers.store(txn).await?;
    let left = work.sets.store_leaving(txn, turn).await?;
    write_stats(txn, &work.stats).await?;
    // Whatever was counted on a day changed its all-links row: dashboards keeping page views
    // per link of finished days look at these stamps.
    let days = work
        .stats
        .keys()
        .map(|(day, _)| (ALL_LINKS, *day))
        .collect();
    super::daysets::stamp(txn, turn, days).await?;
    write_breakdown(txn, &work.breakdown).await?;
    super::funnel::count_hits(txn, work.hits).await?;
    let link_days = work
        .stats
        .keys()
        .filter(|(_, link)| *link != ALL_LINKS)
        .count() as u64;
    let counted = Counted {
        clicks: work.counted,
        link_days,
        held: Duration::ZERO,
    };
    Ok((counted, left.map(|sets| (turn, sets))))
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

async fn write_breakdown(txn: &impl ConnectionTrait, breakdown: &Breakdown) -> Result<(), DbErr> {
    let backend = txn.get_database_backend();
    // In key order, so that two writers never wait for each other's rows in a circle.
    let mut rows: Vec<_> = breakdown.iter().collect();
    rows.sort_unstable_by(|a, b| a.0.cmp(b.0));
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
                Value::from(&**value),
                Value::from(*pv),
                Value::from(*uv),
            ]);
        }
        txn.execute_raw(statement(backend, &sql, values)).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_spread_over_many_links_is_counted_in_smaller_turns() {
        // Turns that held the lock for a tenth of a second.
        let turn = |clicks, link_days| Counted {
            clicks,
            link_days,
            held: Duration::from_millis(100),
        };
        // Every click another link's day: turns of about 10,000 links' days.
        assert_eq!(burst_turn(DbBackend::Sqlite, turn(50_000, 50_000)), 10_000);
        assert_eq!(burst_turn(DbBackend::Sqlite, turn(20_000, 10_000)), 20_000);
        // Clicks on a few links: the whole turn.
        assert_eq!(burst_turn(DbBackend::Sqlite, turn(50_000, 1_000)), 50_000);
        assert_eq!(burst_turn(DbBackend::Postgres, turn(100_000, 30)), 100_000);
        assert_eq!(burst_turn(DbBackend::MySql, turn(100_000, 0)), 100_000);
        // Never below a quiet turn, on PostgreSQL and MySQL.
        assert_eq!(burst_turn(DbBackend::Postgres, turn(10_000, 90_000)), BATCH);
        assert_eq!(burst_turn(DbBackend::MySql, turn(10_000, 90_000)), BATCH);
    }

    #[test]
    fn a_turn_that_held_sqlites_write_lock_long_makes_the_next_smaller() {
        let turn = |clicks, millis| Counted {
            clicks,
            link_days: clicks / 10,
            held: Duration::from_millis(millis),
        };
        // 10,000 clicks in 4 s: the next turn holds the lock about a second.
        assert_eq!(burst_turn(DbBackend::Sqlite, turn(10_000, 4_000)), 2_500);
        // Slower still: no smaller than SQLITE_MIN_TURN.
        assert_eq!(
            burst_turn(DbBackend::Sqlite, turn(10_000, 60_000)),
            SQLITE_MIN_TURN
        );
        // Quick turns grow again, up to the link-days' bound.
        assert_eq!(burst_turn(DbBackend::Sqlite, turn(2_500, 100)), 25_000);
        assert_eq!(burst_turn(DbBackend::Sqlite, turn(2_500, 10)), 50_000);
        // After a turn that found no more waiting: a quiet turn, unless it held the lock long.
        assert_eq!(quiet_turn(DbBackend::Sqlite, turn(9_000, 9_000)), 2_000);
        assert_eq!(quiet_turn(DbBackend::Sqlite, turn(9_000, 900)), BATCH);
        assert_eq!(quiet_turn(DbBackend::Postgres, turn(9_000, 9_000)), BATCH);
        // PostgreSQL and MySQL lock rows: how long a turn took does not matter.
        assert_eq!(
            burst_turn(DbBackend::Postgres, turn(10_000, 60_000)),
            100_000
        );
        assert_eq!(burst_turn(DbBackend::MySql, turn(10_000, 60_000)), 100_000);
    }
}
