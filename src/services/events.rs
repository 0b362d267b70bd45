//! Getting the raw clicks out: every stored click of a range of days, with readable fields, as
//! NDJSON or CSV, page by page in constant memory, resumable from a cursor. The CLI
//! (`inklink events export`) and the API (`GET /api/v1/events`) stream the same pages.

use super::audit::Actor;
use crate::clickstore::stored::{self, Answer, Dictionaries, Stored};
use crate::rules::Tag;
use crate::stats::days::day_start;
use chrono::NaiveDate;
use chrono_tz::Tz;
use futures_util::Stream;
use sea_orm::{DatabaseConnection, DbErr, Value};
use tokio::task::{JoinHandle, spawn_blocking};

/// Clicks read per statement.
const PAGE: u64 = 5_000;
/// Longest range exported at once.
pub const MAX_DAYS: i64 = 366;

#[derive(Debug, thiserror::Error, crate::i18n::Says, PartialEq, Eq)]
pub enum EventsError {
    #[error("'{0}' is not an export format; use ndjson or csv")]
    Format(String),
    #[error("'{0}' is not a cursor of this export; use the cursor of the last line received")]
    Cursor(String),
    #[error("the start {from} is after the end {to}")]
    Reversed { from: NaiveDate, to: NaiveDate },
    #[error("at most {MAX_DAYS} days at a time; this range has {0}")]
    TooLong(i64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Ndjson,
    Csv,
}

impl Format {
    pub fn parse(text: Option<&str>) -> Result<Self, EventsError> {
        match text.map(str::trim).unwrap_or("ndjson") {
            "" | "ndjson" | "jsonl" => Ok(Self::Ndjson),
            "csv" => Ok(Self::Csv),
            other => Err(EventsError::Format(other.chars().take(40).collect())),
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Self::Ndjson => "application/x-ndjson",
            Self::Csv => "text/csv; charset=utf-8",
        }
    }

    pub fn extension(self) -> &'static str {
        match self {
            Self::Ndjson => "ndjson",
            Self::Csv => "csv",
        }
    }
}

/// Where an export goes on from: the last click sent (its time and key).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cursor {
    at: i64,
    key: Vec<u8>,
}

impl Cursor {
    pub fn parse(text: &str) -> Result<Self, EventsError> {
        let bad = || EventsError::Cursor(text.chars().take(80).collect());
        let (at, key) = text.trim().split_once('-').ok_or_else(bad)?;
        let at = at.parse().map_err(|_| bad())?;
        if key.len() > 128 {
            return Err(bad());
        }
        let key = crate::digest::from_hex(key.as_bytes()).ok_or_else(bad)?;
        Ok(Self { at, key })
    }

    /// The text of the cursor of the click at `at` with key `key` (written for every
    /// exported click, so without making a cursor first).
    fn text(at: i64, key: &[u8]) -> String {
        let mut out = at.to_string();
        out.push('-');
        out.push_str(&crate::digest::hex(key));
        out
    }
}

impl std::fmt::Display for Cursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&Self::text(self.at, &self.key))
    }
}

