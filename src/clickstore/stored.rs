//! Stored clicks read back as the rows they were written from: the lean click joined with its
//! dictionaries, its bytes turned back into text. Counting, recounts and the tests read
//! clicks through here.

use super::dictionary::{AGENTS, Dictionary, OUTCOMES, PLACES, REFERERS, TEXTS};
use super::insert::{TABLE, WAITING, from_micros, micros};
use super::row::{Address, Agent, Digest, EventRow, Text};
use crate::db::sql::statement;
use crate::rules::Outcome;
use sea_orm::{ConnectionTrait, DbBackend, DbErr, QueryResult, Value};
use std::collections::{BTreeSet, HashMap};

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
    let backend = db.get_database_backend();
    let clause = limit.map(|n| format!(" LIMIT {n}")).unwrap_or_default();
    let sql = format!(
        "{SELECT} FROM {TABLE} c LEFT JOIN {WAITING} w \
         ON w.at = c.at AND w.event_key = c.event_key \
         WHERE {filter} ORDER BY c.at, c.event_key{clause}"
    );
    let clicks = match (backend, limit) {
        (DbBackend::Sqlite, Some(limit)) if limit <= PACKED_MOST => {
            read_packed(db, &sql, values).await?
        }
        _ => {
            let rows = db.query_all_raw(statement(backend, &sql, values)).await?;
            rows.iter().map(Ids::read).collect::<Result<Vec<_>, _>>()?
        }
    };
    dictionaries.learn(db, &clicks).await?;
    clicks
        .into_iter()
        .map(|click| dictionaries.stored(click))
        .collect()
}

/// The most clicks [`read_packed`] reads at once.
const PACKED_MOST: u64 = 10_000;
/// Clicks a row of [`read_packed`] holds (its text is about 150 bytes a click): small enough
/// that each text is allocated and read while it is in the CPU's cache.
const BUNCH: u64 = 100;

