//! CSV in and out: importing many links at once (admin UI and CLI) and exporting the list.
//! Each imported row stands alone: a bad row is reported and the good ones are created.

use crate::db::entities::url_map::LinkStatus;
use crate::i18n::{Lang, Message, Says};
use crate::rules::{ShortCode, UrlRules};
use crate::services::audit::Actor;
use crate::services::domains;
use crate::services::links::listing::{self, LinkFilter, Order, Paging};
use crate::services::links::{self, LinkInput, NewLink, TagInput};
use crate::state::Inklink;
use chrono::NaiveDateTime;
use chrono_tz::Tz;
use sea_orm::{DatabaseConnection, DbErr};

pub const MAX_ROWS: usize = 10_000;
const COLUMNS: [&str; 7] = [
    "url",
    "code",
    "description",
    "expires_at",
    "domain",
    "length",
    "tags",
];

#[derive(Debug, thiserror::Error, crate::i18n::Says)]
pub enum ImportError {
    #[error("the file is empty")]
    Empty,
    #[error("the file has no rows below its header line")]
    NoRows,
    #[error("the file is not UTF-8 text; in Excel choose \"CSV UTF-8\" when saving")]
    NotUtf8,
    #[error(
        "the first line must name the columns, and one of them must be 'url' (others: code, description, expires_at, domain, length, tags)"
    )]
    NoUrlColumn,
    #[error("the file has {0} rows; at most {MAX_ROWS} can be imported at once")]
    TooManyRows(usize),
    #[error("the file is not valid CSV: {0}")]
    Malformed(#[from] crate::rules::csv::CsvError),
    #[error("database error: {0}")]
    Db(#[from] DbErr),
}

/// One data row of the file and what became of it.
#[derive(Debug, Clone)]
pub struct RowOutcome {
    /// Line number in the file (the header is line 1).
    pub line: usize,
    /// url, code, description, expires_at, domain, length, tags as given.
    pub input: [String; 7],
    /// The short URL made, or the row's first mistake.
    pub result: Result<String, Message>,
}

/// Reads the header and rows; no database work.
fn read_rows(bytes: &[u8]) -> Result<Vec<(usize, [String; 7])>, ImportError> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ImportError::Empty);
    }
    std::str::from_utf8(bytes).map_err(|_| ImportError::NotUtf8)?;
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(bytes);
    let header = reader
        .headers()
        .map_err(|err| ImportError::Malformed(err.into()))?
        .clone();
    let positions: Vec<Option<usize>> = COLUMNS
        .iter()
        .map(|name| header.iter().position(|h| h.eq_ignore_ascii_case(name)))
        .collect();
    if positions[0].is_none() {
        return Err(ImportError::NoUrlColumn);
    }
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|err| ImportError::Malformed(err.into()))?;
        if record.iter().all(str::is_empty) {
            continue;
        }
        if rows.len() == MAX_ROWS {
            let total = MAX_ROWS + 1 + reader.records().count();
            return Err(ImportError::TooManyRows(total));
        }
        let line = record.position().map_or(0, |p| p.line() as usize);
        let cell =
            |index: Option<usize>| index.and_then(|i| record.get(i)).unwrap_or("").to_owned();
        rows.push((line, std::array::from_fn(|i| cell(positions[i]))));
    }
    if rows.is_empty() {
        return Err(ImportError::NoRows);
    }
    Ok(rows)
}

/// Creates a link for every good row; returns every row's short URL or error, in file order.
/// Times without an offset are read in `tz` (the importing person's time zone).
pub async fn import(
    app: &Inklink,
    bytes: &[u8],
    actor: &Actor,
    tz: Tz,
) -> Result<Vec<RowOutcome>, ImportError> {
    let rows = read_rows(bytes)?;
    let own_hosts = domains::own_hosts(&app.db).await?;
    let rules = links::url_rules(app, &own_hosts);
    // Rows that parse are created together (in bulk where they can be); the others carry
    // their parse error. Outcomes keep the file's order.
    let mut parsed = Vec::with_capacity(rows.len());
    let mut valid = Vec::new();
    for (line, input) in rows {
        match parse_row(tz, &rules, &input) {
            Ok(new) => {
                valid.push(new);
                parsed.push((line, input, None));
            }
            Err(message) => parsed.push((line, input, Some(message))),
        }
    }
    let mut created = links::create_many(app, valid, actor).await.into_iter();
    let mut outcomes = Vec::with_capacity(parsed.len());
    for (line, input, error) in parsed {
        let result = match error {
            Some(message) => Err(message),
            None => match created.next().expect("a result per valid row") {
                Ok(saved) => Ok(saved.short_url()),
                Err(links::LinkError::Db(err)) => return Err(err.into()),
                Err(err) => Err(err.says()),
            },
        };
        outcomes.push(RowOutcome {
            line,
            input,
            result,
        });
    }
    Ok(outcomes)
}

/// A row as a new link, or its first mistake (which quotes the value it is about).
fn parse_row(tz: Tz, rules: &UrlRules<'_>, input: &[String; 7]) -> Result<NewLink, Message> {
    let [url, code, description, expires_at, domain, length, tags] = input.clone();
    let input = LinkInput {
        url,
        code: Some(code),
        domain: Some(domain),
        description: Some(description),
        expires_at: Some(expires_at),
        length: Some(length),
        tags: TagInput::List(tags),
        ..LinkInput::default()
    };
    // The first mistake: what to fix first, in a cell of the results.
    input.parse(rules, tz).map_err(|errors| {
        errors
            .into_iter()
            .next()
            .map_or_else(|| Message::plain(""), |err| err.message)
    })
}