/// Which clicks: the days from `from` to `to` (both included, in the server's time zone), and
/// at most one link or the links of one tag; an operator's own links only.
#[derive(Clone, Debug)]
pub struct ExportFilter {
    pub from: NaiveDate,
    pub to: NaiveDate,
    pub link: Option<i64>,
    pub tag: Option<Tag>,
    /// Only the links this operator (a user or an API key) created.
    pub creator: Option<(&'static str, i64)>,
}

impl ExportFilter {
    pub fn new(
        from: NaiveDate,
        to: NaiveDate,
        link: Option<i64>,
        tag: Option<Tag>,
        actor: &Actor,
    ) -> Result<Self, EventsError> {
        if from > to {
            return Err(EventsError::Reversed { from, to });
        }
        let days = (to - from).num_days() + 1;
        if days > MAX_DAYS {
            return Err(EventsError::TooLong(days));
        }
        let creator = match actor.is_admin() {
            true => None,
            false => actor.id().map(|id| (actor.kind(), id)),
        };
        Ok(Self {
            from,
            to,
            link,
            tag,
            creator,
        })
    }
}

/// Asks for the next page of clicks after `after`.
async fn ask(
    db: &DatabaseConnection,
    tz: Tz,
    filter: &ExportFilter,
    after: Option<&Cursor>,
    limit: u64,
) -> Result<Answer, DbErr> {
    let micros = |day: NaiveDate| {
        day_start(day, tz)
            .map(|t| t.and_utc().timestamp_micros())
            .unwrap_or(i64::MAX)
    };
    // One lower bound on the time: given two, SQLite seeks by the range's start and filters
    // every click up to the cursor, so each page read all the pages before it.
    let start = micros(filter.from).max(after.map_or(i64::MIN, |cursor| cursor.at));
    let end = filter.to.succ_opt().map_or(i64::MAX, micros);
    let mut sql = String::from("c.at >= ? AND c.at < ?");
    let mut values: Vec<Value> = vec![start.into(), end.into()];
    if let Some(cursor) = after {
        match db.get_database_backend() {
            sea_orm::DbBackend::MySql => {
                sql.push_str(" AND (c.at > ? OR (c.at = ? AND c.event_key > ?))");
                values.extend([
                    cursor.at.into(),
                    cursor.at.into(),
                    cursor.key.clone().into(),
                ]);
            }
            _ => {
                sql.push_str(" AND (c.at, c.event_key) > (?, ?)");
                values.extend([cursor.at.into(), cursor.key.clone().into()]);
            }
        }
    }
    if let Some(link) = filter.link {
        sql.push_str(" AND c.link = ?");
        values.push(link.into());
    }
    if let Some(tag) = &filter.tag {
        sql.push_str(" AND c.link IN (SELECT link_id FROM link_tag WHERE tag = ?)");
        values.push(tag.as_str().into());
    }
    if let Some((kind, id)) = filter.creator {
        sql.push_str(
            " AND c.link IN (SELECT id FROM url_map WHERE creator_kind = ? AND creator_id = ?)",
        );
        values.extend([kind.into(), id.into()]);
    }
    stored::ask(db, &sql, values, Some(limit)).await
}

/// The columns of the CSV, in order (NDJSON has the same names).
pub const COLUMNS: [&str; 22] = [
    "time",
    "code",
    "link_id",
    "host",
    "address",
    "visitor",
    "user_agent",
    "browser",
    "browser_version",
    "os",
    "os_version",
    "device",
    "bot",
    "referrer",
    "query",
    "country",
    "province",
    "city",
    "carrier",
    "outcome",
    "target_rule",
    "cursor",
];

/// A field of an exported click.
enum Field<'a> {
    Null,
    Bool(bool),
    Number(i64),
    Text(&'a str),
}

/// Hands each field of `click` to `put`, in [`COLUMNS`]' order: the one definition of what
/// an exported click says, written out as NDJSON, CSV or a webhook's JSON.
fn fields(click: &Stored, mut put: impl FnMut(Field)) {
    let row = &click.row;
    fn text(t: &Option<crate::clickstore::row::Text>) -> Field<'_> {
        t.as_deref().map_or(Field::Null, Field::Text)
    }
    fn filled(t: &str) -> Field<'_> {
        match t.is_empty() {
            true => Field::Null,
            false => Field::Text(t),
        }
    }
    put(Field::Text(&rfc3339(row.record_time)));
    put(Field::Text(&row.compression_code));
    put(row.url_map_id.map_or(Field::Null, Field::Number));
    put(text(&row.host));
    put(filled(&row.client_ip.to_string()));
    put(filled(&row.unique_identity.to_string()));
    put(text(&row.user_agent));
    put(text(&row.agent.browser));
    put(text(&row.agent.browser_version));
    put(text(&row.agent.os));
    put(text(&row.agent.os_version));
    put(text(&row.agent.device));
    put(Field::Bool(row.agent.is_bot));
    put(text(&row.referer));
    put(text(&row.query_string));
    put(text(&row.country));
    put(text(&row.province));
    put(text(&row.city));
    put(text(&row.carrier));
    put(Field::Text(row.outcome.label()));
    put(row
        .outcome
        .target_rule()
        .map_or(Field::Null, |rule| Field::Text(rule.as_str())));
    put(Field::Text(&Cursor::text(click.at, &click.key)));
}

