//! Delivery receipts in: Aliyun's SmsReport, Tencent Cloud's status callback, and a CSV (or
//! JSON) of our own, each matched to its recipient by the key we gave in the messages CSV
//! (the provider's `out_id`) or by phone number, and recorded once.

use super::{BatchError, FileError, may_see, parse_recipient_key};
use crate::db;
use crate::db::entities::campaign_batch;
use crate::db::sql::each_row_in;
use crate::i18n::{Message, Says};
use crate::rules::Phone;
use crate::rules::csv::CsvError;
use crate::services::audit::Actor;
use crate::state::Inklink;
use crate::stats::funnel::{Receipt, ReceiptEffect, record_receipts};
use chrono::{DateTime, NaiveDateTime, TimeZone};
use sea_orm::sea_query::Value;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde::Deserialize;
use std::collections::{BTreeSet, HashMap};

/// Receipts one request may carry.
pub const MAX_RECEIPTS: usize = 20_000;
/// The longest error code kept.
const MAX_ERROR_CODE: usize = 64;

/// A receipt as a provider sent it, before it is matched.
#[derive(Clone, Debug, Default)]
pub struct Incoming {
    /// The recipient key (`12-345`), when the provider carries it back.
    pub key: Option<String>,
    pub phone: Option<String>,
    pub delivered: bool,
    pub error_code: Option<String>,
    /// When it happened, seconds since 1970 (UTC); `None`: now.
    pub at: Option<i64>,
}

/// Aliyun SmsReport: one element of the JSON array it posts.
#[derive(Deserialize)]
pub struct Aliyun {
    pub phone_number: Option<String>,
    pub success: Option<bool>,
    pub err_code: Option<String>,
    pub out_id: Option<String>,
    pub report_time: Option<String>,
    #[serde(default)]
    pub biz_id: Option<String>,
}

/// Tencent Cloud SMS status callback: one element of the JSON array it posts.
#[derive(Deserialize)]
pub struct Tencent {
    pub mobile: Option<String>,
    pub nationcode: Option<String>,
    pub report_status: Option<String>,
    pub errmsg: Option<String>,
    pub user_receive_time: Option<String>,
    /// What the sender passed as `SessionContext` (or `ext` in the older API).
    #[serde(alias = "SessionContext", alias = "ext")]
    pub session_context: Option<String>,
    #[serde(default)]
    pub sid: Option<String>,
}

/// A provider's time: RFC 3339, or `YYYY-MM-DD HH:MM:SS` in China's time (both providers
/// report in Beijing time).
pub fn provider_time(text: &str) -> Option<i64> {
    let text = text.trim();
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        return Some(at.timestamp());
    }
    let naive = NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S").ok()?;
    chrono_tz::Asia::Shanghai
        .from_local_datetime(&naive)
        .earliest()
        .map(|at| at.timestamp())
}

fn clip(code: Option<String>) -> Option<String> {
    code.map(|c| {
        c.trim()
            .chars()
            .filter(|c| !c.is_control())
            .take(MAX_ERROR_CODE)
            .collect::<String>()
    })
    .filter(|c| !c.is_empty())
}

impl From<Aliyun> for Incoming {
    fn from(r: Aliyun) -> Self {
        let delivered = r.success.unwrap_or(false);
        Self {
            key: r.out_id.filter(|k| !k.trim().is_empty()),
            phone: r.phone_number,
            delivered,
            error_code: if delivered { None } else { clip(r.err_code) },
            at: r.report_time.as_deref().and_then(provider_time),
        }
    }
}

impl From<Tencent> for Incoming {
    fn from(r: Tencent) -> Self {
        let delivered = r
            .report_status
            .as_deref()
            .is_some_and(|s| s.eq_ignore_ascii_case("SUCCESS"));
        let phone = r.mobile.map(|mobile| match r.nationcode.as_deref() {
            Some(code) if !code.trim().is_empty() && !mobile.starts_with('+') => {
                format!("+{}{}", code.trim().trim_start_matches('+'), mobile.trim())
            }
            _ => mobile,
        });
        Self {
            key: r.session_context.filter(|k| !k.trim().is_empty()),
            phone,
            delivered,
            error_code: if delivered { None } else { clip(r.errmsg) },
            at: r.user_receive_time.as_deref().and_then(provider_time),
        }
    }
}

/// `delivered` as people write it in a CSV.
pub fn parse_delivered(text: &str) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "y" | "delivered" | "delivrd" | "success" | "成功" | "是" => {
            Some(true)
        }
        "false" | "0" | "no" | "n" | "failed" | "fail" | "失败" | "否" => Some(false),
        _ => None,
    }
}

