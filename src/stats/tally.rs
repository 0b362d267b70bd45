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

use super::days::{day_start, local_day};
use super::daysets::{ADDRESSES, DaySets, NewNumbers, SetKey, VISITORS};
use super::dimension::{ALL_LINKS, Dimension, UNKNOWN_LINK};
use super::frozen::purged_before;
use super::visits::Visits;
use crate::clickstore::insert::from_micros;
use crate::clickstore::row::Text;
use crate::clickstore::row::{Address, Digest};
use crate::clickstore::waiting::{Meanings, Waiting};
use crate::db::sql::{add_on_conflict, statement};
use chrono::{NaiveDate, NaiveDateTime};
use chrono_tz::Tz;
use sea_orm::sea_query::Value;
use sea_orm::{ConnectionTrait, DatabaseConnection, DbBackend, DbErr, TransactionTrait};
use std::collections::{BTreeMap, HashMap, HashSet};

/// Events counted per transaction at most: the more a batch holds, the more of its clicks add
/// to the same rows (a link's day, its browsers, …), which are written once; the fewer, the
/// shorter the click writer waits for it (on SQLite counting holds the write lock).
pub const BATCH: u64 = 10_000;

/// Distinct values a day keeps per link for a dimension visitors choose themselves (the
/// referrer and the query parameters): later ones are counted together as [`OTHER`], so that
/// nobody can grow the statistics without bound by inventing values.
pub const MAX_VALUES: usize = 200;
pub const OTHER: &str = "(other)";

/// Longest value of a query parameter kept, in characters.
const MAX_QUERY_VALUE: usize = 64;

/// One stored event, as counting needs it.
struct Seen {
    day: NaiveDate,
    link: i64,
    success: bool,
    view: bool,
    visitor: Option<Text>,
    address: Option<Text>,
    /// The numbers of the visitor and the address (for page views), once they are known.
    numbers: (Option<u32>, Option<u32>),
    /// Dimension and value, for page views.
    values: Vec<(Dimension, Text)>,
}

/// What a turn counted: its clicks, and the links' days they fell on. A turn holds in memory,
/// and writes, a row per link's day, rows for its values and the visitor sets of each: with
/// clicks spread over many links this grows with the clicks, with clicks on a few links it
/// hardly grows at all.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counted {
    pub clicks: u64,
    pub link_days: u64,
}

/// Counts up to `limit` waiting events; returns how many it counted (0: none was waiting).
pub async fn tally(db: &DatabaseConnection, tz: Tz, limit: u64) -> Result<u64, DbErr> {
    Ok(tally_counted(db, tz, limit).await?.clicks)
}

/// [`tally`], telling also how many links' days the turn touched.
pub async fn tally_counted(db: &DatabaseConnection, tz: Tz, limit: u64) -> Result<Counted, DbErr> {
    // On SQLite a turn holds the write lock the click writer needs from its first statement
    // on. Its clicks are read and worked out before, in a read transaction (WAL lets the
    // writer store meanwhile); the turn then checks that nothing it read has changed, and
    // only writes. PostgreSQL and MySQL lock rows, and the writer stores while a turn runs.
    let ahead = match db.get_database_backend() {
        DbBackend::Sqlite => work_out_ahead(db, tz, limit).await?,
        _ => None,
    };
    tally_worked_out(db, tz, limit, ahead).await
}

/// Takes a counting turn that counts what `ahead` worked out if nothing it read has changed
/// since, and up to `limit` waiting events otherwise; returns what it counted. [`tally`]
/// is [`work_out_ahead`] and this; the tests call the two apart to change the database in
/// between.
pub async fn tally_worked_out(
    db: &DatabaseConnection,
    tz: Tz,
    limit: u64,
    mut ahead: Option<Ahead>,
) -> Result<Counted, DbErr> {
    let mut attempt = 0;
    loop {
        let txn = crate::db::begin_write(db).await?;
        let result = tally_in(&txn, tz, limit, ahead.take()).await;
        match crate::db::finish(txn, result).await {
            Err(err) if crate::db::is_retryable(&err) && attempt < 5 => attempt += 1,
            done => return done,
        }
    }
}

