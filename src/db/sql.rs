//! SQL written once for the three backends: placeholders, sums, and deletes in batches.

use chrono::{Datelike, NaiveDate};
use sea_orm::sea_query::Value;
use sea_orm::{ConnectionTrait, DbBackend, DbErr, Statement};

/// A SUM comes back as DECIMAL from MySQL; cast it to a 64-bit integer everywhere.
pub fn sum(backend: DbBackend, column: &str) -> String {
    let int = if backend == DbBackend::MySql {
        "SIGNED"
    } else {
        "BIGINT"
    };
    format!("CAST(SUM({column}) AS {int})")
}

/// SQL written with `?` placeholders, numbered for PostgreSQL.
pub fn statement(backend: DbBackend, sql: &str, mut values: Vec<Value>) -> Statement {
    if backend == DbBackend::Sqlite {
        // sqlx binds a day to SQLite as the text `chrono` formats it into by a pattern it
        // parses for every value: 3 % of counting's CPU a click (a day in every row it writes
        // and every day set it asks for; bench/README.md). The same text, written directly.
        for value in &mut values {
            if let Value::ChronoDate(Some(day)) = value {
                *value = Value::String(Some(day_text(*day)));
            }
        }
    }
    if backend != DbBackend::Postgres {
        return Statement::from_sql_and_values(backend, sql, values);
    }
    let mut numbered = String::with_capacity(sql.len() + 8);
    let mut n = 0;
    for ch in sql.chars() {
        if ch == '?' {
            n += 1;
            numbered.push_str(&format!("${n}"));
        } else {
            numbered.push(ch);
        }
    }
    Statement::from_sql_and_values(backend, numbered, values)
}

/// A day as SQLite keeps it, `YYYY-MM-DD`: what `chrono`'s `%F` writes (and sqlx binds).
pub fn day_text(day: NaiveDate) -> String {
    let (year, month, date) = (day.year(), day.month(), day.day());
    if !(0..=9999).contains(&year) {
        return day.format("%F").to_string();
    }
    let digits = |n: u32, width: usize, out: &mut Vec<u8>| {
        for place in (0..width).rev() {
            out.push(b'0' + (n / 10u32.pow(place as u32) % 10) as u8);
        }
    };
    let mut text = Vec::with_capacity(10);
    digits(year as u32, 4, &mut text);
    text.push(b'-');
    digits(month, 2, &mut text);
    text.push(b'-');
    digits(date, 2, &mut text);
    String::from_utf8(text).expect("ASCII digits and dashes")
}

/// `rows` in runs of at most `most` rows and about a megabyte of `size` each (at least one
/// row): what one statement writes, MariaDB's packets being bounded (16 MB by default).
pub fn in_statements<T>(
    rows: &[T],
    most: usize,
    size: impl Fn(&T) -> usize,
) -> impl Iterator<Item = &[T]> {
    let mut rest = rows;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let (mut take, mut bytes) = (0, 0);
        while take < rest.len() && take < most && (take == 0 || bytes < 1 << 20) {
            bytes += size(&rest[take]);
            take += 1;
        }
        let (run, after) = rest.split_at(take);
        rest = after;
        Some(run)
    })
}

/// A statement answering `columns` (of `b`, the table) of each row of `table` whose key is one
/// of `keys`: `key` names the key's columns (the columns of a unique index, or the first of
/// them: then every row under each), each with the type PostgreSQL is to read its parameter
/// as, and `keys` holds a row of parameters each, in that order. The list of keys is joined to
/// the index, one seek each: asked for by lists of each column's values instead, SQLite sought
/// every combination of them (as PostgreSQL's index scans do before version 17) and MariaDB
/// read every row of the day (bench/README.md).
pub fn by_keys(
    backend: DbBackend,
    table: &str,
    columns: &str,
    key: &[(&str, &str)],
    keys: Vec<Value>,
) -> Statement {
    let rows = keys.len() / key.len().max(1);
    let names: Vec<String> = (0..key.len()).map(|at| format!("k{at}")).collect();
    let names_list = names.join(", ");
    let on = (key.iter().zip(&names))
        .map(|((column, _), name)| format!("b.{column} = w.{name}"))
        .collect::<Vec<_>>()
        .join(" AND ");
    let sql = match backend {
        // A join left to PostgreSQL's planner may scan the table by stale statistics; a
        // lateral subquery seeks the key for each row of the list.
        DbBackend::Postgres => {
            let row = key.iter().map(|(_, ty)| format!("?::{ty}"));
            let row = format!("({})", row.collect::<Vec<_>>().join(", "));
            format!(
                "SELECT {columns} FROM (VALUES {}) AS w({names_list}) \
                 CROSS JOIN LATERAL (SELECT * FROM {table} b WHERE {on} OFFSET 0) b",
                vec![row; rows].join(", ")
            )
        }
        // MySQL 8 writes a list of rows `VALUES ROW(…)`, MariaDB and SQLite `VALUES (…)`:
        // selects joined are the same to both.
        DbBackend::MySql => {
            let row = format!("SELECT {}", vec!["?"; key.len()].join(", "));
            format!(
                "WITH w({names_list}) AS ({}) SELECT {columns} FROM w JOIN {table} b ON {on}",
                vec![row; rows].join(" UNION ALL ")
            )
        }
        _ => {
            let row = format!("({})", vec!["?"; key.len()].join(", "));
            format!(
                "WITH w({names_list}) AS (VALUES {}) SELECT {columns} FROM w JOIN {table} b ON {on}",
                vec![row; rows].join(", ")
            )
        }
    };
    statement(backend, &sql, keys)
}