/// A cell as a spreadsheet should show it: text that starts like a formula is quoted, so that
/// opening an export cannot run a formula someone typed into a description.
fn safe_cell(value: &str) -> String {
    match value.chars().next() {
        Some('=' | '+' | '-' | '@' | '\t' | '\r') => format!("'{value}"),
        _ => value.to_owned(),
    }
}

fn to_csv(header: &[&str], rows: impl Iterator<Item = Vec<String>>) -> String {
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.write_record(header).expect("writing to memory");
    for row in rows {
        let cells: Vec<String> = row.iter().map(|cell| safe_cell(cell)).collect();
        writer.write_record(&cells).expect("writing to memory");
    }
    String::from_utf8(writer.into_inner().expect("writing to memory")).expect("UTF-8 in, UTF-8 out")
}

/// The rows with their short URLs or mistakes, the mistakes in `lang`.
pub fn results_csv(outcomes: &[RowOutcome], lang: Lang) -> String {
    let mut header = vec!["line"];
    header.extend(COLUMNS);
    header.extend(["short_url", "error"]);
    to_csv(
        &header,
        outcomes.iter().map(|row| {
            let mut cells = vec![row.line.to_string()];
            cells.extend(row.input.iter().cloned());
            match &row.result {
                Ok(short) => cells.extend([short.clone(), String::new()]),
                Err(error) => cells.extend([String::new(), error.show(lang)]),
            }
            cells
        }),
    )
}

const EXPORT_COLUMNS: [&str; 12] = [
    "code",
    "short_url",
    "url",
    "description",
    "status",
    "expires_at",
    "created_at",
    "creator",
    "tags",
    "clicks_today",
    "clicks_7_days",
    "clicks_total",
];

/// Every link the filter matches, newest first, with the URL each is shown under now.
/// Times are written in `tz` as `YYYY-MM-DD HH:MM` (what the import reads back in the same
/// zone), and each link's page views today, over 7 days and in all follow its columns.
pub async fn export_csv(
    db: &DatabaseConnection,
    filter: &LinkFilter,
    tz: Tz,
) -> Result<String, DbErr> {
    let all = domains::by_id(db).await?;
    let mut rows = Vec::new();
    let mut before: Option<i64> = None;
    // In pages, so that a large export never asks the database for everything at once.
    loop {
        let page = listing::list(db, filter, Order::Newest, Paging::Before(before), 1000).await?;
        let Some(last) = page.last() else { break };
        before = Some(last.id);
        export_rows(db, &all, page, tz, &mut rows).await?;
    }
    Ok(to_csv(&EXPORT_COLUMNS, rows.into_iter()))
}

/// The links of `codes` (those that exist), as [`export_csv`] writes them.
pub async fn export_codes_csv(
    db: &DatabaseConnection,
    codes: &[ShortCode],
    tz: Tz,
) -> Result<String, DbErr> {
    use crate::db::entities::url_map;
    use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QueryOrder};
    let all = domains::by_id(db).await?;
    let mut rows = Vec::new();
    for chunk in codes.chunks(1000) {
        let links = url_map::Entity::find()
            .filter(url_map::Column::CompressionCode.is_in(chunk.iter().map(ShortCode::as_str)))
            .filter(url_map::Column::Deleted.eq(false))
            .order_by_desc(url_map::Column::Id)
            .all(db)
            .await?;
        export_rows(db, &all, links, tz, &mut rows).await?;
    }
    Ok(to_csv(&EXPORT_COLUMNS, rows.into_iter()))
}

async fn export_rows(
    db: &DatabaseConnection,
    all: &std::collections::HashMap<i64, crate::db::entities::domain_conf::Model>,
    page: Vec<crate::db::entities::url_map::Model>,
    tz: Tz,
    rows: &mut Vec<Vec<String>>,
) -> Result<(), DbErr> {
    let ids: Vec<i64> = page.iter().map(|link| link.id).collect();
    let mut tags = crate::services::tags::tags_of(db, &ids).await?;
    let mut clicks = crate::stats::report::glance(db, &ids, crate::stats::days::today(tz)).await?;
    let local = |at: NaiveDateTime| {
        use chrono::TimeZone;
        tz.from_utc_datetime(&at)
            .format("%Y-%m-%d %H:%M")
            .to_string()
    };
    for link in page {
        let link_tags = tags.remove(&link.id).unwrap_or_default().join(", ");
        let glance = clicks.remove(&link.id).unwrap_or_default();
        let short_url = domains::effective(all, link.domain_id)
            .map(|domain| domains::short_url(domain, &link.compression_code))
            .unwrap_or_default();
        rows.push(vec![
            link.compression_code.to_string(),
            short_url,
            link.long_url,
            link.description.unwrap_or_default(),
            match link.url_status {
                LinkStatus::Active => "active".to_owned(),
                LinkStatus::Disabled => "disabled".to_owned(),
            },
            link.expires_at.map(local).unwrap_or_default(),
            local(link.created_at),
            link.creator.unwrap_or_default(),
            link_tags,
            glance.today.to_string(),
            glance.week.to_string(),
            glance.total.to_string(),
        ]);
    }
    Ok(())
}

/// The file the import page offers as a start: every column it reads, and one example row.
pub fn import_template() -> String {
    to_csv(
        &COLUMNS,
        [vec![
            "https://example.com/spring-sale".to_owned(),
            String::new(),
            "Spring sale, SMS 1".to_owned(),
            "2026-12-31 23:59".to_owned(),
            String::new(),
            "6".to_owned(),
            "spring;sms".to_owned(),
        ]]
        .into_iter(),
    )
}