/// Counts every event waiting; returns how many.
pub async fn drain(db: &DatabaseConnection, tz: Tz) -> Result<u64, DbErr> {
    let mut total = 0;
    loop {
        let counted = tally(db, tz, BATCH).await?;
        total += counted;
        if counted < BATCH {
            return Ok(total);
        }
    }
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

/// The values of dictionary row `id` (none for a click without one).
fn meaning<const N: usize>(
    rows: &HashMap<i32, [Option<Text>; N]>,
    id: Option<i32>,
) -> [Option<Text>; N] {
    id.and_then(|id| rows.get(&id))
        .cloned()
        .unwrap_or_else(|| std::array::from_fn(|_| None))
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
        let work = work_out(&txn, tz, frozen, clicks).await?;
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

async fn tally_in(
    txn: &impl ConnectionTrait,
    tz: Tz,
    limit: u64,
    ahead: Option<Ahead>,
) -> Result<Counted, DbErr> {
    let turn = take_turn(txn).await?;
    let frozen = purged_before(txn).await?;
    let outgoing = crate::clickstore::outgoing::wanted(txn).await?;
    if let Some(ahead) = ahead {
        // Everything a turn reads besides the waiting list is written only by turns (and a
        // purge's boundary): when no turn came between, and the list's front is still the
        // clicks read, the work stands.
        if ahead.taken + 1 == turn
            && ahead.frozen == frozen
            && crate::clickstore::waiting::take_front(txn, &ahead.keys).await?
        {
            if outgoing {
                crate::clickstore::outgoing::hand_on(txn, &ahead.keys).await?;
            }
            return apply(txn, turn, ahead.work).await;
        }
    }
    let clicks = crate::clickstore::waiting::take_waiting(txn, limit).await?;
    if clicks.is_empty() {
        crate::clickstore::waiting::forget_orphans(txn).await?;
        return Ok(Counted::default());
    }
    // Webhook subscriptions get the clicks counted, each once, from this transaction.
    if outgoing {
        let keys: Vec<(i64, Vec<u8>)> = clicks.iter().map(|c| (c.at, c.key.clone())).collect();
        crate::clickstore::outgoing::hand_on(txn, &keys).await?;
    }
    let work = work_out(txn, tz, frozen, clicks).await?;
    apply(txn, turn, work).await
}

/// What a turn writes, worked out from its clicks and what counting has stored so far.
/// The values each link's day already has, per capped dimension.
type Known = foldhash::HashMap<(NaiveDate, i64, Dimension), HashSet<Text>>;

struct Work {
    counted: u64,
    numbers: NewNumbers,
    sets: DaySets,
    stats: BTreeMap<(NaiveDate, i64), Visits>,
    breakdown: Breakdown,
    /// Page views that may be campaign recipients' (see `funnel`).
    hits: Vec<super::funnel::Hit>,
}

/// Writes what a turn worked out, stamped with the turn.
async fn apply(txn: &impl ConnectionTrait, turn: i64, work: Work) -> Result<Counted, DbErr> {
    work.numbers.store(txn).await?;
    work.sets.store(txn, turn).await?;
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
    Ok(Counted {
        clicks: work.counted,
        link_days,
    })
}

/// Works out what counting `clicks` adds; reads only. Days before `frozen` (their events
/// were purged) are not counted.
async fn work_out(
    txn: &impl ConnectionTrait,
    tz: Tz,
    frozen: Option<NaiveDate>,
    clicks: Vec<Waiting>,
) -> Result<Work, DbErr> {
    let meanings = crate::clickstore::waiting::meanings(txn, &clicks).await?;
    let hits = super::funnel::find_hits(txn, &clicks, &meanings).await?;
    // The values many clicks share are shared, not copied.
    let empty = Text::from("");
    let total = clicks.len() as u64;
    let targets = target_campaigns(txn, &clicks).await?;
    let mut seen = see(clicks, &meanings, &targets, tz, &empty);
    // Days whose events were purged keep the rows they had: their late events are not counted.
    seen.retain(|s| frozen.is_none_or(|frozen| s.day >= frozen));
    let known = known_values(txn, &seen).await?;
    cap_values(&mut seen, known);
    let numbers = number_visitors(txn, &mut seen).await?;
    let mut keys: foldhash::HashSet<SetKey> = foldhash::HashSet::default();
    for s in seen.iter().filter(|s| s.view) {
        for scope in [s.link, ALL_LINKS] {
            keys.extend(members(s, scope, &empty).into_iter().map(|(_, key, _)| key));
        }
    }
    let mut sets = DaySets::load(txn, keys).await?;
    let (stats, breakdown) = add_up(&seen, &mut sets, &empty);
    Ok(Work {
        counted: total,
        numbers,
        sets,
        stats,
        breakdown,
        hits,
    })
}

/// The campaign parameters (`utm_*`, `channel`) of each clicked link's target URL, as the UTM
/// builder writes them into it.
type TargetCampaigns = HashMap<i64, Vec<(Dimension, Text)>>;

/// Reads the targets of the links `clicks` are of, and their campaign parameters.
async fn target_campaigns(
    txn: &impl ConnectionTrait,
    clicks: &[Waiting],
) -> Result<TargetCampaigns, DbErr> {
    let backend = txn.get_database_backend();
    let links: Vec<i64> = clicks
        .iter()
        .filter_map(|c| c.link)
        .collect::<HashSet<_>>()
        .into_iter()
        .collect();
    let mut out = TargetCampaigns::new();
    for chunk in links.chunks(500) {
        let sql = format!(
            "SELECT id, long_url FROM url_map WHERE id IN ({})",
            vec!["?"; chunk.len()].join(", ")
        );
        let values = chunk.iter().map(|id| Value::from(*id)).collect();
        for row in txn.query_all_raw(statement(backend, &sql, values)).await? {
            let id: i64 = row.try_get("", "id")?;
            let url: String = row.try_get("", "long_url")?;
            let query = url.split_once('?').map_or("", |(_, q)| q);
            let query = query.split_once('#').map_or(query, |(q, _)| q);
            let found = query_values(query);
            if !found.is_empty() {
                out.insert(
                    id,
                    found.into_iter().map(|(d, v)| (d, Text::from(v))).collect(),
                );
            }
        }
    }
    Ok(out)
}

/// Each click as counting sees it: its day, whether it is a page view, and the values of
/// its dimensions. A campaign parameter comes from the link's target URL (what the UTM builder
/// wrote), else from the query the visitor's short URL carried (`/abc?utm_medium=moments`):
/// the rule by which the redirect merges the two, so that inklink counts what the landing
/// page is told.
fn see(
    clicks: Vec<Waiting>,
    meanings: &Meanings,
    targets: &TargetCampaigns,
    tz: Tz,
    empty: &Text,
) -> Vec<Seen> {
    let mut starts: HashMap<NaiveDate, Option<NaiveDateTime>> = HashMap::new();
    let mut queries: HashMap<i32, Vec<(Dimension, Text)>> = HashMap::new();
    let hours: Vec<Text> = (0..100).map(|h| Text::from(format!("{h:02}"))).collect();
    let mut seen = Vec::with_capacity(clicks.len());
    for click in clicks {
        let at = from_micros(click.at);
        let day = local_day(at, tz);
        let success = meaning(&meanings.outcomes, Some(click.outcome))[0]
            .as_deref()
            .is_some_and(|status| status == "success");
        let view = success && !click.bot;
        let mut values: Vec<(Dimension, Text)> = Vec::new();
        if view {
            let [country, province, city, carrier] = meaning(&meanings.places, click.place);
            let [browser, os, device] = meaning(&meanings.agents, click.agent);
            let [referrer] = meaning(&meanings.referers, click.referer);
            for (dimension, value) in [
                (Dimension::Country, country),
                (Dimension::Province, province),
                (Dimension::City, city),
                (Dimension::Carrier, carrier),
                (Dimension::Browser, browser),
                (Dimension::Os, os),
                (Dimension::Device, device),
                (Dimension::Referrer, referrer),
            ] {
                values.push((dimension, value.unwrap_or_else(|| empty.clone())));
            }
            // The local hour since the day began (on a day the clocks change, hours after the
            // change are counted from midnight).
            let start = *starts.entry(day).or_insert_with(|| day_start(day, tz));
            let hour = start.map_or(0, |start| (at - start).num_hours().clamp(0, 99));
            values.push((Dimension::Hour, hours[hour as usize].clone()));
            let target = click.link.and_then(|link| targets.get(&link));
            values.extend(target.into_iter().flatten().cloned());
            if let Some(id) = click.query {
                let parsed = queries.entry(id).or_insert_with(|| {
                    let [query] = meaning(&meanings.queries, Some(id));
                    query_values(query.as_deref().unwrap_or_default())
                        .into_iter()
                        .map(|(dimension, value)| (dimension, Text::from(value)))
                        .collect()
                });
                for (dimension, value) in parsed.iter() {
                    if !target.is_some_and(|t| t.iter().any(|(d, _)| d == dimension)) {
                        values.push((*dimension, value.clone()));
                    }
                }
            }
        }
        seen.push(Seen {
            day,
            link: click.link.unwrap_or(UNKNOWN_LINK),
            success,
            view,
            visitor: (click
                .visitor
                .as_deref()
                .map(|v| Digest::stored(v).to_string()))
            .filter(|v| !v.is_empty())
            .map(Text::from),
            address: Some(Address::stored(&click.ip).to_string())
                .filter(|v| !v.is_empty())
                .map(Text::from),
            numbers: (None, None),
            values,
        });
    }
    seen
}

/// Values a visitor chooses beyond a link's day's first [`MAX_VALUES`] count as [`OTHER`].
fn cap_values(seen: &mut [Seen], mut known: Known) {
    for s in seen {
        for (dimension, value) in &mut s.values {
            if !dimension.is_capped() {
                continue;
            }
            // The cap is the link's own (the all-links row follows the link's decision, so
            // that both count the same visits under the same value).
            let values = known.entry((s.day, s.link, *dimension)).or_default();
            if !values.contains(&**value) {
                if values.len() < MAX_VALUES {
                    values.insert(value.clone());
                } else {
                    *value = Text::from(OTHER);
                }
            }
        }
    }
}

/// Gives the page views' visitors and addresses their numbers in the day sets; returns the
/// numbers given for the first time.
async fn number_visitors(
    txn: &impl ConnectionTrait,
    seen: &mut [Seen],
) -> Result<NewNumbers, DbErr> {
    let mut who: foldhash::HashSet<(&'static str, Text)> = foldhash::HashSet::default();
    for s in seen.iter().filter(|s| s.view) {
        who.extend(s.visitor.iter().map(|v| (VISITORS, v.clone())));
        who.extend(s.address.iter().map(|a| (ADDRESSES, a.clone())));
    }
    let (numbers, new_numbers) = super::daysets::look_up_numbers(txn, who).await?;
    for s in seen.iter_mut().filter(|s| s.view) {
        let number = |kind: &'static str, who: &Option<Text>| {
            who.as_ref()
                .and_then(|who| numbers.get(&(kind, who.clone())).copied())
        };
        s.numbers = (number(VISITORS, &s.visitor), number(ADDRESSES, &s.address));
    }
    Ok(new_numbers)
}

/// The day rows and breakdown rows the clicks add, each visitor, address and value new to
/// its day's set counted once.
fn add_up(
    seen: &[Seen],
    sets: &mut DaySets,
    empty: &Text,
) -> (BTreeMap<(NaiveDate, i64), Visits>, Breakdown) {
    let mut stats: BTreeMap<(NaiveDate, i64), Visits> = BTreeMap::new();
    let mut breakdown: Breakdown = Breakdown::default();
    for s in seen {
        for scope in [s.link, ALL_LINKS] {
            let day = stats.entry((s.day, scope)).or_default();
            match s.success {
                true => day.effective += 1,
                false => day.ineffective += 1,
            }
            if !s.view {
                continue;
            }
            day.pv += 1;
            let mut new_visitor = false;
            let mut new_value: Vec<(Dimension, bool)> = Vec::new();
            for (what, key, number) in members(s, scope, empty) {
                let new = sets.insert(&key, number);
                match what {
                    Role::Visitor => {
                        new_visitor = new;
                        day.uv += i64::from(new);
                    }
                    Role::Address => day.ip += i64::from(new),
                    Role::Value(dimension) => new_value.push((dimension, new)),
                }
            }
            for (dimension, value) in &s.values {
                let new = new_value
                    .iter()
                    .find(|(d, _)| d == dimension)
                    .map_or(new_visitor, |(_, new)| *new);
                let entry = breakdown
                    .entry((s.day, scope, *dimension, value.clone()))
                    .or_default();
                entry.0 += 1;
                entry.1 += i64::from(new);
            }
        }
    }
    (stats, breakdown)
}

/// What a member of a day's set stands for.
enum Role {
    Visitor,
    Address,
    Value(Dimension),
}

/// The sets of `scope` a page view belongs to, with the number it is there by (`empty`: the
/// value of the visitors' and addresses' sets).
fn members(s: &Seen, scope: i64, empty: &Text) -> Vec<(Role, SetKey, u32)> {
    let mut out = Vec::new();
    if let Some(visitor) = s.numbers.0 {
        out.push((
            Role::Visitor,
            (s.day, scope, VISITORS, empty.clone()),
            visitor,
        ));
        for (dimension, value) in &s.values {
            if let Some(kind) = dimension.set_kind() {
                let key = (s.day, scope, kind, value.clone());
                out.push((Role::Value(*dimension), key, visitor));
            }
        }
    }
    if let Some(address) = s.numbers.1 {
        out.push((
            Role::Address,
            (s.day, scope, ADDRESSES, empty.clone()),
            address,
        ));
    }
    out
}

/// `utm_source`, `utm_medium`, `utm_campaign` and `channel` of a query string: the first of
/// each, decoded, trimmed and clipped; absent ones give no value.
pub fn query_values(query: &str) -> Vec<(Dimension, String)> {
    let mut out: Vec<(Dimension, String)> = Vec::new();
    for (name, value) in url::form_urlencoded::parse(query.as_bytes()) {
        let Some(dimension) = Dimension::QUERY.into_iter().find(|d| d.name() == name) else {
            continue;
        };
        // Visitors choose these: control characters (a NUL, which PostgreSQL text cannot
        // hold, would fail every counting turn) are dropped.
        let value: String = value
            .chars()
            .filter(|c| !c.is_control())
            .collect::<String>()
            .trim()
            .chars()
            .take(MAX_QUERY_VALUE)
            .collect();
        if value.is_empty() || out.iter().any(|(d, _)| *d == dimension) {
            continue;
        }
        out.push((dimension, value));
    }
    out
}

/// The values already stored for the capped dimensions of the days and links in `seen`.
async fn known_values(txn: &impl ConnectionTrait, seen: &[Seen]) -> Result<Known, DbErr> {
    let backend = txn.get_database_backend();
    let mut keys: BTreeMap<NaiveDate, HashSet<i64>> = BTreeMap::new();
    for s in seen.iter().filter(|s| s.view) {
        keys.entry(s.day).or_default().insert(s.link);
    }
    let dimensions: Vec<Dimension> = std::iter::once(Dimension::Referrer)
        .chain(Dimension::QUERY)
        .collect();
    let mut out: foldhash::HashMap<(NaiveDate, i64, Dimension), HashSet<Text>> =
        foldhash::HashMap::default();
    for (day, links) in keys {
        let links: Vec<i64> = links.into_iter().collect();
        for chunk in links.chunks(500) {
            let sql = format!(
                "SELECT url_map_id, dimension, value FROM visit_statistics_breakdown \
                 WHERE stat_date = ? AND dimension IN ({}) AND url_map_id IN ({})",
                vec!["?"; dimensions.len()].join(", "),
                vec!["?"; chunk.len()].join(", ")
            );
            let mut values = vec![Value::from(day)];
            values.extend(dimensions.iter().map(|d| Value::from(d.name())));
            values.extend(chunk.iter().map(|id| Value::from(*id)));
            for row in txn.query_all_raw(statement(backend, &sql, values)).await? {
                let link: i64 = row.try_get("", "url_map_id")?;
                let dimension: String = row.try_get("", "dimension")?;
                let Some(dimension) = Dimension::from_name(&dimension) else {
                    continue;
                };
                let value: String = row.try_get("", "value")?;
                out.entry((day, link, dimension))
                    .or_default()
                    .insert(value.into());
            }
        }
    }
    Ok(out)
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

/// PV and UV a turn adds, per day, link (or all links), dimension and value.
type Breakdown = foldhash::HashMap<(NaiveDate, i64, Dimension, Text), (i64, i64)>;

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
    fn query_parameters_give_the_campaign_values() {
        assert_eq!(
            query_values(
                "a=1&utm_source=%E5%BE%AE%E4%BF%A1&utm_medium=sms&utm_source=x&channel=+ad+"
            ),
            vec![
                (Dimension::UtmSource, "微信".to_owned()),
                (Dimension::UtmMedium, "sms".to_owned()),
                (Dimension::Channel, "ad".to_owned()),
            ]
        );
        assert!(query_values("utm_campaign=").is_empty());
        assert!(query_values("utm_campaign=%00%0A").is_empty());
        assert_eq!(query_values("channel=%09a%00b%7F")[0].1, "ab");
        assert_eq!(
            query_values(&format!("channel={}", "x".repeat(100)))[0]
                .1
                .len(),
            64
        );
    }
}
