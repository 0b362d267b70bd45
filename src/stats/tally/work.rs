//! Working out a turn: what its clicks add to the daily rows, the breakdowns and the visitor
//! sets, read from the database without writing anything (`super` takes the turn and writes).

use super::{MAX_VALUES, OTHER};
use crate::clickstore::insert::from_micros;
use crate::clickstore::row::Text;
use crate::clickstore::row::{Address, Digest};
use crate::clickstore::waiting::{Meanings, Waiting};
use crate::db::sql::each_row_in;
use crate::stats::days::{day_start, local_day};
use crate::stats::daysets::numbers::{ADDRESSES, Handed, NewNumbers, VISITORS, Who};
use crate::stats::daysets::{DaySets, Left, SetKey, Settled};
use crate::stats::dimension::{ALL_LINKS, Dimension, UNKNOWN_LINK};
use crate::stats::visits::Visits;
use chrono::{NaiveDate, NaiveDateTime};
use chrono_tz::Tz;
use sea_orm::{ConnectionTrait, DbErr};
use std::collections::{BTreeMap, HashMap, HashSet};

/// Longest value of a query parameter kept, in characters.
const MAX_QUERY_VALUE: usize = 64;

/// One stored event, as counting needs it.
struct Seen {
    day: NaiveDate,
    link: i64,
    success: bool,
    view: bool,
    /// The visitor and the address of a page view (none for other events).
    visitor: Option<Who>,
    address: Option<Who>,
    /// The numbers of the visitor and the address (for page views), once they are known.
    numbers: (Option<u32>, Option<u32>),
    /// Dimension and value (see [`Values`]), for page views.
    values: Vec<(Dimension, u32)>,
}

/// The texts of a turn's values, each once, by number. The breakdown rows and the day sets
/// of a turn are looked up by day, link, dimension and value for every page view: by the
/// value's number, that hashes a few integers, where by its text it hashed and compared the
/// text and counted its references up and down (most of the time a turn spent adding up,
/// bench/README.md).
#[derive(Default)]
pub(super) struct Values {
    by_text: foldhash::HashMap<Text, u32>,
    texts: Vec<Text>,
}

/// The number of the empty value (see [`Values::new`]).
const EMPTY: u32 = 0;

impl Values {
    fn new() -> Self {
        let mut values = Values::default();
        values.number(&Text::from(""));
        values
    }

    fn number(&mut self, text: &Text) -> u32 {
        if let Some(number) = self.by_text.get(text) {
            return *number;
        }
        let number = self.texts.len() as u32;
        self.texts.push(text.clone());
        self.by_text.insert(text.clone(), number);
        number
    }

    fn text(&self, number: u32) -> &Text {
        &self.texts[number as usize]
    }
}

/// The numbers of the values of dictionary row `id` (empty ones for a click without one),
/// each row's looked up once a turn.
fn numbered<const N: usize>(
    rows: &HashMap<i32, [Option<Text>; N]>,
    done: &mut HashMap<i32, [u32; N]>,
    values: &mut Values,
    id: Option<i32>,
) -> [u32; N] {
    let Some(id) = id else {
        return [EMPTY; N];
    };
    *done.entry(id).or_insert_with(|| match rows.get(&id) {
        Some(texts) => texts
            .each_ref()
            .map(|text| text.as_ref().map_or(EMPTY, |text| values.number(text))),
        None => [EMPTY; N],
    })
}

/// The values each link's day already has, per capped dimension (see [`Values`]).
type Known = foldhash::HashMap<(NaiveDate, i64, Dimension), HashSet<u32>>;

/// What a turn writes, worked out from its clicks and what counting has stored so far.
pub(super) struct Work {
    pub(super) counted: u64,
    pub(super) numbers: NewNumbers,
    pub(super) sets: Settled,
    pub(super) stats: BTreeMap<(NaiveDate, i64), Visits>,
    pub(super) breakdown: Breakdown,
    /// Page views that may be campaign recipients' (see `funnel`).
    pub(super) hits: Vec<crate::stats::funnel::Hit>,
}

/// What a turn is worked out from besides what it reads: the day sets known to be stored (see
/// `Remembered`), and what the turn before it writes when it is worked out before that one has
/// committed (see `Carry`).
#[derive(Default)]
pub(super) struct Before {
    pub(super) sets: Left,
    pub(super) handed: Handed,
    pub(super) values: Vec<CappedValue>,
}

