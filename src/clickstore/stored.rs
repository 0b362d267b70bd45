//! Stored clicks read back as the rows they were written from: the lean click joined with its
//! dictionaries, its bytes turned back into text. The export, recounts and the tests read
//! clicks through here; counting reads the waiting list (`waiting`).

use super::dictionary::{AGENTS, OUTCOMES, PLACES, REFERERS, look_up, texts};
use super::insert::{TABLE, WAITING, from_micros};
use super::row::{Address, Agent, Digest, EventRow, Text};
use crate::db::sql::{BUNCH, ask_packed, statement, unhex, unhex_optional, unpack_each};
use crate::rules::Outcome;
use sea_orm::{ConnectionTrait, DbBackend, DbErr, QueryResult, Value};
use std::collections::BTreeSet;

/// A stored click.
#[derive(Clone, Debug)]
pub struct Stored {
    /// Microseconds since 1970, UTC: with `key`, what identifies the stored click.
    pub at: i64,
    pub key: Vec<u8>,
    /// Not waiting to be counted.
    pub counted: bool,
    pub row: EventRow,
}

/// What is read of a click: its numbers and the ids of the dictionary rows it points to
/// (`w` is its entry in the waiting list, if it has one).
const SELECT: &str = "SELECT c.at AS at, c.event_key AS event_key, w.at AS waiting, \
     c.link AS link, c.ip AS ip, c.visitor AS visitor, c.bot AS bot, c.code AS code, \
     c.host AS host, c.agent AS agent, c.referer AS referer, c.query AS query, \
     c.place AS place, c.outcome AS outcome";

/// Clicks matching `filter` (a condition on `c`, the click, and `w`, its waiting entry, with
/// `?` for `values`), in the order they are keyed, at most `limit` of them.
pub async fn read(
    db: &impl ConnectionTrait,
    filter: &str,
    values: Vec<Value>,
    limit: Option<u64>,
) -> Result<Vec<Stored>, DbErr> {
    read_with(db, filter, values, limit, &mut Dictionaries::default()).await
}

/// [`read`], with the dictionary rows `dictionaries` remembers from earlier reads (a long
/// export reads each row once, not once a page).
///
/// The ids are read and each dictionary row is then read once, instead of joining the seven
/// dictionaries to every click and reading each text by its column's name again.
pub async fn read_with(
    db: &impl ConnectionTrait,
    filter: &str,
    values: Vec<Value>,
    limit: Option<u64>,
    dictionaries: &mut Dictionaries,
) -> Result<Vec<Stored>, DbErr> {
    let page = ask(db, filter, values, limit).await?.parse()?;
    dictionaries.learn(db, &page).await?;
    dictionaries.resolve(page)
}

/// The database's answer to a read of clicks, not parsed yet: [`read_with`] in steps, so that
/// a long read (the export) can ask for its next page as soon as it knows where this one
/// ends, and parse this one meanwhile.
pub struct Answer(Answered);

enum Answered {
    /// SQLite's: JSON texts of [`BUNCH`] clicks each (see [`ask_packed`]).
    Packed(Vec<String>),
    Rows(Vec<QueryResult>),
}

/// The clicks of a page, parsed, before their dictionary rows are read.
pub struct Page(Vec<Ids>);

/// Asks for the clicks matching `filter` (a condition on `c`, the click, and `w`, its waiting
/// entry, with `?` for `values`), in the order they are keyed, at most `limit` of them.
pub async fn ask(
    db: &impl ConnectionTrait,
    filter: &str,
    values: Vec<Value>,
    limit: Option<u64>,
) -> Result<Answer, DbErr> {
    let backend = db.get_database_backend();
    let clause = limit.map(|n| format!(" LIMIT {n}")).unwrap_or_default();
    let sql = format!(
        "{SELECT} FROM {TABLE} c LEFT JOIN {WAITING} w \
         ON w.at = c.at AND w.event_key = c.event_key \
         WHERE {filter} ORDER BY c.at, c.event_key{clause}"
    );
    Ok(Answer(match (backend, limit) {
        (DbBackend::Sqlite, Some(limit)) if limit <= PACKED_MOST => {
            Answered::Packed(ask_packed(db, PACKED, &sql, values).await?)
        }
        _ => Answered::Rows(db.query_all_raw(statement(backend, &sql, values)).await?),
    }))
}