/// Keys [`each_row_in`] names in one statement: few enough that every backend binds them (and
/// that a statement's plan stays a seek per key), many enough that a turn of 50,000 clicks
/// asks a hundred statements, not a thousand.
const IN_AT_ONCE: usize = 500;

/// Calls `each` with every row of `select` (a query up to its list, as in `SELECT id,
/// long_url FROM url_map WHERE id`) whose column is one of `keys`, asked [`IN_AT_ONCE`] keys to
/// a statement, each statement's rows let go before the next is asked; `rest` (with `values`
/// for its `?`) follows each list: more conditions, an order, a lock.
pub async fn each_row_in<K: Clone + Into<Value>>(
    db: &impl ConnectionTrait,
    (select, keys): (&str, &[K]),
    (rest, values): (&str, &[Value]),
    mut each: impl FnMut(&sea_orm::QueryResult) -> Result<(), DbErr>,
) -> Result<(), DbErr> {
    let backend = db.get_database_backend();
    for chunk in keys.chunks(IN_AT_ONCE) {
        let sql = format!("{select} IN ({}){rest}", vec!["?"; chunk.len()].join(", "));
        let mut params: Vec<Value> = chunk.iter().cloned().map(Into::into).collect();
        params.extend_from_slice(values);
        for row in db.query_all_raw(statement(backend, &sql, params)).await? {
            each(&row)?;
        }
    }
    Ok(())
}

/// Rows a text of [`ask_packed`] holds (a click is about 150 bytes of JSON): small enough
/// that each text is allocated and read while it is in the CPU's cache.
pub const BUNCH: u64 = 100;

/// The rows `sql` selects, read from SQLite as JSON texts of [`BUNCH`] rows each, in order of
/// the bunches; each row is the JSON array of `columns` (expressions over `sql`'s columns,
/// blobs in `hex()`: [`unhex`] and [`unhex_optional`] read them back). The order of rows
/// within a bunch is `sql`'s in practice, not by promise: callers sort what they parse.
///
/// sqlx hands each row from SQLite's thread to ours through a channel, and the two threads
/// woke each other for every row (a context switch a row, both cores half idle): an export
/// read row by row used 16–21 µs of CPU a click, against 8–10 µs packed, and counting read
/// its waiting clicks in 5.5–6.3 µs a click, against 3.3–3.8 packed (bench/README.md).
pub async fn ask_packed(
    db: &impl ConnectionTrait,
    columns: &str,
    sql: &str,
    values: Vec<Value>,
) -> Result<Vec<String>, DbErr> {
    let packed = format!(
        "SELECT json_group_array(json_array({columns})) AS bunch \
         FROM (SELECT *, (ROW_NUMBER() OVER () - 1) / {BUNCH} AS n FROM ({sql})) \
         GROUP BY n ORDER BY n"
    );
    let backend = db.get_database_backend();
    db.query_all_raw(statement(backend, &packed, values))
        .await?
        .iter()
        .map(|row| row.try_get("", "bunch"))
        .collect()
}

