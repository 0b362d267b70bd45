//! The funnel of campaign batches, counted as receipts and clicks arrive: each recipient's
//! receipt and first click are kept on its row, and the batch's figures (`batch_tally`) are
//! what those rows add up to, kept current by adding each change of a recipient.
//!
//! A recipient contributes to its batch's figures through [`contributions`] alone: a change
//! (a receipt, a first click, more clicks) subtracts what the recipient contributed before and
//! adds what it contributes now, in the transaction that changes the row, with the row locked.
//! So the figures always equal a recount of the rows, whatever order receipts and clicks come
//! in, and however many instances write at once.
//!
//! A recipient's place (province and city) and carrier are those of their first counted click
//! by a person; a delivered recipient who has not clicked is counted under the empty value
//! (shown as "not clicked"). Bots, link-preview fetchers and `HEAD` requests are never clicks
//! here, as they are never page views.

use crate::db::sql::{add_on_conflict, statement};
use sea_orm::sea_query::Value;
use sea_orm::{ConnectionTrait, DbBackend, DbErr, QueryResult};
use std::collections::{BTreeMap, BTreeSet, HashMap};

mod hits;

pub use hits::{Hit, count_hits, find_hits, forget_clicks, recipient_param};

/// `batch_recipient.receipt`: no receipt yet.
pub const NO_RECEIPT: i16 = 0;
pub const DELIVERED: i16 = 1;
pub const FAILED: i16 = 2;

/// The query parameter that names the recipient of a `param` batch's link.
pub const RECIPIENT_PARAM: &str = "r";

/// Minutes from delivery to first click are counted exactly up to this (30 days); later first
/// clicks are counted here.
pub const MAX_DELAY_MINUTES: i64 = 43_200;

/// What a breakdown of the funnel counts by (`batch_tally.kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// The batch as a whole (one row, value "").
    Total,
    /// Failed receipts by the provider's error code.
    Error,
    Province,
    City,
    Carrier,
    /// People by minutes from delivery to their first click.
    Delay,
    /// Clicks by the hour they happened in (hours since 1970, UTC).
    Hour,
    /// Deliveries by the hour of their receipt (hours since 1970, UTC).
    ReceiptHour,
}

impl Kind {
    pub const ALL: [Self; 8] = [
        Self::Total,
        Self::Error,
        Self::Province,
        Self::City,
        Self::Carrier,
        Self::Delay,
        Self::Hour,
        Self::ReceiptHour,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::Total => "total",
            Self::Error => "error",
            Self::Province => "province",
            Self::City => "city",
            Self::Carrier => "carrier",
            Self::Delay => "delay",
            Self::Hour => "hour",
            Self::ReceiptHour => "receipt_hour",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.name() == name)
    }
}

/// One row of a batch's figures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Figures {
    pub delivered: i64,
    pub failed: i64,
    /// People: recipients with at least one click.
    pub clicked: i64,
    pub clicks: i64,
}

impl Figures {
    fn add(&mut self, other: Figures, sign: i64) {
        self.delivered += sign * other.delivered;
        self.failed += sign * other.failed;
        self.clicked += sign * other.clicked;
        self.clicks += sign * other.clicks;
    }

    fn is_zero(&self) -> bool {
        *self == Figures::default()
    }
}

/// A recipient's row, as far as the funnel goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recipient {
    pub batch: i64,
    pub number: i32,
    pub token: String,
    pub receipt: i16,
    pub receipt_at: Option<i64>,
    pub error_code: Option<String>,
    pub first_click: Option<i64>,
    /// Clicks by the person, up to 32,767 (a SMALLINT: a recipient who clicks more is a
    /// script, and two bytes a recipient are worth keeping).
    pub clicks: i16,
    pub province: Option<String>,
    pub city: Option<String>,
    pub carrier: Option<String>,
}

const COLUMNS: &str = "batch_id, number, token, receipt, receipt_at, error_code, first_click, \
     clicks, province, city, carrier";

impl Recipient {
    fn read(row: &QueryResult) -> Result<Self, DbErr> {
        Ok(Self {
            batch: row.try_get("", "batch_id")?,
            number: row.try_get("", "number")?,
            token: row.try_get("", "token")?,
            receipt: row.try_get("", "receipt")?,
            receipt_at: row.try_get("", "receipt_at")?,
            error_code: row.try_get("", "error_code")?,
            first_click: row.try_get("", "first_click")?,
            clicks: row.try_get("", "clicks")?,
            province: row.try_get("", "province")?,
            city: row.try_get("", "city")?,
            carrier: row.try_get("", "carrier")?,
        })
    }
}