/// A time as chrono's `to_rfc3339` writes it (`2026-11-27T02:13:55.123456+00:00`), without
/// the formatting machinery: an export writes one a click.
fn rfc3339(time: chrono::NaiveDateTime) -> String {
    use chrono::{Datelike, Timelike};
    fn digits(out: &mut String, value: u32, width: usize) {
        let mut buffer = [b'0'; 9];
        let mut rest = value;
        for slot in buffer[..width].iter_mut().rev() {
            *slot = b'0' + (rest % 10) as u8;
            rest /= 10;
        }
        buffer[..width]
            .iter()
            .for_each(|b| out.push(char::from(*b)));
    }
    let year = match u32::try_from(time.year()) {
        Ok(year) if year <= 9999 => year,
        _ => return time.and_utc().to_rfc3339(),
    };
    let mut out = String::with_capacity(32);
    digits(&mut out, year, 4);
    out.push('-');
    digits(&mut out, time.month(), 2);
    out.push('-');
    digits(&mut out, time.day(), 2);
    out.push('T');
    digits(&mut out, time.hour(), 2);
    out.push(':');
    digits(&mut out, time.minute(), 2);
    out.push(':');
    digits(&mut out, time.second(), 2);
    match time.nanosecond() {
        0 => {}
        n if n % 1_000_000 == 0 => {
            out.push('.');
            digits(&mut out, n / 1_000_000, 3);
        }
        n if n % 1_000 == 0 => {
            out.push('.');
            digits(&mut out, n / 1_000, 6);
        }
        n => {
            out.push('.');
            digits(&mut out, n, 9);
        }
    }
    out.push_str("+00:00");
    out
}

/// The first line of an export (CSV's header; nothing for NDJSON).
pub fn header(format: Format) -> String {
    match format {
        Format::Ndjson => String::new(),
        Format::Csv => format!("\u{feff}{}\n", COLUMNS.join(",")),
    }
}

/// Appends one click as a line of `format` to `out`.
pub fn write_line(out: &mut String, format: Format, click: &Stored) {
    match format {
        Format::Ndjson => {
            write_object(out, click);
            out.push('\n');
        }
        Format::Csv => {
            let mut first = true;
            fields(click, |field| {
                if !std::mem::take(&mut first) {
                    out.push(',');
                }
                match field {
                    Field::Null => {}
                    Field::Bool(b) => out.push_str(if b { "true" } else { "false" }),
                    Field::Number(n) => push_number(out, n),
                    Field::Text(text) => csv_cell(out, text),
                }
            });
            out.push('\n');
        }
    }
}

/// Appends one click as a JSON object to `out`: the fields of [`COLUMNS`] (a line of the
/// NDJSON export, an item of a `link.clicked` webhook).
pub fn write_object(out: &mut String, click: &Stored) {
    let mut names = COLUMNS.iter();
    let mut separator = '{';
    fields(click, |field| {
        let Some(name) = names.next() else { return };
        out.push(separator);
        separator = ',';
        out.push('"');
        out.push_str(name);
        out.push_str("\":");
        match field {
            Field::Null => out.push_str("null"),
            Field::Bool(b) => out.push_str(if b { "true" } else { "false" }),
            Field::Number(n) => push_number(out, n),
            Field::Text(text) => json_string(out, text),
        }
    });
    out.push('}');
}

fn push_number(out: &mut String, n: i64) {
    use std::fmt::Write;
    let _ = write!(out, "{n}");
}

/// `text` as a JSON string, escaped as serde_json escapes it.
fn json_string(out: &mut String, text: &str) {
    out.push('"');
    let mut rest = text;
    while let Some(i) = rest
        .bytes()
        .position(|b| b < 0x20 || b == b'"' || b == b'\\')
    {
        out.push_str(&rest[..i]);
        match rest.as_bytes()[i] {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x08 => out.push_str("\\b"),
            0x0c => out.push_str("\\f"),
            control => out.push_str(&format!("\\u{control:04x}")),
        }
        rest = &rest[i + 1..];
    }
    out.push_str(rest);
    out.push('"');
}

