//! The waiting list: the stored clicks not counted yet (`click_waiting`), read a page at a time
//! as counting needs them (numbers and dictionary ids, not texts), taken off in the counting
//! turn's transaction, and listed again for a recount.

use super::dictionary::{AGENTS, OUTCOMES, PLACES, REFERERS, TEXTS, look_up};
use super::insert::{TABLE, WAITING, micros};
use super::row::Text;
use crate::db::sql::{ask_packed_whole, statement, unhex, unhex_optional, unpack_each};
use crate::db::sqlite_handle::{Column, Connection, Row, on_connection_here};
use sea_orm::{ConnectionTrait, DbBackend, DbErr, QueryResult, Value};
use std::collections::{BTreeSet, HashMap};

/// Waiting clicks read per statement: the list's keys are taken first, at most this many,
/// so that the database looks each click up by its key. (With the join left to PostgreSQL's
/// planner, 50,000 waiting clicks were joined by reading the whole click table.)
const PAGE: u64 = 10_000;

/// The most clicks a turn reserves room for before it reads them (a turn is at most 100,000).
const MOST_AT_ONCE: u64 = 100_000;

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
        _ => read_page(
            backend,
            last.map(|last| (last.at, last.key.as_slice())),
            want,
        ),
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
    peek_waiting_after(db, limit, None).await
}

/// [`peek_waiting`], of the clicks after `after` (the last click of a turn under way, which
/// takes those before it).
pub async fn peek_waiting_after(
    db: &impl ConnectionTrait,
    limit: u64,
    after: Option<(i64, &[u8])>,
) -> Result<Vec<Waiting>, DbErr> {
    let backend = db.get_database_backend();
    pages(db, limit, |last, want| {
        let last = last.map(|last| (last.at, last.key.as_slice())).or(after);
        read_page(backend, last, want)
    })
    .await
}

/// [`peek_waiting_after`] on SQLite, read on a connection's own handle
/// ([`crate::db::sqlite_handle`]) in a read transaction of its own, after `first` (which
/// reads, in the same transaction, what tells whether the clicks are still what the caller's
/// own transaction would read). Read through sqlx, the page came as one JSON text with its
/// blobs in hex, and making and parsing that text was half of what reading it cost.
pub async fn peek_waiting_sqlite<M>(
    pool: &sea_orm::sqlx::SqlitePool,
    limit: u64,
    after: Option<(i64, &[u8])>,
    first: impl FnOnce(&Connection) -> Result<M, String>,
) -> Result<(M, Vec<Waiting>), DbErr> {
    let range = match after {
        None => "",
        Some(_) => "WHERE (at, event_key) > (?, ?)",
    };
    let sql = format!(
        "{SELECT_WAITING} FROM (SELECT at, event_key FROM {WAITING} {range} \
         ORDER BY at, event_key LIMIT ?) w \
         JOIN {TABLE} c ON c.at = w.at AND c.event_key = w.event_key"
    );
    let sql = std::ffi::CString::new(sql).expect("no NUL in the statement");
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    // On the calling thread: counting's, or the one working out its next turn (see
    // `on_connection_here`).
    let (marks, mut clicks) = on_connection_here(pool, |connection| {
        connection.transaction(c"BEGIN", |connection| {
            let marks = first(connection)?;
            let mut read = connection.prepare(&sql, "the read of waiting clicks")?;
            let mut next = 0;
            if let Some((at, key)) = after {
                read.bind_int(0, Some(at));
                read.bind_blob(1, Some(key));
                next = 2;
            }
            read.bind_int(next, Some(limit));
            let mut clicks = Vec::with_capacity(limit.clamp(0, MOST_AT_ONCE as i64) as usize);
            while let Some(row) = read.next_row("reading waiting clicks")? {
                clicks.push(from_row(&row)?);
            }
            drop(read);
            Ok((marks, clicks))
        })
    })
    .await?;
    // Sorted once read, as SQLite's pages are ([`pages`]).
    clicks.sort_unstable_by(|a, b| (a.at, &a.key).cmp(&(b.at, &b.key)));
    Ok((marks, clicks))
}