impl Answer {
    /// How many clicks there are and the time and key of the last, read from the end of the
    /// answer only. For SQLite's bunches that is where the last click is in practice, not by
    /// promise: [`Page::last`] tells for sure once the whole page is parsed.
    pub fn tail(&self) -> Result<Option<(usize, i64, Vec<u8>)>, DbErr> {
        match &self.0 {
            Answered::Rows(rows) => match rows.last() {
                None => Ok(None),
                Some(row) => {
                    let last = Ids::read(row)?;
                    Ok(Some((rows.len(), last.at, last.key)))
                }
            },
            Answered::Packed(bunches) => {
                let Some(text) = bunches.last() else {
                    return Ok(None);
                };
                let bunch = unpack(text)?;
                let full = (bunches.len() - 1) * BUNCH as usize;
                Ok(bunch
                    .iter()
                    .map(|ids| (ids.at, &ids.key))
                    .max()
                    .map(|(at, key)| (full + bunch.len(), at, key.clone())))
            }
        }
    }

    /// The clicks' ids, in the order they are keyed.
    pub fn parse(self) -> Result<Page, DbErr> {
        match self.0 {
            Answered::Rows(rows) => rows.iter().map(Ids::read).collect::<Result<_, _>>(),
            Answered::Packed(bunches) => {
                let mut clicks = Vec::with_capacity(bunches.len() * BUNCH as usize);
                for text in &bunches {
                    clicks.extend(unpack(text)?);
                }
                // An aggregate's order is its input's in practice, but SQLite does not
                // promise it.
                clicks.sort_by(|a, b| (a.at, &a.key).cmp(&(b.at, &b.key)));
                Ok(clicks)
            }
        }
        .map(Page)
    }
}

impl Page {
    /// The time and key of the last click.
    pub fn last(&self) -> Option<(i64, &[u8])> {
        self.0.last().map(|ids| (ids.at, ids.key.as_slice()))
    }
}

/// The most clicks [`ask_packed`] reads at once.
const PACKED_MOST: u64 = 10_000;

/// [`ask_packed`]'s columns for a click as [`SELECT`] names them.
const PACKED: &str = "at, hex(event_key), waiting, link, hex(ip), hex(visitor), bot, code, \
     host, agent, referer, query, place, outcome";

/// The clicks of one of [`ask_packed`]'s bunches.
fn unpack(text: &str) -> Result<Vec<Ids>, DbErr> {
    /// A click as [`ask_packed`]'s JSON spells it; blobs in hex.
    #[derive(serde::Deserialize)]
    struct Packed<'a>(
        i64,
        &'a str,
        Option<i64>,
        Option<i64>,
        &'a str,
        Option<&'a str>,
        u8,
        i32,
        Option<i32>,
        Option<i32>,
        Option<i32>,
        Option<i32>,
        Option<i32>,
        i32,
    );
    let mut clicks = Vec::with_capacity(BUNCH as usize);
    unpack_each(text, "clicks", &mut clicks, |p: Packed| {
        Ok(Ids {
            at: p.0,
            key: unhex(p.1)?,
            waiting: p.2.is_some(),
            link: p.3,
            ip: unhex(p.4)?,
            visitor: unhex_optional(p.5)?,
            bot: p.6 != 0,
            code: p.7,
            host: p.8,
            agent: p.9,
            referer: p.10,
            query: p.11,
            place: p.12,
            outcome: p.13,
        })
    })?;
    Ok(clicks)
}