/// A CSV cell, quoted when needed; a cell a spreadsheet would run as a formula is prefixed
/// with `'` (what visitors send ends up here: a referrer or a query of `=HYPERLINK(…)`).
fn csv_cell(out: &mut String, text: &str) {
    let formula = text.starts_with(['=', '+', '-', '@', '\t', '\r']);
    let quoted = text.contains([',', '"', '\n', '\r']);
    if quoted {
        out.push('"');
    }
    if formula {
        out.push('\'');
    }
    match quoted {
        true => out.push_str(&text.replace('"', "\"\"")),
        false => out.push_str(text),
    }
    if quoted {
        out.push('"');
    }
}

/// The whole export as a stream of text chunks (a page of clicks each), from `after` on.
///
/// Three pages are worked on at once: the database reads one (SQLite's own thread, or the
/// server), a thread of the blocking pool parses the one before, and another writes out the
/// lines of the one before that. A server's worker (and the CLI's runtime) runs one task at a
/// time, so the work that takes CPU is not done on it.
pub fn stream(
    db: DatabaseConnection,
    tz: Tz,
    filter: ExportFilter,
    after: Option<Cursor>,
    format: Format,
) -> impl Stream<Item = Result<String, DbErr>> {
    stream_by(db, tz, filter, after, format, PAGE)
}

/// [`stream`], reading `page` clicks a statement.
pub fn stream_by(
    db: DatabaseConnection,
    tz: Tz,
    filter: ExportFilter,
    after: Option<Cursor>,
    format: Format,
    page: u64,
) -> impl Stream<Item = Result<String, DbErr>> {
    let mut export = Export {
        db,
        tz,
        filter,
        format,
        size: page,
        reading: None,
        dictionaries: Dictionaries::default(),
        writing: None,
        started: false,
        error: None,
        ended: false,
    };
    export.reading = Some(export.read(after));
    futures_util::stream::unfold(export, |mut export| async move {
        let out = export.next().await?;
        Some((out, export))
    })
}

/// An export under way (see [`stream`]).
struct Export {
    db: DatabaseConnection,
    tz: Tz,
    filter: ExportFilter,
    format: Format,
    size: u64,
    /// The page the database is reading.
    reading: Option<JoinHandle<Result<Answer, DbErr>>>,
    /// The dictionary rows of earlier pages (out while a page is resolved).
    dictionaries: Dictionaries,
    /// The lines of the page before, being written.
    writing: Option<JoinHandle<String>>,
    started: bool,
    /// What went wrong, told once the page written before it is out.
    error: Option<DbErr>,
    ended: bool,
}

impl Export {
    /// The next chunk of text, once it is written out.
    async fn next(&mut self) -> Option<Result<String, DbErr>> {
        if self.ended {
            return None;
        }
        // Until a page is being written and the one before is out, or nothing is left to read.
        while self.error.is_none()
            && let Some(reading) = self.reading.take()
        {
            match self.turn(reading).await {
                Ok(writing) => {
                    if let Some(before) = self.writing.replace(writing) {
                        return Some(self.out(before).await);
                    }
                }
                Err(err) => {
                    if let Some(reading) = self.reading.take() {
                        reading.abort();
                    }
                    self.error = Some(err);
                }
            }
        }
        match self.writing.take() {
            Some(last) => Some(self.out(last).await),
            None => {
                self.ended = true;
                self.error.take().map(Err)
            }
        }
    }

    async fn out(&mut self, writing: JoinHandle<String>) -> Result<String, DbErr> {
        let out = writing.await.map_err(|err| broken("writing", err));
        self.ended = out.is_err();
        out
    }

    fn read(&self, after: Option<Cursor>) -> JoinHandle<Result<Answer, DbErr>> {
        let (db, filter, tz, size) = (self.db.clone(), self.filter.clone(), self.tz, self.size);
        tokio::spawn(async move { ask(&db, tz, &filter, after.as_ref(), size).await })
    }