/// What a recipient in this state adds to its batch's figures: the one definition the
/// figures follow.
pub fn contributions(r: &Recipient) -> Vec<((Kind, String), Figures)> {
    let clicked = r.first_click.is_some();
    let delivered = r.receipt == DELIVERED;
    let own = Figures {
        delivered: i64::from(delivered),
        failed: i64::from(r.receipt == FAILED),
        clicked: i64::from(clicked),
        clicks: i64::from(r.clicks),
    };
    let mut out = vec![((Kind::Total, String::new()), own)];
    if r.receipt == FAILED {
        let code = r.error_code.clone().unwrap_or_default();
        out.push((
            (Kind::Error, code),
            Figures {
                failed: 1,
                ..Figures::default()
            },
        ));
    }
    let placed = Figures { failed: 0, ..own };
    if delivered || clicked {
        for (kind, value) in [
            (Kind::Province, &r.province),
            (Kind::City, &r.city),
            (Kind::Carrier, &r.carrier),
        ] {
            let value = match clicked {
                true => value.clone().unwrap_or_default(),
                false => String::new(),
            };
            out.push(((kind, value), placed));
        }
    }
    if let (true, Some(at)) = (delivered, r.receipt_at) {
        out.push((
            (Kind::ReceiptHour, at.div_euclid(3600).to_string()),
            Figures {
                delivered: 1,
                ..Figures::default()
            },
        ));
    }
    if let (true, Some(first), Some(at)) = (delivered, r.first_click, r.receipt_at) {
        let minutes = ((first - at).max(0) / 60).min(MAX_DELAY_MINUTES);
        out.push((
            (Kind::Delay, minutes.to_string()),
            Figures {
                clicked: 1,
                ..Figures::default()
            },
        ));
    }
    out
}

/// Changes to batches' figures, added up before they are written.
#[derive(Default)]
struct Changes(BTreeMap<(i64, Kind, String), Figures>);

impl Changes {
    fn recipient(&mut self, before: &Recipient, after: &Recipient) {
        for (sign, state) in [(-1, before), (1, after)] {
            for ((kind, value), figures) in contributions(state) {
                self.0
                    .entry((state.batch, kind, value))
                    .or_default()
                    .add(figures, sign);
            }
        }
    }

    async fn write(self, txn: &impl ConnectionTrait) -> Result<(), DbErr> {
        let backend = txn.get_database_backend();
        // In key order, so that two writers never wait for each other's rows in a circle.
        let rows: Vec<_> = self.0.into_iter().filter(|(_, f)| !f.is_zero()).collect();
        let tail = add_on_conflict(
            backend,
            "batch_tally",
            "batch_id, kind, value",
            &["delivered", "failed", "clicked", "clicks"],
        );
        for chunk in rows.chunks(400) {
            let sql = format!(
                "INSERT INTO batch_tally (batch_id, kind, value, delivered, failed, clicked, clicks) \
                 VALUES {} {tail}",
                vec!["(?, ?, ?, ?, ?, ?, ?)"; chunk.len()].join(", ")
            );
            let mut values = Vec::with_capacity(chunk.len() * 7);
            for ((batch, kind, value), f) in chunk {
                values.extend([
                    Value::from(*batch),
                    Value::from(kind.name()),
                    Value::from(value.as_str()),
                    Value::from(f.delivered),
                    Value::from(f.failed),
                    Value::from(f.clicked),
                    Value::from(f.clicks),
                ]);
            }
            txn.execute_raw(statement(backend, &sql, values)).await?;
        }
        Ok(())
    }
}

/// Locks the rows a transaction is about to change, where the database locks rows.
fn for_update(backend: DbBackend) -> &'static str {
    match backend {
        DbBackend::Sqlite => "",
        _ => " FOR UPDATE",
    }
}