impl Before {
    pub(super) fn stored(sets: Left) -> Self {
        Before {
            sets,
            ..Default::default()
        }
    }
}

/// A value of a capped dimension a link's day has: day, link, dimension, value.
pub(super) type CappedValue = (NaiveDate, i64, Dimension, Text);

/// The values of capped dimensions that `breakdown` gives the links' days (as
/// [`known_values`] reads them once it is stored).
pub(super) fn capped_values(breakdown: &Breakdown) -> Vec<CappedValue> {
    (breakdown.rows())
        .filter(|((_, link, dimension, _), _)| *link != ALL_LINKS && dimension.is_capped())
        .map(|((day, link, dimension, value), _)| (day, link, dimension, value.clone()))
        .collect()
}

/// Works out what counting `clicks` adds; reads only. Days before `frozen` (their events
/// were purged) are not counted.
pub(super) async fn work_out(
    txn: &impl ConnectionTrait,
    tz: Tz,
    frozen: Option<NaiveDate>,
    clicks: Vec<Waiting>,
    before: Before,
) -> Result<Work, DbErr> {
    read(txn, tz, frozen, clicks, before).await?.work_out()
}

/// What working out a turn needs from the database, read.
pub(super) struct Read {
    total: u64,
    seen: Vec<Seen>,
    values: Values,
    numbers: NewNumbers,
    sets: DaySets,
    /// Each set the page views belong to, by its place in `sets`.
    places: foldhash::HashMap<SetOf, usize>,
    hits: Vec<crate::stats::funnel::Hit>,
}

/// Reads what working out what counting `clicks` adds needs (see [`work_out`]).
pub(super) async fn read(
    txn: &impl ConnectionTrait,
    tz: Tz,
    frozen: Option<NaiveDate>,
    clicks: Vec<Waiting>,
    before: Before,
) -> Result<Read, DbErr> {
    let meanings = crate::clickstore::waiting::meanings(txn, &clicks).await?;
    let hits = crate::stats::funnel::find_hits(txn, &clicks, &meanings).await?;
    let mut values = Values::new();
    let total = clicks.len() as u64;
    let targets = target_campaigns(txn, &clicks, &mut values).await?;
    let mut seen = see(clicks, &meanings, &targets, tz, &mut values);
    // Days whose events were purged keep the rows they had: their late events are not counted.
    seen.retain(|s| frozen.is_none_or(|frozen| s.day >= frozen));
    let known = known_values(txn, &seen, before.values, &mut values).await?;
    cap_values(&mut seen, known, values.number(&Text::from(OTHER)));
    let numbers = number_visitors(txn, &mut seen, &before.handed).await?;
    // Each set the page views belong to, once, by its place in the sets loaded.
    let mut places: foldhash::HashMap<SetOf, usize> = foldhash::HashMap::default();
    let mut keys: Vec<SetKey> = Vec::new();
    for s in seen.iter().filter(|s| s.view) {
        for scope in [s.link, ALL_LINKS] {
            members(s, scope, |set, _| {
                places.entry(set).or_insert_with(|| {
                    keys.push(set.key(&values));
                    keys.len() - 1
                });
            });
        }
    }
    let sets = DaySets::load_knowing(txn, keys, before.sets).await?;
    Ok(Read {
        total,
        seen,
        values,
        numbers,
        sets,
        places,
        hits,
    })
}

impl Read {
    /// Works out what the turn writes from what it read, without the database: a turn worked
    /// out ahead has ended its read before this, so that SQLite can checkpoint its log
    /// meanwhile (see `super::apply`).
    pub(super) fn work_out(self) -> Result<Work, DbErr> {
        let Read {
            total,
            seen,
            values,
            numbers,
            mut sets,
            places,
            hits,
        } = self;
        let (stats, rows) = add_up(&seen, &mut sets, &places);
        Ok(Work {
            counted: total,
            numbers,
            // Joined and serialized here, before the turn takes the lock it writes them under.
            sets: sets.settle()?,
            stats,
            breakdown: Breakdown { rows, values },
            hits,
        })
    }
}