/// [`ask_packed`] in one text, for statements that select a bounded number of rows (a page
/// of waiting clicks, a turn's visitors): numbering the rows into bunches made SQLite sort
/// them twice (a window and a `GROUP BY`, each in a temporary B-tree), which took a third of
/// the time it spent reading a page of waiting clicks (bench/README.md).
pub async fn ask_packed_whole(
    db: &impl ConnectionTrait,
    columns: &str,
    sql: &str,
    values: Vec<Value>,
) -> Result<String, DbErr> {
    // An aggregate without `GROUP BY` answers one row, `[]` when nothing matched.
    let packed = format!("SELECT json_group_array(json_array({columns})) AS bunch FROM ({sql})");
    let backend = db.get_database_backend();
    match db
        .query_one_raw(statement(backend, &packed, values))
        .await?
    {
        Some(row) => row.try_get("", "bunch"),
        None => Ok("[]".to_owned()),
    }
}

/// Adds to `out` each row of the JSON array `text` ([`ask_packed`]'s or
/// [`ask_packed_whole`]'s), read as a `P` and made a `T` by `make`, as it is parsed: parsed
/// into a list of its own first, a bunch of 10,000 was grown and copied on the way (mimalloc
/// gives the pages back at once, so the kernel handed them out again each time). `rows` names
/// them in an error.
pub fn unpack_each<'t, P: serde::Deserialize<'t>, T>(
    text: &'t str,
    rows: &str,
    out: &mut Vec<T>,
    make: impl FnMut(P) -> Result<T, DbErr>,
) -> Result<(), DbErr> {
    use serde::de::{DeserializeSeed, Error, SeqAccess, Visitor};
    use std::marker::PhantomData;
    struct Each<'o, P, T, F> {
        out: &'o mut Vec<T>,
        make: F,
        row: PhantomData<fn() -> P>,
    }
    impl<'de, P: serde::Deserialize<'de>, T, F: FnMut(P) -> Result<T, DbErr>> DeserializeSeed<'de>
        for Each<'_, P, T, F>
    {
        type Value = ();
        fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_seq(self)
        }
    }
    impl<'de, P: serde::Deserialize<'de>, T, F: FnMut(P) -> Result<T, DbErr>> Visitor<'de>
        for Each<'_, P, T, F>
    {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a list of rows")
        }
        fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
            while let Some(row) = seq.next_element::<P>()? {
                self.out.push((self.make)(row).map_err(A::Error::custom)?);
            }
            Ok(())
        }
    }
    let mut json = serde_json::Deserializer::from_str(text);
    let each = Each {
        out,
        make,
        row: PhantomData,
    };
    (each.deserialize(&mut json))
        .and_then(|()| json.end())
        .map_err(|err| DbErr::Custom(format!("{rows} read as JSON: {err}")))
}

/// A blob as [`ask_packed`] spells it (`hex()`).
pub fn unhex(hex: &str) -> Result<Vec<u8>, DbErr> {
    crate::digest::from_hex(hex.as_bytes())
        .ok_or_else(|| DbErr::Custom(format!("'{hex}' is not hex")))
}

/// A blob that may be NULL as [`ask_packed`] spells it: SQLite's `hex(NULL)` is the empty
/// text, so an empty blob reads as none.
pub fn unhex_optional(hex: Option<&str>) -> Result<Option<Vec<u8>>, DbErr> {
    hex.filter(|hex| !hex.is_empty()).map(unhex).transpose()
}

/// Within the transaction `txn`, has PostgreSQL look rows up by their index whatever it
/// estimates (nothing elsewhere). For statements that name the rows they want by a list of
/// keys, on tables that are queues (the clicks on their way to webhooks, the outbox): their
/// size swings from nothing to hundreds of thousands of rows within a campaign burst, and at
/// a few tens of thousands the planner judged reading the whole table cheaper than two
/// thousand index look-ups. It was not: 20–70 ms for each chunk of keys instead of 2–4 ms
/// (auto_explain, bench/README.md), several times a second.
pub async fn by_index(txn: &impl ConnectionTrait) -> Result<(), DbErr> {
    if txn.get_database_backend() == DbBackend::Postgres {
        txn.execute_unprepared("SET LOCAL enable_seqscan = off")
            .await?;
    }
    Ok(())
}