/// Our CSV: columns `phone` or `key`, `delivered`, and optionally `error_code` and `at`;
/// returns the receipts and, per bad line, its error.
pub fn from_csv(bytes: &[u8]) -> Result<Vec<Result<Incoming, Message>>, BatchError> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(bytes);
    let header: Vec<String> = reader
        .headers()
        .map_err(|err| FileError::Csv(err.into()))?
        .iter()
        .map(|h| h.to_ascii_lowercase())
        .collect();
    let column = |names: &[&str]| header.iter().position(|h| names.contains(&h.as_str()));
    let phone = column(&["phone", "mobile", "phone_number", "手机号"]);
    let key = column(&["key", "out_id"]);
    let delivered = column(&["delivered", "success", "status"]).ok_or(FileError::ReceiptColumns)?;
    if phone.is_none() && key.is_none() {
        return Err(FileError::ReceiptRecipient.into());
    }
    let code = column(&["error_code", "err_code", "code"]);
    let at = column(&["at", "time", "report_time"]);
    let mut out = Vec::new();
    for record in reader.records() {
        if out.len() >= MAX_RECEIPTS {
            return Err(FileError::TooManyReceiptRows.into());
        }
        let record = match record {
            Ok(record) => record,
            Err(err) => {
                out.push(Err(CsvError::from(err).says()));
                continue;
            }
        };
        let cell = |i: Option<usize>| {
            i.and_then(|i| record.get(i))
                .map(str::to_owned)
                .filter(|s| !s.is_empty())
        };
        let Some(state) = cell(Some(delivered)).as_deref().and_then(parse_delivered) else {
            out.push(Err(Message::new(t!(
                "'{}' is not a delivery state; write true or false"
            ))
            .data("", cell(Some(delivered)).unwrap_or_default())));
            continue;
        };
        let at_text = cell(at);
        let when = match at_text.as_deref().map(provider_time) {
            Some(None) => {
                out.push(Err(Message::new(t!(
                    "'{}' is not a time; write 2026-11-26 10:00:00 (Beijing time) or RFC 3339"
                ))
                .data("", at_text.unwrap_or_default())));
                continue;
            }
            Some(at) => at,
            None => None,
        };
        out.push(Ok(Incoming {
            key: cell(key),
            phone: cell(phone),
            delivered: state,
            error_code: if state { None } else { clip(cell(code)) },
            at: when,
        }));
    }
    Ok(out)
}

/// Where receipts may go: one batch (its own endpoint, or its secret callback URL), or any
/// batch the caller may see.
pub enum Scope<'a> {
    Batch(&'a campaign_batch::Model),
    Caller(&'a Actor),
}

/// What became of one receipt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Recorded,
    /// The same receipt, or a later one, was there already.
    Duplicate,
    /// No recipient matches: the reason says which.
    Unmatched(Message),
    /// The receipt could not be read.
    Invalid(Message),
}

/// Counts and per-receipt outcomes of a delivery of receipts.
#[derive(Debug, Default)]
pub struct Report {
    pub outcomes: Vec<Outcome>,
}

impl Report {
    pub fn count(&self, pick: fn(&Outcome) -> bool) -> usize {
        self.outcomes.iter().filter(|o| pick(o)).count()
    }
}