/// The campaign parameters (`utm_*`, `channel`) of each clicked link's target URL, as the UTM
/// builder writes them into it (values numbered, see [`Values`]).
type TargetCampaigns = HashMap<i64, Vec<(Dimension, u32)>>;

/// Reads the targets of the links `clicks` are of, and their campaign parameters.
async fn target_campaigns(
    txn: &impl ConnectionTrait,
    clicks: &[Waiting],
    numbering: &mut Values,
) -> Result<TargetCampaigns, DbErr> {
    let links: Vec<i64> = clicks
        .iter()
        .filter_map(|c| c.link)
        .collect::<HashSet<_>>()
        .into_iter()
        .collect();
    let mut out = TargetCampaigns::new();
    let select = "SELECT id, long_url FROM url_map WHERE id";
    each_row_in(txn, (select, &links), ("", &[]), |row| {
        let id: i64 = row.try_get("", "id")?;
        let url: String = row.try_get("", "long_url")?;
        let query = url.split_once('?').map_or("", |(_, q)| q);
        let query = query.split_once('#').map_or(query, |(q, _)| q);
        let found = query_values(query);
        if !found.is_empty() {
            let found = found.into_iter();
            out.insert(
                id,
                found
                    .map(|(d, v)| (d, numbering.number(&v.into())))
                    .collect(),
            );
        }
        Ok(())
    })
    .await?;
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
    numbering: &mut Values,
) -> Vec<Seen> {
    let mut starts: HashMap<NaiveDate, Option<NaiveDateTime>> = HashMap::new();
    let mut queries: HashMap<i32, Vec<(Dimension, u32)>> = HashMap::new();
    let mut successes: HashMap<i32, bool> = HashMap::new();
    let (mut places, mut agents, mut referers) = Default::default();
    let hours: Vec<u32> = (0..100)
        .map(|h| numbering.number(&Text::from(format!("{h:02}"))))
        .collect();
    let mut seen = Vec::with_capacity(clicks.len());
    for click in clicks {
        let at = from_micros(click.at);
        let day = local_day(at, tz);
        let success = *successes.entry(click.outcome).or_insert_with(|| {
            (meanings.outcomes.get(&click.outcome))
                .and_then(|[status]| status.as_deref())
                .is_some_and(|status| status == "success")
        });
        let view = success && !click.bot;
        let mut values: Vec<(Dimension, u32)> = Vec::new();
        if view {
            // Allocated once at its largest (a page view has up to 13 values), not grown.
            values.reserve_exact(VALUES_AT_MOST);
            let [country, province, city, carrier] =
                numbered(&meanings.places, &mut places, numbering, click.place);
            let [browser, os, device] =
                numbered(&meanings.agents, &mut agents, numbering, click.agent);
            let [referrer] = numbered(&meanings.referers, &mut referers, numbering, click.referer);
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
                values.push((dimension, value));
            }
            // The local hour since the day began (on a day the clocks change, hours after the
            // change are counted from midnight).
            let start = *starts.entry(day).or_insert_with(|| day_start(day, tz));
            let hour = start.map_or(0, |start| (at - start).num_hours().clamp(0, 99));
            values.push((Dimension::Hour, hours[hour as usize]));
            let target = click.link.and_then(|link| targets.get(&link));
            values.extend(target.into_iter().flatten().copied());
            if let Some(id) = click.query {
                let parsed = queries.entry(id).or_insert_with(|| {
                    let query = (meanings.queries.get(&id)).and_then(|[query]| query.as_deref());
                    query_values(query.unwrap_or_default())
                        .into_iter()
                        .map(|(dimension, value)| (dimension, numbering.number(&value.into())))
                        .collect()
                });
                for (dimension, value) in parsed.iter() {
                    if !target.is_some_and(|t| t.iter().any(|(d, _)| d == dimension)) {
                        values.push((*dimension, *value));
                    }
                }
            }
        }
        // Only page views count visitors and addresses.
        let (visitor, address) = match view {
            true => (
                (click.visitor.as_deref()).and_then(|v| Who::of(VISITORS, Digest::stored(v))),
                Who::of(ADDRESSES, Address::stored(&click.ip)),
            ),
            false => (None, None),
        };
        seen.push(Seen {
            day,
            link: click.link.unwrap_or(UNKNOWN_LINK),
            success,
            view,
            visitor,
            address,
            numbers: (None, None),
            values,
        });
    }
    seen
}

