//! What leaves a batch: the messages CSV for the SMS platform, and its recipients (those who
//! did not click, say) for the next wave. Both are read a page at a time, and both are audited:
//! they carry phone numbers.

use super::{BatchError, Mode, Template, recipient_key};
use crate::db::entities::{campaign_batch, domain_conf, url_map};
use crate::db::sql::statement;
use crate::i18n::Lang;
use crate::rules::Phone;
use crate::rules::sms::{self, CountRule};
use crate::services::audit::{self, Actor, Entry};
use crate::services::domains;
use crate::state::Inklink;
use crate::stats::funnel::{DELIVERED, FAILED, RECIPIENT_PARAM};
use sea_orm::{ConnectionTrait, DatabaseConnection, DbErr, EntityTrait};
use serde_json::json;
use std::collections::HashMap;

/// Recipients read per page.
pub const PAGE: u32 = 5_000;

/// Excel opens a CSV as UTF-8 only when it starts with a byte order mark.
pub const BOM: &str = "\u{feff}";

/// A recipient's row, as exports read it.
pub struct Line {
    pub number: i32,
    pub token: String,
    pub phone: Option<String>,
    pub values: HashMap<String, String>,
    pub receipt: i16,
    pub error_code: Option<String>,
    pub first_click: Option<i64>,
    pub clicks: i16,
}

/// Which recipients an export takes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    /// `Some(false)`: only those who have not clicked.
    pub clicked: Option<bool>,
}

/// The next page of `batch`'s recipients after number `after`.
pub async fn page(
    db: &DatabaseConnection,
    batch: i64,
    after: i32,
    filter: Filter,
) -> Result<Vec<Line>, DbErr> {
    let backend = db.get_database_backend();
    let clicked = match filter.clicked {
        None => "",
        Some(true) => " AND first_click IS NOT NULL",
        Some(false) => " AND first_click IS NULL",
    };
    let sql = format!(
        "SELECT number, token, phone, vars, receipt, error_code, first_click, clicks \
         FROM batch_recipient WHERE batch_id = ? AND number > ?{clicked} \
         ORDER BY number LIMIT {PAGE}"
    );
    let rows = db
        .query_all_raw(statement(backend, &sql, vec![batch.into(), after.into()]))
        .await?;
    rows.iter()
        .map(|row| {
            let vars: Option<String> = row.try_get("", "vars")?;
            Ok(Line {
                number: row.try_get("", "number")?,
                token: row.try_get("", "token")?,
                phone: row.try_get("", "phone")?,
                values: vars
                    .and_then(|v| serde_json::from_str(&v).ok())
                    .unwrap_or_default(),
                receipt: row.try_get("", "receipt")?,
                error_code: row.try_get("", "error_code")?,
                first_click: row.try_get("", "first_click")?,
                clicks: row.try_get("", "clicks")?,
            })
        })
        .collect()
}

/// What turns a recipient into their message.
pub struct Messages {
    pub batch: campaign_batch::Model,
    template: Template,
    rule: CountRule,
    mode: Mode,
    /// The batch link's short URL (on the domain it is shown on now).
    link_url: String,
    domain: domain_conf::Model,
    base_segments: usize,
}

impl Messages {
    /// Everything needed to write `batch`'s messages (refused once its numbers are purged).
    pub async fn load(app: &Inklink, batch: campaign_batch::Model) -> Result<Self, BatchError> {
        if batch.purged_at.is_some() {
            return Err(BatchError::Purged(batch.id));
        }
        let link = url_map::Entity::find_by_id(batch.link_id)
            .one(&app.db)
            .await?
            .ok_or(BatchError::NotFound(batch.id))?;
        let domains: HashMap<i64, domain_conf::Model> = domain_conf::Entity::find()
            .all(&app.db)
            .await?
            .into_iter()
            .map(|d| (d.id, d))
            .collect();
        let domain = domains::effective(&domains, link.domain_id)
            .cloned()
            .ok_or(BatchError::NotFound(batch.id))?;
        let template = Template::parse(&batch.template)?;
        let rule = CountRule::parse(&batch.count_rule).unwrap_or_default();
        let mode = Mode::parse(&batch.mode).unwrap_or(Mode::Code);
        let link_url = domains::short_url(&domain, &link.compression_code);
        let mut messages = Self {
            batch,
            template,
            rule,
            mode,
            link_url,
            domain,
            base_segments: 0,
        };
        messages.base_segments = sms::count(
            &messages
                .template
                .render(&messages.url_for("x"), &HashMap::new()),
            rule,
        )
        .segments;
        Ok(messages)
    }

    /// A recipient's own link.
    pub fn url_for(&self, token: &str) -> String {
        match self.mode {
            Mode::Code => domains::short_url(&self.domain, token),
            Mode::Param => format!("{}?{RECIPIENT_PARAM}={token}", self.link_url),
        }
    }

    /// A recipient's message and its segments.
    pub fn message(&self, line: &Line) -> (String, usize) {
        let text = self
            .template
            .render(&self.url_for(&line.token), &line.values);
        let segments = sms::count(&text, self.rule).segments;
        (text, segments)
    }

    /// Whether a recipient's variables push their message into more segments than the
    /// message takes without them.
    pub fn grew(&self, segments: usize) -> bool {
        segments > self.base_segments
    }
}