/// Writes recipients' new states (rows that exist: the insert never happens).
async fn store(txn: &impl ConnectionTrait, rows: &[&Recipient]) -> Result<(), DbErr> {
    let backend = txn.get_database_backend();
    let set = [
        "receipt",
        "receipt_at",
        "error_code",
        "first_click",
        "clicks",
        "province",
        "city",
        "carrier",
    ];
    let tail = match backend {
        DbBackend::MySql => format!(
            "ON DUPLICATE KEY UPDATE {}",
            set.iter()
                .map(|c| format!("{c} = VALUES({c})"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        _ => format!(
            "ON CONFLICT (batch_id, number) DO UPDATE SET {}",
            set.iter()
                .map(|c| format!("{c} = excluded.{c}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    for chunk in rows.chunks(300) {
        let sql = format!(
            "INSERT INTO batch_recipient ({COLUMNS}) VALUES {} {tail}",
            vec!["(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"; chunk.len()].join(", ")
        );
        let mut values = Vec::with_capacity(chunk.len() * 11);
        for r in chunk {
            values.extend([
                Value::from(r.batch),
                Value::from(r.number),
                Value::from(r.token.as_str()),
                Value::from(r.receipt),
                Value::from(r.receipt_at),
                Value::from(r.error_code.clone()),
                Value::from(r.first_click),
                Value::from(r.clicks),
                Value::from(r.province.clone()),
                Value::from(r.city.clone()),
                Value::from(r.carrier.clone()),
            ]);
        }
        txn.execute_raw(statement(backend, &sql, values)).await?;
    }
    Ok(())
}

/// A delivery receipt for a recipient found by the caller.
#[derive(Clone, Debug)]
pub struct Receipt {
    pub batch: i64,
    pub number: i32,
    pub delivered: bool,
    pub error_code: Option<String>,
    /// When the provider says it happened (seconds since 1970, UTC).
    pub at: i64,
}

/// What became of a receipt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReceiptEffect {
    /// The recipient's state changed.
    Recorded,
    /// The recipient already had this receipt, or a later one: nothing changed.
    Unchanged,
    /// No such recipient (or its batch's numbers were purged).
    Unknown,
}

/// Records receipts (in the caller's transaction); one effect per receipt, in order. The
/// latest receipt of a recipient counts: a provider that reports a failure and then, after a
/// retry, a delivery, ends delivered. The same receipt twice changes nothing.
pub async fn record_receipts(
    txn: &impl ConnectionTrait,
    receipts: &[Receipt],
) -> Result<Vec<ReceiptEffect>, DbErr> {
    let backend = txn.get_database_backend();
    let mut by_batch: BTreeMap<i64, BTreeSet<i32>> = BTreeMap::new();
    for r in receipts {
        by_batch.entry(r.batch).or_default().insert(r.number);
    }
    let mut found: HashMap<(i64, i32), Recipient> = HashMap::with_capacity(receipts.len());
    for (batch, numbers) in by_batch {
        let numbers: Vec<i32> = numbers.into_iter().collect();
        for chunk in numbers.chunks(1000) {
            let sql = format!(
                "SELECT {COLUMNS} FROM batch_recipient WHERE batch_id = ? AND number IN ({}) \
                 ORDER BY number{}",
                vec!["?"; chunk.len()].join(", "),
                for_update(backend)
            );
            let mut values = vec![Value::from(batch)];
            values.extend(chunk.iter().map(|n| Value::from(*n)));
            for row in txn.query_all_raw(statement(backend, &sql, values)).await? {
                let r = Recipient::read(&row)?;
                found.insert((r.batch, r.number), r);
            }
        }
    }
    let mut before: HashMap<(i64, i32), Recipient> = HashMap::new();
    let mut effects = Vec::with_capacity(receipts.len());
    for receipt in receipts {
        let Some(r) = found.get_mut(&(receipt.batch, receipt.number)) else {
            effects.push(ReceiptEffect::Unknown);
            continue;
        };
        let state = if receipt.delivered { DELIVERED } else { FAILED };
        let code = if receipt.delivered {
            None
        } else {
            receipt.error_code.clone()
        };
        let newer = match r.receipt_at {
            None => true,
            Some(at) => receipt.at > at,
        };
        if r.receipt != NO_RECEIPT && !newer
            || (r.receipt == state && r.error_code == code && r.receipt_at == Some(receipt.at))
        {
            effects.push(ReceiptEffect::Unchanged);
            continue;
        }
        before
            .entry((r.batch, r.number))
            .or_insert_with(|| r.clone());
        r.receipt = state;
        r.error_code = code;
        r.receipt_at = Some(receipt.at);
        effects.push(ReceiptEffect::Recorded);
    }
    let mut changes = Changes::default();
    let mut changed: Vec<&Recipient> = Vec::with_capacity(before.len());
    let mut keys: Vec<&(i64, i32)> = before.keys().collect();
    keys.sort_unstable();
    for key in keys {
        let after = &found[key];
        changes.recipient(&before[key], after);
        changed.push(after);
    }
    store(txn, &changed).await?;
    changes.write(txn).await?;
    Ok(effects)
}

/// A batch's figures as stored, per breakdown and value.
pub async fn figures(
    db: &impl ConnectionTrait,
    batch: i64,
) -> Result<Vec<(Kind, String, Figures)>, DbErr> {
    let backend = db.get_database_backend();
    let sql = "SELECT kind, value, delivered, failed, clicked, clicks FROM batch_tally \
               WHERE batch_id = ?";
    let rows = db
        .query_all_raw(statement(backend, sql, vec![batch.into()]))
        .await?;
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let kind: String = row.try_get("", "kind")?;
        let Some(kind) = Kind::from_name(&kind) else {
            continue;
        };
        out.push((
            kind,
            row.try_get("", "value")?,
            Figures {
                delivered: row.try_get("", "delivered")?,
                failed: row.try_get("", "failed")?,
                clicked: row.try_get("", "clicked")?,
                clicks: row.try_get("", "clicks")?,
            },
        ));
    }
    Ok(out)
}