/// `SELECT {columns} FROM {table} WHERE {rest} AND url_map_id IN (…links…)`, `values` bound
/// to the placeholders of `rest`.
///
/// On PostgreSQL it is phrased as one look-up per link (a lateral subquery the planner may
/// not merge), so that each is a seek of an index holding the link and the day: as a single
/// `IN` list, a planner that believed today held few rows (statistics gathered before the day
/// began, or before a campaign's links had any) read every row of the day for each chunk of
/// links, 100 to 400 ms a statement where the seeks take 6 to 10 ms (bench/README.md).
pub fn per_link(
    backend: DbBackend,
    columns: &str,
    table: &str,
    links: &[i64],
    rest: &str,
    values: Vec<Value>,
) -> Statement {
    let marks = vec!["?"; links.len()].join(", ");
    let links = links.iter().map(|link| Value::from(*link));
    match backend {
        DbBackend::Postgres => statement(
            backend,
            &format!(
                "SELECT {columns} FROM unnest(ARRAY[{marks}]::bigint[]) AS wanted(link) \
                 CROSS JOIN LATERAL (SELECT {columns} FROM {table} \
                 WHERE url_map_id = wanted.link AND {rest} OFFSET 0) found"
            ),
            links.chain(values).collect(),
        ),
        _ => statement(
            backend,
            &format!("SELECT {columns} FROM {table} WHERE {rest} AND url_map_id IN ({marks})"),
            values.into_iter().chain(links).collect(),
        ),
    }
}

/// Deletes the rows of `table` whose `column` (a key the table is ordered by, or indexed on)
/// is below `below`, `batch` rows a statement, so that neither the click writer nor
/// the dashboards wait behind one huge delete; returns how many.
pub async fn delete_in_batches(
    db: &impl ConnectionTrait,
    table: &str,
    column: &str,
    below: i64,
    batch: i64,
) -> Result<u64, DbErr> {
    let backend = db.get_database_backend();
    // The last key of the next batch: DELETE … LIMIT is not portable, and MySQL refuses a
    // LIMIT inside `IN (…)`.
    let last = format!(
        "SELECT MAX({column}) AS last FROM (SELECT {column} FROM {table} WHERE {column} < ? \
         ORDER BY {column} LIMIT {batch}) batch"
    );
    let delete = format!("DELETE FROM {table} WHERE {column} <= ? AND {column} < ?");
    let mut deleted = 0;
    loop {
        let row = db
            .query_one_raw(statement(backend, &last, vec![below.into()]))
            .await?;
        // MAX of a PostgreSQL INTEGER column (the dictionaries' `seen`) is an int4.
        let last = row.map(|row| {
            row.try_get::<Option<i64>>("", "last").or_else(|_| {
                row.try_get::<Option<i32>>("", "last")
                    .map(|last| last.map(i64::from))
            })
        });
        let Some(last) = last.transpose()?.flatten() else {
            return Ok(deleted);
        };
        deleted += db
            .execute_raw(statement(backend, &delete, vec![last.into(), below.into()]))
            .await?
            .rows_affected();
    }
}

/// `INSERT … ON CONFLICT DO UPDATE` adding to the stored numbers, in each backend's words.
pub fn add_on_conflict(backend: DbBackend, table: &str, key: &str, columns: &[&str]) -> String {
    let sums: Vec<String> = columns
        .iter()
        .map(|c| match backend {
            DbBackend::MySql => format!("{c} = {c} + VALUES({c})"),
            _ => format!("{c} = {table}.{c} + excluded.{c}"),
        })
        .collect();
    match backend {
        DbBackend::MySql => format!("ON DUPLICATE KEY UPDATE {}", sums.join(", ")),
        _ => format!("ON CONFLICT ({key}) DO UPDATE SET {}", sums.join(", ")),
    }
}

/// The tables [`refresh_statistics`] keeps, by what is done to each.
#[derive(Clone, Copy, Debug, Default)]
pub struct Upkeep<'a> {
    /// Statistics taken afresh.
    pub analyze: &'a [&'a str],
    /// Rows deleted as fast as they are added (queues): always vacuumed.
    pub vacuum: &'a [&'a str],
    /// Rows updated in place: analysed, and vacuumed too where autovacuum is off.
    pub rewritten: &'a [&'a str],
}

/// On PostgreSQL, keeps the tables of `upkeep` as it says; elsewhere nothing.
///
/// Statements are prepared once a connection, and PostgreSQL keeps the plan it made then
/// until a table's statistics change: where autovacuum is off, a plan made while the click
/// tables were nearly empty (a hash join over a whole table) stayed while they grew to
/// millions of rows, and a counting turn's page of 10,000 clicks took minutes instead of
/// milliseconds (bench/README.md). `ANALYZE` replaces those plans; `VACUUM` keeps a queue
/// table from growing by every row it ever held, and a rewritten table by every version of
/// its rows (without autovacuum, a day's sets held three dead rows for each live one after
/// 600,000 clicks).
pub async fn refresh_statistics(
    db: &impl ConnectionTrait,
    upkeep: Upkeep<'_>,
) -> Result<(), DbErr> {
    if db.get_database_backend() != DbBackend::Postgres {
        return Ok(());
    }
    let mut analyze = upkeep.analyze.to_vec();
    let mut vacuum = upkeep.vacuum.to_vec();
    if !upkeep.rewritten.is_empty() {
        if autovacuum(db).await? {
            analyze.extend_from_slice(upkeep.rewritten);
        } else {
            vacuum.extend_from_slice(upkeep.rewritten);
        }
    }
    // Neither runs inside a transaction block, nor as a prepared statement.
    if !vacuum.is_empty() {
        db.execute_unprepared(&format!("VACUUM (ANALYZE) {}", vacuum.join(", ")))
            .await?;
    }
    if !analyze.is_empty() {
        db.execute_unprepared(&format!("ANALYZE {}", analyze.join(", ")))
            .await?;
    }
    Ok(())
}