/// A waiting click as [`SELECT_WAITING`]'s columns give it, in their order.
fn from_row(row: &Row) -> Result<Waiting, String> {
    let int = |index| match row.column(index) {
        Column::Int(number) => Ok(Some(number)),
        Column::Null => Ok(None),
        other => Err(format!(
            "a waiting click's column {index} is {other:?}, not a number"
        )),
    };
    let blob = |index| match row.column(index) {
        // As `hex` read it: a text's bytes are taken as they are.
        Column::Blob(bytes) | Column::Text(bytes) => Ok(Some(bytes.to_vec())),
        Column::Null => Ok(None),
        other => Err(format!(
            "a waiting click's column {index} is {other:?}, not bytes"
        )),
    };
    let small = |index| {
        int(index)?
            .map(|number| {
                i32::try_from(number)
                    .map_err(|_| format!("a waiting click's column {index} is out of range"))
            })
            .transpose()
    };
    Ok(Waiting {
        at: given(0, int(0)?)?,
        key: blob(1)?.unwrap_or_default(),
        link: int(2)?,
        ip: blob(3)?.unwrap_or_default(),
        visitor: blob(4)?,
        bot: given(5, int(5)?)? != 0,
        outcome: given(6, small(6)?)?,
        code: given(7, small(7)?)?,
        agent: small(8)?,
        referer: small(9)?,
        query: small(10)?,
        place: small(11)?,
    })
}

/// `value`, which column `index` of a waiting click must have.
fn given<T>(index: usize, value: Option<T>) -> Result<T, String> {
    value.ok_or_else(|| format!("a waiting click's column {index} is empty"))
}

/// What may have happened to the waiting list since a turn's clicks were read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Since {
    /// Clicks were only added: no turn came between, and none of the clicks read can have
    /// been purged. Then how many are listed tells whether the clicks read are still there.
    OnlyAdded,
    /// Clicks may also have been taken off: each one read is looked for.
    Anything,
}

/// Takes the front of the waiting list off it when it is exactly the clicks `keys` (in
/// order); false, taking nothing, when anything was added among them or taken since they were
/// read.
pub async fn take_front(
    db: &impl ConnectionTrait,
    keys: &[(i64, Vec<u8>)],
    since: Since,
) -> Result<bool, DbErr> {
    let Some((at, key)) = keys.last() else {
        return Ok(false);
    };
    let backend = db.get_database_backend();
    let (range, values) = key_range(backend, Bound::UpTo, (*at, key));
    match since {
        // The clicks read are all still listed: when the front up to the last holds no more
        // than they are, it is they. Counting the range walks the list's key; reading it back
        // sent every entry across to compare (about 2 µs a click, a fifth of the time a
        // turn of 50,000 held SQLite's write lock; bench/README.md).
        Since::OnlyAdded => {
            let sql = format!("SELECT COUNT(*) AS listed FROM {WAITING} WHERE {range}");
            let row = db.query_one_raw(statement(backend, &sql, values)).await?;
            let listed = row.map_or(Ok(0), |row| row.try_get::<i64>("", "listed"))?;
            if listed != keys.len() as i64 {
                return Ok(false);
            }
        }
        Since::Anything => {
            let sql = format!(
                "SELECT at, event_key FROM {WAITING} WHERE {range} ORDER BY at, event_key LIMIT {}",
                keys.len() + 1
            );
            let rows = db.query_all_raw(statement(backend, &sql, values)).await?;
            if rows.len() != keys.len() {
                return Ok(false);
            }
            for (row, (at, key)) in rows.iter().zip(keys) {
                let listed: (i64, Vec<u8>) =
                    (row.try_get("", "at")?, row.try_get("", "event_key")?);
                if listed.0 != *at || listed.1 != *key {
                    return Ok(false);
                }
            }
        }
    }
    forget_front(db, (*at, key)).await?;
    Ok(true)
}