/// A stored click as read, before its dictionary rows are.
struct Ids {
    at: i64,
    key: Vec<u8>,
    waiting: bool,
    link: Option<i64>,
    ip: Vec<u8>,
    visitor: Option<Vec<u8>>,
    bot: bool,
    code: i32,
    host: Option<i32>,
    agent: Option<i32>,
    referer: Option<i32>,
    query: Option<i32>,
    place: Option<i32>,
    outcome: i32,
}

impl Ids {
    fn read(row: &QueryResult) -> Result<Self, DbErr> {
        Ok(Self {
            at: row.try_get("", "at")?,
            key: row.try_get("", "event_key")?,
            waiting: row.try_get::<Option<i64>>("", "waiting")?.is_some(),
            link: row.try_get("", "link")?,
            ip: row.try_get("", "ip")?,
            visitor: row.try_get("", "visitor")?,
            bot: row.try_get("", "bot")?,
            code: row.try_get("", "code")?,
            host: row.try_get("", "host")?,
            agent: row.try_get("", "agent")?,
            referer: row.try_get("", "referer")?,
            query: row.try_get("", "query")?,
            place: row.try_get("", "place")?,
            outcome: row.try_get("", "outcome")?,
        })
    }
}

/// Dictionary rows read so far, by id. Forgotten all at once past [`Dictionaries::MOST`]
/// rows, so that a read of a year of clicks holds no more than a page's worth. Keyed by a
/// fast hash: the ids are ours, not a stranger's, so SipHash's defence buys nothing here.
#[derive(Default)]
pub struct Dictionaries {
    texts: ById<Text>,
    agents: ById<[Option<Text>; 6]>,
    referers: ById<[Option<Text>; 2]>,
    places: ById<[Option<Text>; 4]>,
    outcomes: ById<Outcome>,
}

type ById<T> = foldhash::HashMap<i32, T>;

impl Dictionaries {
    const MOST: usize = 100_000;

    fn len(&self) -> usize {
        self.texts.len()
            + self.agents.len()
            + self.referers.len()
            + self.places.len()
            + self.outcomes.len()
    }

    /// Reads the rows the clicks of `page` point to that are not known yet.
    pub async fn learn(&mut self, db: &impl ConnectionTrait, page: &Page) -> Result<(), DbErr> {
        let clicks = &page.0;
        if self.len() > Self::MOST {
            *self = Self::default();
        }
        fn unknown<T>(
            clicks: &[Ids],
            known: &ById<T>,
            ids: impl Fn(&Ids) -> [Option<i32>; 3],
        ) -> BTreeSet<i32> {
            clicks
                .iter()
                .flat_map(ids)
                .flatten()
                .filter(|id| !known.contains_key(id))
                .collect()
        }
        let wanted = unknown(clicks, &self.texts, |c| [Some(c.code), c.host, c.query]);
        self.texts.extend(texts(db, wanted).await?);
        let agents = unknown(clicks, &self.agents, |c| [c.agent, None, None]);
        let columns = <[&str; 6]>::try_from(AGENTS.columns).expect("six agent columns");
        self.agents
            .extend(look_up(db, &AGENTS, columns, agents).await?);
        let referers = unknown(clicks, &self.referers, |c| [c.referer, None, None]);
        self.referers
            .extend(look_up(db, &REFERERS, ["referer", "referer_host"], referers).await?);
        let places = unknown(clicks, &self.places, |c| [c.place, None, None]);
        let columns = ["country", "province", "city", "carrier"];
        self.places
            .extend(look_up(db, &PLACES, columns, places).await?);
        let outcomes = unknown(clicks, &self.outcomes, |c| [Some(c.outcome), None, None]);
        let columns = ["transform_status", "failure_reason", "target_rule"];
        for (id, [status, reason, rule]) in look_up(db, &OUTCOMES, columns, outcomes).await? {
            let status = status.unwrap_or_default();
            let outcome = Outcome::from_stored(&status, reason.as_deref(), rule.as_deref())
                .ok_or_else(|| {
                    DbErr::Custom(format!(
                        "a stored click ended as '{status}' ({}, {}), which inklink does not know",
                        reason.as_deref().unwrap_or("no reason"),
                        rule.as_deref().unwrap_or("no rule"),
                    ))
                })?;
            self.outcomes.insert(id, outcome);
        }
        Ok(())
    }