    /// Takes the page being read, asks for the next one (when this one is full) before
    /// parsing and resolving this one, and starts writing it out.
    async fn turn(
        &mut self,
        reading: JoinHandle<Result<Answer, DbErr>>,
    ) -> Result<JoinHandle<String>, DbErr> {
        let answer = reading.await.map_err(|err| broken("reading", err))??;
        let mut guessed = None;
        if let Some((count, at, key)) = answer.tail()?
            && count as u64 == self.size
        {
            guessed = Some((at, key.clone()));
            self.reading = Some(self.read(Some(Cursor { at, key })));
            // On a single-threaded runtime the read starts only when it is first polled: let
            // it ask the database before this page is parsed.
            tokio::task::yield_now().await;
        }
        let page = spawn_blocking(move || answer.parse())
            .await
            .map_err(|err| broken("reading", err))??;
        let last = page.last().map(|(at, key)| (at, key.to_vec()));
        if guessed.is_some() && guessed != last {
            // The next page was asked for after a click that is not this page's last (see
            // `Answer::tail`): ask again, after the last.
            if let Some(wrong) = self.reading.take() {
                wrong.abort();
            }
            self.reading = last.map(|(at, key)| self.read(Some(Cursor { at, key })));
        }
        let mut dictionaries = std::mem::take(&mut self.dictionaries);
        dictionaries.learn(&self.db, &page).await?;
        let (clicks, dictionaries) =
            spawn_blocking(move || (dictionaries.resolve(page), dictionaries))
                .await
                .map_err(|err| broken("reading", err))?;
        self.dictionaries = dictionaries;
        let clicks = clicks?;
        let (first, format) = (!std::mem::replace(&mut self.started, true), self.format);
        Ok(spawn_blocking(move || {
            let mut out = String::with_capacity(clicks.len() * 700);
            if first {
                out.push_str(&header(format));
            }
            for click in &clicks {
                write_line(&mut out, format, click);
            }
            out
        }))
    }
}

fn broken(what: &str, err: tokio::task::JoinError) -> DbErr {
    DbErr::Custom(format!("{what} a page of the export failed: {err}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_read_back_and_cells_cannot_run_as_formulas() {
        let cursor = Cursor {
            at: 1_796_000_000_000_000,
            key: vec![0, 1, 254, 255],
        };
        assert_eq!(Cursor::parse(&cursor.to_string()), Ok(cursor));
        assert!(Cursor::parse("12-xyz").is_err());
        assert!(Cursor::parse("nonsense").is_err());
        let cell = |text: &str| {
            let mut out = String::new();
            csv_cell(&mut out, text);
            out
        };
        assert_eq!(cell("=HYPERLINK(\"x\")"), "\"'=HYPERLINK(\"\"x\"\")\"");
        assert_eq!(cell("a,b"), "\"a,b\"");
        assert_eq!(cell("plain"), "plain");
        assert_eq!(cell("-1"), "'-1");
    }

    #[test]
    fn times_are_written_as_chrono_writes_them() {
        let day = chrono::NaiveDate::from_ymd_opt(2026, 1, 2).unwrap();
        for (micros, nanos) in [
            (0, 0),
            (5, 0),
            (123_000, 0),
            (123_456, 0),
            (0, 7),
            (999_999, 0),
        ] {
            let time = day.and_hms_micro_opt(3, 4, 5, micros).unwrap()
                + chrono::Duration::nanoseconds(nanos);
            assert_eq!(rfc3339(time), time.and_utc().to_rfc3339());
        }
        let far = chrono::NaiveDate::from_ymd_opt(12_000, 1, 1)
            .unwrap()
            .and_hms_opt(0, 0, 0);
        assert_eq!(rfc3339(far.unwrap()), far.unwrap().and_utc().to_rfc3339());
    }

    #[test]
    fn json_strings_are_escaped_as_serde_json_escapes_them() {
        for text in [
            "plain",
            "王小美",
            "a\"b\\c",
            "line\nbreak\r\t",
            "\u{1}\u{8}\u{c}\u{1f}x",
            "",
        ] {
            let mut out = String::new();
            json_string(&mut out, text);
            assert_eq!(out, serde_json::to_string(text).unwrap());
        }
    }
}