/// Takes the clicks `keys` off the waiting list when every one of them is still on it; false,
/// taking nothing, when any was taken since they were read. For a turn worked out ahead whose
/// clicks are no longer the list's front ([`take_front`]) because earlier clicks were stored
/// meanwhile (the writer's spool, written after the newer clicks it held in memory, as after
/// a burst): those wait for the next turn, instead of this turn reading the list again while
/// it holds SQLite's write lock.
pub async fn take_listed(
    db: &impl ConnectionTrait,
    keys: &[(i64, Vec<u8>)],
    since: Since,
) -> Result<bool, DbErr> {
    if keys.is_empty() {
        return Ok(false);
    }
    let backend = db.get_database_backend();
    let chunks = || {
        keys.chunks(250)
            .map(|chunk| any_key(chunk.iter().map(|(at, key)| (*at, &key[..]))))
    };
    if since == Since::Anything {
        let mut listed = 0;
        for (terms, values) in chunks() {
            let sql = format!("SELECT COUNT(*) AS listed FROM {WAITING} WHERE {terms}");
            if let Some(row) = db.query_one_raw(statement(backend, &sql, values)).await? {
                listed += row.try_get::<i64>("", "listed")?;
            }
        }
        if listed != keys.len() as i64 {
            return Ok(false);
        }
    }
    for (terms, values) in chunks() {
        let sql = format!("DELETE FROM {WAITING} WHERE {terms}");
        db.execute_raw(statement(backend, &sql, values)).await?;
    }
    Ok(true)
}