/// The messages CSV's columns.
pub const MESSAGE_COLUMNS: [&str; 6] = ["phone", "text", "short_url", "key", "segments", "warning"];

/// One page of the messages CSV (rows only), its warnings in `lang` (the admin's language;
/// English from the API).
pub fn message_rows(messages: &Messages, lines: &[Line], lang: Lang) -> String {
    let mut out = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(Vec::new());
    for line in lines {
        let (text, segments) = messages.message(line);
        let phone = line
            .phone
            .clone()
            .map(|p| Phone::stored(p).national().to_owned())
            .unwrap_or_default();
        let warning = if messages.grew(segments) {
            lang.t(t!("a variable makes this message one segment longer"))
        } else {
            ""
        };
        let _ = out.write_record([
            phone.as_str(),
            text.as_str(),
            messages.url_for(&line.token).as_str(),
            recipient_key(messages.batch.id, line.number).as_str(),
            segments.to_string().as_str(),
            warning,
        ]);
    }
    String::from_utf8(out.into_inner().unwrap_or_default()).unwrap_or_default()
}

/// The recipients CSV's first columns (the variables follow).
pub const RECIPIENT_COLUMNS: [&str; 7] = [
    "phone",
    "key",
    "short_url",
    "delivered",
    "error_code",
    "clicks",
    "first_click",
];

/// A recipient as the recipients export writes it.
pub fn recipient_json(messages: &Messages, line: &Line) -> serde_json::Value {
    json!({
        "phone": line.phone.clone().map(|p| Phone::stored(p).national().to_owned()),
        "key": recipient_key(messages.batch.id, line.number),
        "short_url": messages.url_for(&line.token),
        "delivered": match line.receipt { DELIVERED => Some(true), FAILED => Some(false), _ => None },
        "error_code": line.error_code,
        "clicks": line.clicks,
        "first_click": line.first_click.and_then(|at| chrono::DateTime::from_timestamp(at, 0)).map(|at| at.to_rfc3339()),
        "variables": line.values,
    })
}

/// One page of the recipients CSV (rows only), with the batch's variables after the fixed
/// columns.
pub fn recipient_rows(messages: &Messages, variables: &[String], lines: &[Line]) -> String {
    let mut out = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(Vec::new());
    for line in lines {
        let value = recipient_json(messages, line);
        let text = |name: &str| match &value[name] {
            serde_json::Value::Null => String::new(),
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let mut record: Vec<String> = RECIPIENT_COLUMNS.iter().map(|c| text(c)).collect();
        record.extend(
            variables
                .iter()
                .map(|v| line.values.get(v).cloned().unwrap_or_default()),
        );
        let _ = out.write_record(&record);
    }
    String::from_utf8(out.into_inner().unwrap_or_default()).unwrap_or_default()
}

/// Records that `actor` exported `what` of `batch` (phone numbers leave the service).
async fn audit_export(
    db: &DatabaseConnection,
    actor: &Actor,
    batch: &campaign_batch::Model,
    what: &str,
) -> Result<(), DbErr> {
    audit::record(
        db,
        actor,
        Entry {
            action: "batch.export",
            target_kind: "batch",
            target_id: &batch.id.to_string(),
            before: None,
            after: Some(json!({ "export": what })),
        },
    )
    .await
}

/// What an export of batch `id` by `actor` needs, once `actor` may see it; the export is
/// audited (`what` says which).
pub async fn open(
    app: &Inklink,
    id: i64,
    actor: &Actor,
    what: &str,
) -> Result<Messages, BatchError> {
    let batch = super::find(&app.db, id, actor).await?;
    let messages = Messages::load(app, batch).await?;
    audit_export(&app.db, actor, &messages.batch, what).await?;
    Ok(messages)
}

/// The variables of `batch`, in the message's order.
pub fn variables(batch: &campaign_batch::Model) -> Vec<String> {
    serde_json::from_str(&batch.variables).unwrap_or_default()
}

/// A CSV export, a page of recipients at a time: the BOM and `header`, then `rows` of each
/// page of the recipients `filter` takes.
pub fn pages<F>(
    db: DatabaseConnection,
    messages: Messages,
    filter: Filter,
    header: String,
    rows: F,
) -> impl futures_util::Stream<Item = Result<String, DbErr>>
where
    F: Fn(&Messages, &[Line]) -> String + 'static,
{
    let first = format!("{BOM}{header}\r\n");
    futures_util::stream::unfold(
        (Some(first), 0i32, false, messages, rows, db),
        move |(first, after, done, messages, rows, db)| async move {
            if let Some(first) = first {
                return Some((Ok(first), (None, after, done, messages, rows, db)));
            }
            if done {
                return None;
            }
            let batch = messages.batch.id;
            match page(&db, batch, after, filter).await {
                Ok(lines) => {
                    let last = lines.last().map_or(after, |l| l.number);
                    let finished = (lines.len() as u32) < PAGE;
                    let text = rows(&messages, &lines);
                    Some((Ok(text), (None, last, finished, messages, rows, db)))
                }
                // The answer ends there: a cut CSV, and the cause in the log.
                Err(err) => Some((Err(err), (None, after, true, messages, rows, db))),
            }
        },
    )
}