/// Rows after which a task that adds them first refreshes the database's statistics of the
/// tables it reads (PostgreSQL; see [`refresh_statistics`]), and the most it adds between two
/// refreshes: in between, each refresh waits for as many rows again as were added before it,
/// so that the refreshes follow the tables' growth (as autovacuum's rule of a tenth of a table
/// does) and cost nothing worth naming once they are large.
const FIRST_REFRESH: u64 = 20_000;
const MOST_BETWEEN_REFRESHES: u64 = 1_000_000;

/// When a task (counting, handing clicks on to webhooks) next refreshes the statistics.
pub struct Refresh {
    added: u64,
    next: u64,
}

impl Refresh {
    pub fn new() -> Self {
        Self {
            added: 0,
            next: FIRST_REFRESH,
        }
    }

    /// Adds a turn's rows; true when a refresh is due (the next is then planned).
    pub fn due(&mut self, rows: u64) -> bool {
        self.added += rows;
        if self.added < self.next {
            return false;
        }
        self.next = self.added + self.added.min(MOST_BETWEEN_REFRESHES);
        true
    }
}

impl Default for Refresh {
    fn default() -> Self {
        Self::new()
    }
}

/// Whether PostgreSQL's autovacuum runs (it is off on some test and bench machines).
async fn autovacuum(db: &impl ConnectionTrait) -> Result<bool, DbErr> {
    let sql = "SELECT current_setting('autovacuum') AS setting";
    let row = db
        .query_one_raw(Statement::from_string(DbBackend::Postgres, sql))
        .await?;
    Ok(row
        .map(|row| row.try_get::<String>("", "setting"))
        .transpose()?
        .is_none_or(|on| on == "on"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_day_is_bound_to_sqlite_as_chrono_writes_it() {
        let first = NaiveDate::from_ymd_opt(1999, 12, 25).unwrap();
        let days = (0..12_000).map(|n| first + chrono::Days::new(n));
        let edges = [
            (0, 1, 1),
            (9, 9, 9),
            (9999, 12, 31),
            (10_000, 1, 1),
            (-1, 6, 30),
        ];
        let edges = edges.map(|(y, m, d)| NaiveDate::from_ymd_opt(y, m, d).unwrap());
        for day in days.chain(edges) {
            assert_eq!(day_text(day), day.format("%F").to_string());
        }
    }

    #[test]
    fn statistics_are_refreshed_as_the_added_rows_double_then_every_million() {
        let mut refresh = Refresh::new();
        assert!(!refresh.due(10_000));
        assert!(refresh.due(10_000));
        assert!(!refresh.due(19_999));
        assert!(refresh.due(1));
        assert_eq!(refresh.next, 80_000);
        for _ in 0..30 {
            refresh.due(100_000);
        }
        assert_eq!(refresh.added, 3_040_000);
        assert!(refresh.next - refresh.added <= MOST_BETWEEN_REFRESHES);
        assert!(refresh.due(MOST_BETWEEN_REFRESHES));
    }

    #[test]
    fn packed_blobs_read_back_as_written_and_damage_is_an_error_not_a_panic() {
        assert_eq!(unhex("00aFff").unwrap(), vec![0x00, 0xaf, 0xff]);
        assert_eq!(unhex("").unwrap(), Vec::<u8>::new());
        // SQLite's hex(NULL) is the empty text: no blob.
        assert_eq!(unhex_optional(Some("")).unwrap(), None);
        assert_eq!(unhex_optional(None).unwrap(), None);
        assert_eq!(unhex_optional(Some("7f")).unwrap(), Some(vec![0x7f]));
        for damaged in ["abc", "zz", "0g"] {
            assert!(unhex(damaged).is_err(), "{damaged}");
            assert!(unhex_optional(Some(damaged)).is_err(), "{damaged}");
        }
    }
}