/// The most values a page view has: one per [`Dimension`].
const VALUES_AT_MOST: usize = Dimension::COUNT;

/// Values a visitor chooses beyond a link's day's first [`MAX_VALUES`] count as [`OTHER`].
fn cap_values(seen: &mut [Seen], mut known: Known, other: u32) {
    for s in seen {
        for (dimension, value) in &mut s.values {
            if !dimension.is_capped() {
                continue;
            }
            // The cap is the link's own (the all-links row follows the link's decision, so
            // that both count the same visits under the same value).
            let values = known.entry((s.day, s.link, *dimension)).or_default();
            if !values.contains(value) {
                if values.len() < MAX_VALUES {
                    values.insert(*value);
                } else {
                    *value = other;
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
    handed: &Handed,
) -> Result<NewNumbers, DbErr> {
    let who = (seen.iter()).flat_map(|s| s.visitor.into_iter().chain(s.address));
    let (numbers, new_numbers) =
        crate::stats::daysets::numbers::look_up_numbers(txn, who, handed).await?;
    for s in seen.iter_mut() {
        let number = |who: Option<Who>| who.and_then(|who| numbers.get(&who.hash).copied());
        s.numbers = (number(s.visitor), number(s.address));
    }
    Ok(new_numbers)
}

/// The day rows and breakdown rows the clicks add, each visitor, address and value new to
/// its day's set counted once; `places` gives each set's place in `sets`.
fn add_up(
    seen: &[Seen],
    sets: &mut DaySets,
    places: &foldhash::HashMap<SetOf, usize>,
) -> (BTreeMap<(NaiveDate, i64), Visits>, Rows) {
    let mut stats: BTreeMap<(NaiveDate, i64), Visits> = BTreeMap::new();
    let mut breakdown = Rows::default();
    // The members of so many clicks at a time (a few megabytes listed and sorted, where a
    // turn of PostgreSQL's, 100,000 clicks and more, took tens at once).
    for chunk in seen.chunks(MEMBERS_AT_ONCE) {
        // Reserved at its length (see `members`), not grown and copied again and again.
        let views = chunk.iter().filter(|s| s.view);
        let length = views.clone().map(sets_of).sum();
        let mut asked: Vec<(usize, u32)> = Vec::with_capacity(length);
        for s in views {
            for scope in [s.link, ALL_LINKS] {
                members(s, scope, |set, number| asked.push((places[&set], number)));
            }
        }
        debug_assert_eq!(asked.len(), length, "sets_of counts what members gives");
        // Whether each member is new to its set, in the order asked, which the page views
        // below take again.
        let first_visits = sets.insert_all(&asked).into_iter();
        add_up_chunk(chunk, first_visits, &mut stats, &mut breakdown);
    }
    (stats, breakdown)
}

/// Clicks whose members a turn adds to its sets at once (see [`DaySets::insert_all`]).
const MEMBERS_AT_ONCE: usize = 16_384;

/// Adds `seen` to `stats` and `breakdown`, `first_visits` answering whether each member of
/// theirs was new to its set, in the order [`members`] gives them.
fn add_up_chunk(
    seen: &[Seen],
    mut first_visits: impl Iterator<Item = bool>,
    stats: &mut BTreeMap<(NaiveDate, i64), Visits>,
    breakdown: &mut Rows,
) {
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
            // By dimension, whether the visitor was new to the set of its value, for the
            // dimensions that have a set per value (no list allocated per page view).
            let mut new_value = [None; VALUES_AT_MOST];
            members(s, scope, |set, _| {
                let new = (first_visits.next()).expect("an answer for each member asked");
                match set.role {
                    Role::Visitor => {
                        new_visitor = new;
                        day.uv += i64::from(new);
                    }
                    Role::Address => day.ip += i64::from(new),
                    Role::Value(dimension) => new_value[dimension as usize] = Some(new),
                }
            });
            for (dimension, value) in &s.values {
                let new = new_value[*dimension as usize].unwrap_or(new_visitor);
                let entry = breakdown
                    .entry((s.day, scope, *dimension, *value))
                    .or_default();
                entry.0 += 1;
                entry.1 += i64::from(new);
            }
        }
    }
}

/// What a member of a day's set stands for.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Role {
    Visitor,
    Address,
    Value(Dimension),
}

/// A day's set as a turn names it: by day, link (or all links), what its members stand for,
/// and the number of its value (see [`Values`]; the empty value for visitors and addresses).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct SetOf {
    day: NaiveDate,
    scope: i64,
    role: Role,
    value: u32,
}