/// The condition on the waiting list for any of the clicks `keys` (time and key), each term
/// one look in the list's key, and its values.
fn any_key<'a>(keys: impl ExactSizeIterator<Item = (i64, &'a [u8])>) -> (String, Vec<Value>) {
    let terms = vec!["(at = ? AND event_key = ?)"; keys.len()].join(" OR ");
    let values = keys
        .flat_map(|(at, key)| [Value::from(at), Value::from(key.to_vec())])
        .collect();
    (terms, values)
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
fn read_page(backend: DbBackend, last: Option<(i64, &[u8])>, want: u64) -> (String, Vec<Value>) {
    let (range, values) = match last {
        None => (String::new(), vec![]),
        Some(last) => {
            let (range, values) = key_range(backend, Bound::After, last);
            (format!("WHERE {range}"), values)
        }
    };
    // SQLite's pages are sorted once parsed ([`pages`]): ordering the joined rows made it sort
    // them in a temporary B-tree.
    let order = match backend {
        DbBackend::Sqlite => "",
        _ => "ORDER BY w.at, w.event_key",
    };
    let sql = format!(
        "{SELECT_WAITING} FROM (SELECT at, event_key FROM {WAITING} {range} \
         ORDER BY at, event_key LIMIT {want}) w \
         JOIN {TABLE} c ON c.at = w.at AND c.event_key = w.event_key {order}"
    );
    (sql, values)
}

/// Up to `limit` waiting clicks, read a page of at most [`PAGE`] at a time by the statement
/// `page` gives for the last click read so far and the page's size, until a page comes back
/// short. SQLite's pages are read packed, a page in one text ([`ask_packed_whole`]).
async fn pages(
    db: &impl ConnectionTrait,
    limit: u64,
    page: impl Fn(Option<&Waiting>, u64) -> (String, Vec<Value>),
) -> Result<Vec<Waiting>, DbErr> {
    let backend = db.get_database_backend();
    // Room for the whole turn at once: grown by doubling, the list was copied over and over
    // into pages the kernel had to hand out again (mimalloc gives freed pages back at once,
    // `main.rs`), and its last doubling reserved room for up to twice the turn.
    let mut clicks: Vec<Waiting> = Vec::with_capacity(limit.min(MOST_AT_ONCE) as usize);
    while (clicks.len() as u64) < limit {
        let want = (limit - clicks.len() as u64).min(PAGE);
        let (sql, values) = page(clicks.last(), want);
        let before = clicks.len();
        if backend == DbBackend::Sqlite {
            unpack(
                &ask_packed_whole(db, PACKED, &sql, values).await?,
                &mut clicks,
            )?;
            clicks[before..].sort_unstable_by(|a, b| (a.at, &a.key).cmp(&(b.at, &b.key)));
        } else {
            for row in db.query_all_raw(statement(backend, &sql, values)).await? {
                clicks.push(read(&row)?);
            }
        }
        if ((clicks.len() - before) as u64) < want {
            break;
        }
    }
    Ok(clicks)
}

/// A waiting click read as a row.
fn read(row: &QueryResult) -> Result<Waiting, DbErr> {
    Ok(Waiting {
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
    })
}

/// [`ask_packed_whole`]'s columns for a waiting click as [`SELECT_WAITING`] names them.
const PACKED: &str = "at, hex(event_key), link, hex(ip), hex(visitor), bot, outcome, code, \
     agent, referer, query, place";

/// Adds the clicks of a page read by [`ask_packed_whole`] to `clicks`.
fn unpack(text: &str, clicks: &mut Vec<Waiting>) -> Result<(), DbErr> {
    /// A waiting click as [`PACKED`] spells it; blobs in hex.
    #[derive(serde::Deserialize)]
    struct Packed<'a>(
        i64,
        &'a str,
        Option<i64>,
        &'a str,
        Option<&'a str>,
        u8,
        i32,
        i32,
        Option<i32>,
        Option<i32>,
        Option<i32>,
        Option<i32>,
    );
    unpack_each(text, "waiting clicks", clicks, |p: Packed| {
        Ok(Waiting {
            at: p.0,
            key: unhex(p.1)?,
            link: p.2,
            ip: unhex(p.3)?,
            visitor: unhex_optional(p.4)?,
            bot: p.5 != 0,
            outcome: p.6,
            code: p.7,
            agent: p.8,
            referer: p.9,
            query: p.10,
            place: p.11,
        })
    })
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
    for chunk in clicks.chunks(250) {
        let (terms, values) = any_key(chunk.iter().map(|click| (click.at, &click.key[..])));
        let sql = format!("DELETE FROM {WAITING} WHERE {terms}");
        db.execute_raw(statement(backend, &sql, values)).await?;
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_packed_page_adds_its_clicks_after_those_read_before() {
        let mut clicks = Vec::new();
        unpack(
            r#"[[5,"0A0B",7,"01000009","",1,2,3,null,4,null,6]]"#,
            &mut clicks,
        )
        .unwrap();
        unpack("[]", &mut clicks).unwrap();
        unpack(
            r#"[[6,"0C",null,"01",null,0,2,3,1,null,2,null]]"#,
            &mut clicks,
        )
        .unwrap();
        let read: Vec<_> = (clicks.iter())
            .map(|c| {
                (
                    c.at,
                    c.key.clone(),
                    c.link,
                    c.ip.clone(),
                    c.visitor.clone(),
                    c.bot,
                )
            })
            .collect();
        assert_eq!(
            read,
            [
                (5, vec![10, 11], Some(7), vec![1, 0, 0, 9], None, true),
                (6, vec![12], None, vec![1], None, false),
            ]
        );
        assert_eq!(
            (clicks[0].agent, clicks[0].referer, clicks[0].place),
            (None, Some(4), Some(6))
        );
        assert_eq!((clicks[1].agent, clicks[1].query), (Some(1), Some(2)));
        // Anything else is refused, saying what.
        for bad in [
            r#"[[5,"XY",7,"01","",1,2,3,null,4,null,6]]"#,
            "[[5]]",
            "[] x",
            "{}",
        ] {
            let err = unpack(bad, &mut clicks).unwrap_err().to_string();
            assert!(err.contains("waiting clicks read as JSON"), "{bad}: {err}");
        }
    }
}
