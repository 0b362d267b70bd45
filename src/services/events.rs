//! Getting the raw clicks out: every stored click of a range of days, with readable fields, as
//! NDJSON or CSV, page by page in constant memory, resumable from a cursor. The CLI
//! (`inklink events export`) and the API (`GET /api/v1/events`) stream the same pages.

use super::audit::Actor;
use crate::clickstore::stored::{self, Stored};
use crate::rules::Tag;
use crate::stats::days::day_start;
use chrono::NaiveDate;
use chrono_tz::Tz;
use futures_util::Stream;
use sea_orm::{DatabaseConnection, DbErr, Value};

/// Clicks read per statement.
const PAGE: u64 = 5_000;
/// Longest range exported at once.
pub const MAX_DAYS: i64 = 366;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
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
        if key.len() % 2 != 0 || key.len() > 128 {
            return Err(bad());
        }
        let key = (0..key.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&key[i..i + 2], 16))
            .collect::<Result<Vec<u8>, _>>()
            .map_err(|_| bad())?;
        Ok(Self { at, key })
    }

    fn of(click: &Stored) -> Self {
        Self {
            at: click.at,
            key: click.key.clone(),
        }
    }
}

impl std::fmt::Display for Cursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.at, crate::digest::hex(&self.key))
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

/// The next page of clicks after `after`.
pub async fn page(
    db: &DatabaseConnection,
    tz: Tz,
    filter: &ExportFilter,
    after: Option<&Cursor>,
    limit: u64,
) -> Result<Vec<Stored>, DbErr> {
    let micros = |day: NaiveDate| {
        day_start(day, tz)
            .map(|t| t.and_utc().timestamp_micros())
            .unwrap_or(i64::MAX)
    };
    let start = micros(filter.from);
    let end = filter.to.succ_opt().map_or(i64::MAX, micros);
    let mut sql = String::from("c.at >= ? AND c.at < ?");
    let mut values: Vec<Value> = vec![start.into(), end.into()];
    if let Some(cursor) = after {
        // A row value is read as one range of the key's index; the OR that MySQL needs is
        // bounded below by the cursor's time, else each page would read from the range's start.
        match db.get_database_backend() {
            sea_orm::DbBackend::MySql => {
                sql.push_str(" AND c.at >= ? AND (c.at > ? OR (c.at = ? AND c.event_key > ?))");
                values.extend([
                    cursor.at.into(),
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
    stored::read(db, &sql, values, Some(limit)).await
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

/// A click's fields, in [`COLUMNS`]' order.
fn fields(click: &Stored) -> [Option<String>; 22] {
    let row = &click.row;
    let text = |t: &Option<crate::clickstore::row::Text>| t.as_ref().map(|t| t.to_string());
    let visitor = row.unique_identity.to_string();
    [
        Some(row.record_time.and_utc().to_rfc3339()),
        Some(row.compression_code.to_string()),
        row.url_map_id.map(|id| id.to_string()),
        text(&row.host),
        Some(row.client_ip.to_string()).filter(|a| !a.is_empty()),
        Some(visitor).filter(|v| !v.is_empty()),
        text(&row.user_agent),
        text(&row.agent.browser),
        text(&row.agent.browser_version),
        text(&row.agent.os),
        text(&row.agent.os_version),
        text(&row.agent.device),
        Some(row.agent.is_bot.to_string()),
        text(&row.referer),
        text(&row.query_string),
        text(&row.country),
        text(&row.province),
        text(&row.city),
        text(&row.carrier),
        Some(row.outcome.label().to_owned()),
        row.outcome
            .target_rule()
            .map(|rule| rule.as_str().to_owned()),
        Some(Cursor::of(click).to_string()),
    ]
}

/// The first line of an export (CSV's header; nothing for NDJSON).
pub fn header(format: Format) -> String {
    match format {
        Format::Ndjson => String::new(),
        Format::Csv => format!("\u{feff}{}\n", COLUMNS.join(",")),
    }
}

/// One click as a JSON object: the fields of [`COLUMNS`] (an NDJSON line of the export, and
/// an item of a `link.clicked` webhook).
pub fn object(click: &Stored) -> serde_json::Value {
    let mut object = serde_json::Map::with_capacity(COLUMNS.len());
    for (name, value) in COLUMNS.iter().zip(fields(click)) {
        let value = match (*name, value) {
            ("link_id", Some(id)) => id
                .parse::<i64>()
                .map_or(serde_json::Value::Null, serde_json::Value::from),
            ("bot", Some(bot)) => serde_json::Value::Bool(bot == "true"),
            (_, Some(text)) => serde_json::Value::String(text),
            (_, None) => serde_json::Value::Null,
        };
        object.insert((*name).to_owned(), value);
    }
    serde_json::Value::Object(object)
}

/// One click as a line of `format`.
pub fn line(format: Format, click: &Stored) -> String {
    match format {
        Format::Ndjson => {
            let mut out = object(click).to_string();
            out.push('\n');
            out
        }
        Format::Csv => {
            let cells: Vec<String> = fields(click)
                .into_iter()
                .map(|field| csv_cell(&field.unwrap_or_default()))
                .collect();
            let mut out = cells.join(",");
            out.push('\n');
            out
        }
    }
}

/// A CSV cell, quoted when needed; a cell a spreadsheet would run as a formula is prefixed
/// with `'` (what visitors send ends up here: a referrer or a query of `=HYPERLINK(…)`).
fn csv_cell(text: &str) -> String {
    let text = match text.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        true => format!("'{text}"),
        false => text.to_owned(),
    };
    match text.contains([',', '"', '\n', '\r']) {
        true => format!("\"{}\"", text.replace('"', "\"\"")),
        false => text,
    }
}

/// The whole export as a stream of text chunks (a page of clicks each), from `after` on.
pub fn stream(
    db: DatabaseConnection,
    tz: Tz,
    filter: ExportFilter,
    after: Option<Cursor>,
    format: Format,
) -> impl Stream<Item = Result<String, DbErr>> {
    struct State {
        db: DatabaseConnection,
        filter: ExportFilter,
        after: Option<Cursor>,
        started: bool,
        done: bool,
    }
    let state = State {
        db,
        filter,
        after,
        started: false,
        done: false,
    };
    futures_util::stream::unfold(state, move |mut state| async move {
        if state.done {
            return None;
        }
        let mut out = String::new();
        if !state.started {
            state.started = true;
            out.push_str(&header(format));
        }
        match page(&state.db, tz, &state.filter, state.after.as_ref(), PAGE).await {
            Ok(clicks) => {
                state.done = (clicks.len() as u64) < PAGE;
                if let Some(last) = clicks.last() {
                    state.after = Some(Cursor::of(last));
                }
                for click in &clicks {
                    out.push_str(&line(format, click));
                }
                Some((Ok(out), state))
            }
            Err(err) => {
                state.done = true;
                Some((Err(err), state))
            }
        }
    })
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
        assert_eq!(csv_cell("=HYPERLINK(\"x\")"), "\"'=HYPERLINK(\"\"x\"\")\"");
        assert_eq!(csv_cell("a,b"), "\"a,b\"");
        assert_eq!(csv_cell("plain"), "plain");
    }
}