impl SetOf {
    /// The set as it is stored.
    fn key(self, values: &Values) -> SetKey {
        let kind = match self.role {
            Role::Visitor => VISITORS,
            Role::Address => ADDRESSES,
            Role::Value(dimension) => dimension.set_kind().unwrap_or_default(),
        };
        (self.day, self.scope, kind, values.text(self.value).clone())
    }
}

/// How many sets a page view belongs to, of its link and of all links (see [`members`]).
fn sets_of(s: &Seen) -> usize {
    let by_value = (s.values.iter())
        .filter(|(dimension, _)| dimension.set_kind().is_some())
        .count();
    let visitor = s.numbers.0.map_or(0, |_| 1 + by_value);
    let address = s.numbers.1.map_or(0, |_| 1);
    2 * (visitor + address)
}

/// Calls `member` with each set of `scope` a page view belongs to, and the number it is
/// there by.
fn members(s: &Seen, scope: i64, mut member: impl FnMut(SetOf, u32)) {
    let set = |role, value| SetOf {
        day: s.day,
        scope,
        role,
        value,
    };
    if let Some(visitor) = s.numbers.0 {
        member(set(Role::Visitor, EMPTY), visitor);
        for (dimension, value) in &s.values {
            if dimension.set_kind().is_some() {
                member(set(Role::Value(*dimension), *value), visitor);
            }
        }
    }
    if let Some(address) = s.numbers.1 {
        member(set(Role::Address, EMPTY), address);
    }
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

/// What [`cap_values`] needs to know of the values the links' days in `seen` already have,
/// for the capped dimensions: those stored, and those `carried` by the turn under way (which
/// count as stored), for each link's day that gets a value not carried (its row read whole,
/// `stats::dayvalues`).
async fn known_values(
    txn: &impl ConnectionTrait,
    seen: &[Seen],
    carried: Vec<CappedValue>,
    numbering: &mut Values,
) -> Result<Known, DbErr> {
    let mut known = Known::default();
    for (day, link, dimension, value) in carried {
        let value = numbering.number(&value);
        known
            .entry((day, link, dimension))
            .or_default()
            .insert(value);
    }
    // In the key's order, each once.
    let mut asked: Vec<(NaiveDate, i64)> = Vec::new();
    for s in seen.iter().filter(|s| s.view) {
        for (dimension, value) in s.values.iter().filter(|(d, _)| d.is_capped()) {
            let group = (s.day, s.link, *dimension);
            if !known.get(&group).is_some_and(|v| v.contains(value)) {
                asked.push((s.day, s.link));
            }
        }
    }
    asked.sort_unstable();
    asked.dedup();
    crate::stats::dayvalues::read(txn, &asked, |(day, link), values| {
        for ((dimension, value), _) in values {
            let Some(dimension) = Dimension::from_name(&dimension).filter(|d| d.is_capped()) else {
                continue;
            };
            known
                .entry((day, link, dimension))
                .or_default()
                .insert(numbering.number(&value.into()));
        }
    })
    .await?;
    Ok(known)
}

/// PV and UV a turn adds, per day, link (or all links), dimension and value.
pub(super) struct Breakdown {
    rows: Rows,
    values: Values,
}

/// [`Breakdown`]'s rows, by the values' numbers.
type Rows = foldhash::HashMap<(NaiveDate, i64, Dimension, u32), (i64, i64)>;

impl Breakdown {
    /// Each row: day, link (or all links), dimension and value, with its PV and UV.
    pub(super) fn rows(
        &self,
    ) -> impl Iterator<Item = ((NaiveDate, i64, Dimension, &Text), (i64, i64))> {
        (self.rows.iter()).map(|((day, link, dimension, value), added)| {
            ((*day, *link, *dimension, self.values.text(*value)), *added)
        })
    }
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