    /// The clicks of `page` with the values of the rows they point to ([`Self::learn`]ed
    /// before).
    pub fn resolve(&self, page: Page) -> Result<Vec<Stored>, DbErr> {
        page.0.into_iter().map(|ids| self.stored(ids)).collect()
    }

    /// The click `ids` with the values of the rows it points to.
    fn stored(&self, ids: Ids) -> Result<Stored, DbErr> {
        let text = |id: Option<i32>| id.and_then(|id| self.texts.get(&id).cloned());
        let [user_agent, browser, browser_version, os, os_version, device] = ids
            .agent
            .and_then(|id| self.agents.get(&id).cloned())
            .unwrap_or_default();
        let [referer, referer_host] = ids
            .referer
            .and_then(|id| self.referers.get(&id).cloned())
            .unwrap_or_default();
        let [country, province, city, carrier] = ids
            .place
            .and_then(|id| self.places.get(&id).cloned())
            .unwrap_or_default();
        let outcome = *self.outcomes.get(&ids.outcome).ok_or_else(|| {
            DbErr::Custom(format!("a stored click's outcome {} is gone", ids.outcome))
        })?;
        let row = EventRow {
            event_key: Digest::stored(&ids.key),
            record_time: from_micros(ids.at),
            compression_code: text(Some(ids.code)).unwrap_or_default(),
            url_map_id: ids.link,
            host: text(ids.host),
            client_ip: Address::stored(&ids.ip),
            unique_identity: ids.visitor.map(|v| Digest::stored(&v)).unwrap_or_default(),
            user_agent,
            referer,
            referer_host,
            query_string: text(ids.query),
            country,
            province,
            city,
            carrier,
            agent: Agent {
                browser,
                browser_version,
                os,
                os_version,
                device,
                is_bot: ids.bot,
            },
            outcome,
            generation: 0,
        };
        Ok(Stored {
            at: ids.at,
            key: ids.key,
            counted: !ids.waiting,
            row,
        })
    }
}

/// Every stored click, oldest first.
pub async fn all(db: &impl ConnectionTrait) -> Result<Vec<EventRow>, DbErr> {
    Ok(read(db, "1 = 1", vec![], None)
        .await?
        .into_iter()
        .map(|stored| stored.row)
        .collect())
}

/// How many clicks are stored.
pub async fn count(db: &impl ConnectionTrait) -> Result<u64, DbErr> {
    let backend = db.get_database_backend();
    let sql = format!("SELECT COUNT(*) AS clicks FROM {TABLE}");
    let row = db.query_one_raw(statement(backend, &sql, vec![])).await?;
    let count: i64 = match row {
        Some(row) => row.try_get("", "clicks")?,
        None => 0,
    };
    Ok(count as u64)
}

/// The times (UTC) of the first and last stored click.
pub async fn span(
    db: &impl ConnectionTrait,
) -> Result<Option<(chrono::NaiveDateTime, chrono::NaiveDateTime)>, DbErr> {
    let backend = db.get_database_backend();
    let sql = &format!("SELECT MIN(at) AS first, MAX(at) AS last FROM {TABLE}");
    let Some(row) = db.query_one_raw(statement(backend, sql, vec![])).await? else {
        return Ok(None);
    };
    let first: Option<i64> = row.try_get("", "first")?;
    let last: Option<i64> = row.try_get("", "last")?;
    Ok(first
        .zip(last)
        .map(|(first, last)| (from_micros(first), from_micros(last))))
}