/// The clicks `sql` selects (as [`SELECT`] names them), read from SQLite as JSON texts of
/// [`BUNCH`] clicks each.
///
/// sqlx hands each row from SQLite's thread to ours through a channel, and the two threads
/// woke each other for every row (a context switch a click, both cores half idle): an export
/// read this way used 16–21 µs of CPU a click, against 8–10 µs packed.
async fn read_packed(
    db: &impl ConnectionTrait,
    sql: &str,
    values: Vec<Value>,
) -> Result<Vec<Ids>, DbErr> {
    /// A click as [`read_packed`]'s JSON spells it; blobs in hex.
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
    let packed = format!(
        "SELECT json_group_array(json_array(at, hex(event_key), waiting, link, hex(ip), \
         hex(visitor), bot, code, host, agent, referer, query, place, outcome)) AS bunch \
         FROM (SELECT *, (ROW_NUMBER() OVER () - 1) / {BUNCH} AS n FROM ({sql})) GROUP BY n"
    );
    let backend = db.get_database_backend();
    let bytes = |hex: &str| {
        crate::digest::from_hex(hex.as_bytes())
            .ok_or_else(|| DbErr::Custom(format!("'{hex}' is not hex")))
    };
    let mut clicks = Vec::new();
    for row in db
        .query_all_raw(statement(backend, &packed, values))
        .await?
    {
        let text: String = row.try_get("", "bunch")?;
        let bunch: Vec<Packed> = serde_json::from_str(&text)
            .map_err(|err| DbErr::Custom(format!("clicks read as JSON: {err}")))?;
        for p in bunch {
            clicks.push(Ids {
                at: p.0,
                key: bytes(p.1)?,
                waiting: p.2.is_some(),
                link: p.3,
                ip: bytes(p.4)?,
                visitor: p.5.map(bytes).transpose()?,
                bot: p.6 != 0,
                code: p.7,
                host: p.8,
                agent: p.9,
                referer: p.10,
                query: p.11,
                place: p.12,
                outcome: p.13,
            });
        }
    }
    // An aggregate's order is its input's in practice, but SQLite does not promise it.
    clicks.sort_by(|a, b| (a.at, &a.key).cmp(&(b.at, &b.key)));
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
/// rows, so that a read of a year of clicks holds no more than a page's worth.
#[derive(Default)]
pub struct Dictionaries {
    texts: HashMap<i32, Text>,
    agents: HashMap<i32, [Option<Text>; 6]>,
    referers: HashMap<i32, [Option<Text>; 2]>,
    places: HashMap<i32, [Option<Text>; 4]>,
    outcomes: HashMap<i32, Outcome>,
}

impl Dictionaries {
    const MOST: usize = 100_000;

    fn len(&self) -> usize {
        self.texts.len()
            + self.agents.len()
            + self.referers.len()
            + self.places.len()
            + self.outcomes.len()
    }

    /// Reads the rows `clicks` point to that are not known yet.
    async fn learn(&mut self, db: &impl ConnectionTrait, clicks: &[Ids]) -> Result<(), DbErr> {
        if self.len() > Self::MOST {
            *self = Self::default();
        }
        fn unknown<T>(
            clicks: &[Ids],
            known: &HashMap<i32, T>,
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

    /// The click `ids` with the values of the rows it points to ([`Self::learn`]ed before).
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

/// Waiting clicks read per statement: the list's keys are taken first, at most this many,
/// so that the database looks each click up by its key. (With the join left to PostgreSQL's
/// planner, 50,000 waiting clicks were joined by reading the whole click table.)
const PAGE: u64 = 10_000;

/// A click waiting to be counted, as counting reads it: its numbers, and the ids of the
/// dictionary rows it points to, whose values [`meanings`] reads once a turn for all of them.
/// (Joining the seven dictionaries for every click and turning each id back into text was
/// 0.53 s of a 1.3 s turn of 50,000 clicks on SQLite.)
#[derive(Clone, Debug)]
pub struct Waiting {
    /// Microseconds since 1970, UTC: with `key`, what identifies the stored click.
    pub at: i64,
    pub key: Vec<u8>,
    pub link: Option<i64>,
    pub ip: Vec<u8>,
    pub visitor: Option<Vec<u8>>,
    pub bot: bool,
    pub outcome: i32,
    /// The short code visited (a `click_text` row).
    pub code: i32,
    pub agent: Option<i32>,
    pub referer: Option<i32>,
    pub query: Option<i32>,
    pub place: Option<i32>,
}

/// What is read of a waiting click (`c`, keyed by `w`).
/// Columns are named as [`Waiting`]'s fields.
const SELECT_WAITING: &str = "SELECT w.at AS at, w.event_key AS event_key, c.link AS link, \
     c.ip AS ip, c.visitor AS visitor, c.bot AS bot, c.outcome AS outcome, c.code AS code, c.agent AS agent, \
     c.referer AS referer, c.query AS query, c.place AS place";

/// The oldest `limit` clicks waiting to be counted, in the order they are keyed, taken off the
/// waiting list in the caller's transaction (a rollback puts them back).
///
/// On PostgreSQL a page is taken off the list and read in one statement (a `DELETE …
/// RETURNING` the read joins): deleting the keys afterwards, 250 to a statement, took a
/// quarter of a counting turn. Each page starts at the front of what is left. The rows are
/// named by their place in the table (`ctid`; list entries are never updated, and counting
/// turns take the lock row one at a time): by their keys, the planner scanned the whole list
/// for each page. Elsewhere the pages are read, each after the last click of the one before,
/// and taken off afterwards. Call it after the turn's lock row is taken (on SQLite that takes
/// the write lock).
pub async fn take_waiting(db: &impl ConnectionTrait, limit: u64) -> Result<Vec<Waiting>, DbErr> {
    let backend = db.get_database_backend();
    let clicks = pages(db, limit, |last, want| match backend {
        DbBackend::Postgres => (
            format!(
                "WITH w AS (DELETE FROM {WAITING} WHERE ctid = ANY(ARRAY(SELECT ctid \
                 FROM {WAITING} ORDER BY at, event_key LIMIT {want})) RETURNING at, event_key) \
                 {SELECT_WAITING} FROM w JOIN {TABLE} c \
                 ON c.at = w.at AND c.event_key = w.event_key ORDER BY w.at, w.event_key"
            ),
            vec![],
        ),
        _ => read_page(backend, last, want),
    })
    .await?;
    match (backend, clicks.last()) {
        (DbBackend::Postgres, _) | (_, None) => {}
        // The turn has held SQLite's write lock since it began, so nothing was added to the
        // list since it was read: what was read is the list's front, up to its last click
        // (with any entry of a click gone, which the join skipped). One range delete takes
        // it, instead of a look in the key per click.
        (DbBackend::Sqlite, Some(last)) => forget_front(db, (last.at, &last.key)).await?,
        // On MySQL a writer may add an earlier click while the turn runs.
        _ => forget_waiting(db, &clicks).await?,
    }
    Ok(clicks)
}

/// The oldest `limit` clicks waiting to be counted, left on the list: SQLite's counting
/// reads them before it takes its turn, and takes them with [`take_front`] in the turn.
pub async fn peek_waiting(db: &impl ConnectionTrait, limit: u64) -> Result<Vec<Waiting>, DbErr> {
    let backend = db.get_database_backend();
    pages(db, limit, |last, want| read_page(backend, last, want)).await
}

/// Takes the front of the waiting list off it when it is exactly the clicks `keys` (in
/// order); false, taking nothing, when anything was added among them or taken since they were
/// read.
pub async fn take_front(db: &impl ConnectionTrait, keys: &[(i64, Vec<u8>)]) -> Result<bool, DbErr> {
    let Some((at, key)) = keys.last() else {
        return Ok(false);
    };
    let backend = db.get_database_backend();
    let (range, values) = key_range(backend, Bound::UpTo, (*at, key));
    let sql = format!(
        "SELECT at, event_key FROM {WAITING} WHERE {range} ORDER BY at, event_key LIMIT {}",
        keys.len() + 1
    );
    let rows = db.query_all_raw(statement(backend, &sql, values)).await?;
    if rows.len() != keys.len() {
        return Ok(false);
    }
    for (row, (at, key)) in rows.iter().zip(keys) {
        let listed: (i64, Vec<u8>) = (row.try_get("", "at")?, row.try_get("", "event_key")?);
        if listed.0 != *at || listed.1 != *key {
            return Ok(false);
        }
    }
    forget_front(db, (*at, key)).await?;
    Ok(true)
}

/// Takes every entry up to click `last` (time and key) off the waiting list.
async fn forget_front(db: &impl ConnectionTrait, last: (i64, &[u8])) -> Result<(), DbErr> {
    let backend = db.get_database_backend();
    let (range, values) = key_range(backend, Bound::UpTo, last);
    let sql = format!("DELETE FROM {WAITING} WHERE {range}");
    db.execute_raw(statement(backend, &sql, values)).await?;
    Ok(())
}

/// Where a range of the waiting list's key ends: up to a click (inclusive), or after one.
#[derive(Clone, Copy)]
enum Bound {
    UpTo,
    After,
}

/// The condition on the waiting list's key for the entries `bound` click `(at, key)`.
fn key_range(backend: DbBackend, bound: Bound, (at, key): (i64, &[u8])) -> (String, Vec<Value>) {
    let (time, tie) = match bound {
        Bound::UpTo => ("<", "<="),
        Bound::After => (">", ">"),
    };
    match backend {
        DbBackend::MySql => (
            format!("at {time} ? OR (at = ? AND event_key {tie} ?)"),
            vec![at.into(), at.into(), key.to_vec().into()],
        ),
        _ => (
            format!("(at, event_key) {tie} (?, ?)"),
            vec![at.into(), key.to_vec().into()],
        ),
    }
}

/// A page of at most `want` waiting clicks after `last` (from the front without one), read
/// without taking them off the list.
fn read_page(backend: DbBackend, last: Option<&Waiting>, want: u64) -> (String, Vec<Value>) {
    let (range, values) = match last {
        None => (String::new(), vec![]),
        Some(last) => {
            let (range, values) = key_range(backend, Bound::After, (last.at, &last.key));
            (format!("WHERE {range}"), values)
        }
    };
    let sql = format!(
        "{SELECT_WAITING} FROM (SELECT at, event_key FROM {WAITING} {range} \
         ORDER BY at, event_key LIMIT {want}) w \
         JOIN {TABLE} c ON c.at = w.at AND c.event_key = w.event_key \
         ORDER BY w.at, w.event_key"
    );
    (sql, values)
}

/// Up to `limit` waiting clicks, read a page of at most [`PAGE`] at a time by the statement
/// `page` gives for the last click read so far and the page's size, until a page comes back
/// short.
async fn pages(
    db: &impl ConnectionTrait,
    limit: u64,
    page: impl Fn(Option<&Waiting>, u64) -> (String, Vec<Value>),
) -> Result<Vec<Waiting>, DbErr> {
    let backend = db.get_database_backend();
    let mut clicks: Vec<Waiting> = Vec::new();
    while (clicks.len() as u64) < limit {
        let want = (limit - clicks.len() as u64).min(PAGE);
        let (sql, values) = page(clicks.last(), want);
        let rows = db.query_all_raw(statement(backend, &sql, values)).await?;
        let full = rows.len() as u64 == want;
        for row in &rows {
            clicks.push(Waiting {
                at: row.try_get("", "at")?,
                key: row.try_get("", "event_key")?,
                link: row.try_get("", "link")?,
                ip: row.try_get("", "ip")?,
                visitor: row.try_get("", "visitor")?,
                bot: row.try_get("", "bot")?,
                outcome: row.try_get("", "outcome")?,
                code: row.try_get("", "code")?,
                agent: row.try_get("", "agent")?,
                referer: row.try_get("", "referer")?,
                query: row.try_get("", "query")?,
                place: row.try_get("", "place")?,
            });
        }
        if !full {
            break;
        }
    }
    Ok(clicks)
}

/// What counting needs of the dictionary rows a turn's clicks point to, by id. A row not
/// found (none is deleted while a click points to it) reads as empty values.
#[derive(Default)]
pub struct Meanings {
    /// Browser, OS and device.
    pub agents: HashMap<i32, [Option<Text>; 3]>,
    /// The referrer's host.
    pub referers: HashMap<i32, [Option<Text>; 1]>,
    /// The short URL's query string.
    pub queries: HashMap<i32, [Option<Text>; 1]>,
    /// Country, province, city and carrier.
    pub places: HashMap<i32, [Option<Text>; 4]>,
    /// How the redirect ended (`success`, …).
    pub outcomes: HashMap<i32, [Option<Text>; 1]>,
}

/// The values of the dictionary rows `clicks` point to, each row read once.
pub async fn meanings(db: &impl ConnectionTrait, clicks: &[Waiting]) -> Result<Meanings, DbErr> {
    let ids = |id: fn(&Waiting) -> Option<i32>| -> BTreeSet<i32> {
        clicks.iter().filter_map(id).collect()
    };
    Ok(Meanings {
        agents: look_up(db, &AGENTS, ["browser", "os", "device"], ids(|c| c.agent)).await?,
        referers: look_up(db, &REFERERS, ["referer_host"], ids(|c| c.referer)).await?,
        queries: look_up(db, &TEXTS, ["value"], ids(|c| c.query)).await?,
        places: look_up(
            db,
            &PLACES,
            ["country", "province", "city", "carrier"],
            ids(|c| c.place),
        )
        .await?,
        outcomes: look_up(
            db,
            &OUTCOMES,
            ["transform_status"],
            ids(|c| Some(c.outcome)),
        )
        .await?,
    })
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
async fn look_up<const N: usize>(
    db: &impl ConnectionTrait,
    dictionary: &Dictionary,
    columns: [&str; N],
    ids: BTreeSet<i32>,
) -> Result<HashMap<i32, [Option<Text>; N]>, DbErr> {
    debug_assert!(columns.iter().all(|c| dictionary.columns.contains(c)));
    let (table, names) = (dictionary.table, columns.join(", "));
    let backend = db.get_database_backend();
    let ids: Vec<i32> = ids.into_iter().collect();
    let mut out = HashMap::with_capacity(ids.len());
    for chunk in ids.chunks(500) {
        let sql = format!(
            "SELECT id, {names} FROM {table} WHERE id IN ({})",
            vec!["?"; chunk.len()].join(", ")
        );
        let values = chunk.iter().map(|id| Value::from(*id)).collect();
        for row in db.query_all_raw(statement(backend, &sql, values)).await? {
            let mut texts: [Option<Text>; N] = std::array::from_fn(|_| None);
            for (text, column) in texts.iter_mut().zip(columns) {
                *text = row.try_get::<Option<String>>("", column)?.map(Text::from);
            }
            out.insert(row.try_get("", "id")?, texts);
        }
    }
    Ok(out)
}

/// Takes entries whose click is gone off the waiting list. Only a crash between a purge's
/// delete of clicks and its delete of their entries leaves one; reading pages joined with the
/// clicks skips it (PostgreSQL's pages delete it), and it would keep counting taking a turn
/// every second. Called when a turn found nothing to count: the list is short then. A writer
/// adds a click and its entry in one transaction, so no entry of a click being stored is seen
/// without it.
pub async fn forget_orphans(db: &impl ConnectionTrait) -> Result<(), DbErr> {
    let sql = format!(
        "DELETE FROM {WAITING} WHERE NOT EXISTS (SELECT 1 FROM {TABLE} c \
         WHERE c.at = {WAITING}.at AND c.event_key = {WAITING}.event_key)"
    );
    let backend = db.get_database_backend();
    db.execute_raw(statement(backend, &sql, vec![])).await?;
    Ok(())
}

/// Takes `clicks` off the waiting list, by their keys.
async fn forget_waiting(db: &impl ConnectionTrait, clicks: &[Waiting]) -> Result<(), DbErr> {
    let backend = db.get_database_backend();
    // Each term is one look in the list's key.
    for chunk in clicks.chunks(250) {
        let marks = vec!["(at = ? AND event_key = ?)"; chunk.len()].join(" OR ");
        let sql = format!("DELETE FROM {WAITING} WHERE {marks}");
        let values = chunk
            .iter()
            .flat_map(|click| [Value::from(click.at), Value::from(click.key.clone())])
            .collect();
        db.execute_raw(statement(backend, &sql, values)).await?;
    }
    Ok(())
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

/// Lists every click recorded from `start` to before `end` (UTC) as waiting to be counted
/// again (a recount of their day); clicks listed already stay listed once.
pub async fn list_again(
    db: &impl ConnectionTrait,
    start: chrono::NaiveDateTime,
    end: chrono::NaiveDateTime,
) -> Result<(), DbErr> {
    let backend = db.get_database_backend();
    let sql = match backend {
        DbBackend::MySql => format!(
            "INSERT IGNORE INTO {WAITING} (at, event_key) \
             SELECT at, event_key FROM {TABLE} WHERE at >= ? AND at < ?"
        ),
        _ => format!(
            "INSERT INTO {WAITING} (at, event_key) \
             SELECT at, event_key FROM {TABLE} WHERE at >= ? AND at < ? \
             ON CONFLICT (at, event_key) DO NOTHING"
        ),
    };
    let (start, end) = (micros(start), micros(end));
    db.execute_raw(statement(backend, &sql, vec![start.into(), end.into()]))
        .await?;
    Ok(())
}

/// Whether any stored click waits to be counted.
pub async fn any_waiting(db: &impl ConnectionTrait) -> Result<bool, DbErr> {
    let backend = db.get_database_backend();
    let sql = format!("SELECT at FROM {WAITING} LIMIT 1");
    Ok(db
        .query_one_raw(statement(backend, &sql, vec![]))
        .await?
        .is_some())
}