/// Matches and records `receipts` (each already read, or why it could not be).
pub async fn ingest(
    app: &Inklink,
    scope: Scope<'_>,
    receipts: Vec<Result<Incoming, Message>>,
) -> Result<Report, BatchError> {
    if receipts.len() > MAX_RECEIPTS {
        return Err(FileError::TooManyReceipts(receipts.len()).into());
    }
    let country = app.settings.phone_country;
    let mut outcomes: Vec<Option<Outcome>> = vec![None; receipts.len()];
    // Per receipt: the recipient it is for, once known.
    let mut targets: Vec<Option<(i64, i32)>> = vec![None; receipts.len()];
    let mut by_phone: HashMap<String, Vec<usize>> = HashMap::new();
    for (i, receipt) in receipts.iter().enumerate() {
        let receipt = match receipt {
            Ok(receipt) => receipt,
            Err(err) => {
                outcomes[i] = Some(Outcome::Invalid(err.clone()));
                continue;
            }
        };
        if let Some(key) = &receipt.key
            && let Some(recipient) = parse_recipient_key(key)
        {
            targets[i] = Some(recipient);
            continue;
        }
        match receipt.phone.as_deref().map(|p| Phone::parse(p, country)) {
            Some(Ok(phone)) => by_phone.entry(phone.to_string()).or_default().push(i),
            Some(Err(err)) => outcomes[i] = Some(Outcome::Invalid(err.says())),
            None => {
                outcomes[i] = Some(Outcome::Invalid(Message::new(t!(
                    "the receipt has neither a recipient key nor a phone number"
                ))))
            }
        }
    }
    // Phones → their recipients, in the scope's batch or in any batch (newest wins).
    let phones: Vec<&str> = by_phone.keys().map(String::as_str).collect();
    let mut found: HashMap<String, Vec<(i64, i32)>> = HashMap::new();
    let select = "SELECT phone, batch_id, number FROM batch_recipient WHERE phone";
    let (in_batch, batch_id) = match scope {
        Scope::Batch(batch) => (" AND batch_id = ?", vec![Value::from(batch.id)]),
        Scope::Caller(_) => ("", vec![]),
    };
    each_row_in(&app.db, (select, &phones), (in_batch, &batch_id), |row| {
        let phone: String = row.try_get("", "phone")?;
        found
            .entry(phone)
            .or_default()
            .push((row.try_get("", "batch_id")?, row.try_get("", "number")?));
        Ok(())
    })
    .await?;
    // The batches named, to check that the caller may send receipts for them.
    let mut named: BTreeSet<i64> = targets.iter().flatten().map(|(b, _)| *b).collect();
    named.extend(found.values().flatten().map(|(b, _)| *b));
    let visible: HashMap<i64, bool> = match scope {
        Scope::Batch(batch) => named.iter().map(|b| (*b, *b == batch.id)).collect(),
        Scope::Caller(actor) => campaign_batch::Entity::find()
            .filter(campaign_batch::Column::Id.is_in(named.iter().copied()))
            .all(&app.db)
            .await?
            .into_iter()
            .map(|b| (b.id, may_see(actor, &b).is_ok()))
            .collect(),
    };
    for (phone, indexes) in &by_phone {
        let newest = found
            .get(phone)
            .and_then(|rows| {
                rows.iter()
                    .filter(|(b, _)| visible.get(b).copied().unwrap_or(false))
                    .max()
            })
            .copied();
        for i in indexes {
            match newest {
                Some(recipient) => targets[*i] = Some(recipient),
                None => {
                    outcomes[*i] = Some(Outcome::Unmatched(match scope {
                        Scope::Batch(batch) => {
                            Message::new(t!("no recipient of batch {} has this phone number"))
                                .data("", batch.id)
                        }
                        Scope::Caller(_) => {
                            Message::new(t!("no recipient of your batches has this phone number"))
                        }
                    }))
                }
            }
        }
    }
    let now = chrono::Utc::now().timestamp();
    let mut records: Vec<(usize, Receipt)> = Vec::new();
    for (i, target) in targets.iter().enumerate() {
        let (Some((batch, number)), Ok(receipt)) = (target, &receipts[i]) else {
            continue;
        };
        if outcomes[i].is_some() {
            continue;
        }
        if !visible.get(batch).copied().unwrap_or(false) {
            outcomes[i] = Some(Outcome::Unmatched(
                Message::new(t!("the key {} names no batch of yours"))
                    .data("", super::recipient_key(*batch, *number)),
            ));
            continue;
        }
        records.push((
            i,
            Receipt {
                batch: *batch,
                number: *number,
                delivered: receipt.delivered,
                error_code: receipt.error_code.clone(),
                at: receipt.at.unwrap_or(now),
            },
        ));
    }
    let list: Vec<Receipt> = records.iter().map(|(_, r)| r.clone()).collect();
    let mut attempt = 0;
    let effects = loop {
        let txn = db::begin_write(&app.db).await?;
        let result = record_receipts(&txn, &list).await;
        match db::finish(txn, result).await {
            Err(err) if db::is_retryable(&err) && attempt < 10 => {
                attempt += 1;
                tokio::time::sleep(std::time::Duration::from_millis(10 * attempt)).await;
            }
            other => break other?,
        }
    };
    for ((i, receipt), effect) in records.iter().zip(effects) {
        outcomes[*i] = Some(match effect {
            ReceiptEffect::Recorded => Outcome::Recorded,
            ReceiptEffect::Unchanged => Outcome::Duplicate,
            ReceiptEffect::Unknown => Outcome::Unmatched(
                Message::new(t!("there is no recipient {}"))
                    .data("", super::recipient_key(receipt.batch, receipt.number)),
            ),
        });
    }
    Ok(Report {
        outcomes: outcomes
            .into_iter()
            .map(|o| o.unwrap_or(Outcome::Invalid(Message::new(t!("not read")))))
            .collect(),
    })
}

/// The batch whose receipt callback URL carries `secret`, if it matches.
pub async fn by_secret(
    app: &Inklink,
    id: i64,
    secret: &str,
) -> Result<campaign_batch::Model, BatchError> {
    let batch = campaign_batch::Entity::find_by_id(id)
        .one(&app.db)
        .await?
        .ok_or(BatchError::NotFound(id))?;
    let given = secret.as_bytes();
    let kept = batch.secret.as_bytes();
    // Compared in constant time: the secret is what stands in for an API key.
    let same = given.len() == kept.len()
        && given
            .iter()
            .zip(kept)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0;
    match same {
        true => Ok(batch),
        false => Err(BatchError::BadSecret),
    }
}
