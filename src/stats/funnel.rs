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

use crate::clickstore::dictionary::texts;
use crate::clickstore::row::Text;
use crate::clickstore::waiting::{Meanings, Waiting};
use crate::db::sql::{add_on_conflict, statement};
use sea_orm::sea_query::Value;
use sea_orm::{ConnectionTrait, DbBackend, DbErr, QueryResult};
use std::collections::{BTreeMap, BTreeSet, HashMap};

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

/// A page view of a batch's link that may be a recipient's: the token it came with (its own
/// code, or its `r` parameter) and the batches it can be of.
pub struct Hit {
    batches: Vec<i64>,
    token: Text,
    /// Seconds since 1970, UTC.
    at: i64,
    province: Option<Text>,
    city: Option<Text>,
    carrier: Option<Text>,
}

/// A page view as the funnel needs it (see [`hits`]).
struct View {
    link: i64,
    /// The code visited, when the click's link has `code` batches (read lazily: see `code_id`).
    code: Option<Text>,
    code_id: Option<i32>,
    query: Option<Text>,
    at: i64,
    province: Option<Text>,
    city: Option<Text>,
    carrier: Option<Text>,
}

/// The page views among `clicks` that may be recipients' (reads only): views of links that
/// batches use, with their recipient tokens.
pub async fn find_hits(
    db: &impl ConnectionTrait,
    clicks: &[Waiting],
    meanings: &Meanings,
) -> Result<Vec<Hit>, DbErr> {
    let views = clicks
        .iter()
        .filter(|c| {
            !c.bot
                && meanings
                    .outcomes
                    .get(&c.outcome)
                    .and_then(|[status]| status.as_deref())
                    == Some("success")
        })
        .filter_map(|c| {
            let [province, city, carrier] = c
                .place
                .and_then(|id| meanings.places.get(&id))
                .map(|[_, province, city, carrier]| {
                    [province.clone(), city.clone(), carrier.clone()]
                })
                .unwrap_or_default();
            Some(View {
                link: c.link?,
                code: None,
                code_id: Some(c.code),
                query: c
                    .query
                    .and_then(|id| meanings.queries.get(&id))
                    .and_then(|[query]| query.clone()),
                at: c.at.div_euclid(1_000_000),
                province,
                city,
                carrier,
            })
        })
        .collect();
    hits(db, views).await
}

/// The recipients' hits among `views`: each view of a batch's link with its token (its own
/// code in `code` batches, its `r` parameter in `param` batches).
async fn hits(db: &impl ConnectionTrait, mut views: Vec<View>) -> Result<Vec<Hit>, DbErr> {
    let links: BTreeSet<i64> = views.iter().map(|v| v.link).collect();
    if links.is_empty() {
        return Ok(Vec::new());
    }
    let backend = db.get_database_backend();
    // link → (its code batches, its param batches)
    let mut batches: HashMap<i64, (Vec<i64>, Vec<i64>)> = HashMap::new();
    let links: Vec<i64> = links.into_iter().collect();
    for chunk in links.chunks(500) {
        let sql = format!(
            "SELECT id, link_id, mode FROM campaign_batch WHERE link_id IN ({})",
            vec!["?"; chunk.len()].join(", ")
        );
        let values = chunk.iter().map(|id| Value::from(*id)).collect();
        for row in db.query_all_raw(statement(backend, &sql, values)).await? {
            let id: i64 = row.try_get("", "id")?;
            let link: i64 = row.try_get("", "link_id")?;
            let mode: String = row.try_get("", "mode")?;
            let entry = batches.entry(link).or_default();
            match mode.as_str() {
                "param" => entry.1.push(id),
                _ => entry.0.push(id),
            }
        }
    }
    if batches.is_empty() {
        return Ok(Vec::new());
    }
    views.retain(|v| batches.contains_key(&v.link));
    // Codes are read only for the views of links with `code` batches.
    let code_ids: BTreeSet<i32> = views
        .iter()
        .filter(|v| v.code.is_none() && !batches[&v.link].0.is_empty())
        .filter_map(|v| v.code_id)
        .collect();
    let codes = texts(db, code_ids).await?;
    let mut out = Vec::new();
    for view in views {
        let (code_batches, param_batches) = &batches[&view.link];
        let mut hit = |batches: &Vec<i64>, token: Text| {
            out.push(Hit {
                batches: batches.clone(),
                token,
                at: view.at,
                province: view.province.clone(),
                city: view.city.clone(),
                carrier: view.carrier.clone(),
            })
        };
        let code = view
            .code
            .clone()
            .or_else(|| view.code_id.and_then(|id| codes.get(&id).cloned()));
        if !code_batches.is_empty()
            && let Some(code) = code
        {
            hit(code_batches, code);
        }
        if !param_batches.is_empty()
            && let Some(token) = view.query.as_deref().and_then(recipient_param)
        {
            hit(param_batches, Text::from(token));
        }
    }
    Ok(out)
}

/// Takes back what the counted clicks between `start` and `end` (microseconds since 1970)
/// added to batches' funnels, before a recount lists them as waiting again: their clicks and
/// hours, and the first clicks among them (the recount places those people again).
pub async fn forget_clicks(txn: &impl ConnectionTrait, start: i64, end: i64) -> Result<(), DbErr> {
    let stored = crate::clickstore::stored::read(
        txn,
        "c.at >= ? AND c.at < ? AND w.at IS NULL \
         AND c.link IN (SELECT link_id FROM campaign_batch)",
        vec![start.into(), end.into()],
        None,
    )
    .await?;
    let views: Vec<View> = stored
        .into_iter()
        .filter(|s| s.row.outcome.status() == "success" && !s.row.agent.is_bot)
        .filter_map(|s| {
            Some(View {
                link: s.row.url_map_id?,
                code: Some(s.row.compression_code.clone()),
                code_id: None,
                query: s.row.query_string.clone(),
                at: s.at.div_euclid(1_000_000),
                province: s.row.province.clone(),
                city: s.row.city.clone(),
                carrier: s.row.carrier.clone(),
            })
        })
        .collect();
    let hits = hits(txn, views).await?;
    let (from, to) = (start.div_euclid(1_000_000), end.div_euclid(1_000_000));
    apply_hits(txn, hits, Direction::Forget { from, to }).await
}

/// The recipient token a query string carries (`r=x7Kq`), if any.
pub fn recipient_param(query: &str) -> Option<String> {
    url::form_urlencoded::parse(query.as_bytes())
        .find(|(name, _)| name == RECIPIENT_PARAM)
        .map(|(_, value)| value.into_owned())
        .filter(|value| !value.is_empty() && value.len() <= 16)
}

/// Whether hits are counted, or taken back before a recount.
#[derive(Clone, Copy)]
enum Direction {
    Count,
    /// Taken back; first clicks between `from` and `to` (seconds) are forgotten.
    Forget {
        from: i64,
        to: i64,
    },
}

/// Counts recipients' clicks (in the counting turn's transaction): each person's first click
/// places them, every click adds to their clicks and to the hour it happened in.
pub async fn count_hits(txn: &impl ConnectionTrait, hits: Vec<Hit>) -> Result<(), DbErr> {
    apply_hits(txn, hits, Direction::Count).await
}

async fn apply_hits(
    txn: &impl ConnectionTrait,
    hits: Vec<Hit>,
    direction: Direction,
) -> Result<(), DbErr> {
    if hits.is_empty() {
        return Ok(());
    }
    let backend = txn.get_database_backend();
    let tokens: BTreeSet<&str> = hits.iter().map(|h| &*h.token).collect();
    let tokens: Vec<&str> = tokens.into_iter().collect();
    let mut found: HashMap<(Box<str>, i64), Recipient> = HashMap::new();
    for chunk in tokens.chunks(400) {
        let sql = format!(
            "SELECT {COLUMNS} FROM batch_recipient WHERE token IN ({}) \
             ORDER BY batch_id, number{}",
            vec!["?"; chunk.len()].join(", "),
            for_update(backend)
        );
        let values = chunk.iter().map(|t| Value::from(*t)).collect();
        for row in txn.query_all_raw(statement(backend, &sql, values)).await? {
            let r = Recipient::read(&row)?;
            found.insert((r.token.as_str().into(), r.batch), r);
        }
    }
    let mut before: BTreeMap<(i64, i32), Recipient> = BTreeMap::new();
    let mut changes = Changes::default();
    for hit in hits {
        let token: Box<str> = Box::from(&*hit.token);
        let Some(batch) = hit
            .batches
            .iter()
            .find(|batch| found.contains_key(&(token.clone(), **batch)))
        else {
            continue;
        };
        let r = found
            .get_mut(&(token, *batch))
            .expect("the batch was found just now");
        before
            .entry((r.batch, r.number))
            .or_insert_with(|| r.clone());
        let sign = match direction {
            Direction::Count => {
                if r.first_click.is_none() {
                    r.first_click = Some(hit.at);
                    r.province = hit.province.as_deref().map(str::to_owned);
                    r.city = hit.city.as_deref().map(str::to_owned);
                    r.carrier = hit.carrier.as_deref().map(str::to_owned);
                }
                r.clicks = r.clicks.saturating_add(1);
                1
            }
            Direction::Forget { from, to } => {
                if r.first_click
                    .is_some_and(|first| (from..to).contains(&first))
                {
                    r.first_click = None;
                    r.province = None;
                    r.city = None;
                    r.carrier = None;
                }
                r.clicks = (r.clicks - 1).max(0);
                -1
            }
        };
        changes
            .0
            .entry((r.batch, Kind::Hour, hit.at.div_euclid(3600).to_string()))
            .or_default()
            .clicks += sign;
    }
    let by_key: HashMap<(i64, i32), &Recipient> =
        found.values().map(|r| ((r.batch, r.number), r)).collect();
    let mut changed = Vec::with_capacity(before.len());
    for (key, old) in &before {
        let after = by_key[key];
        changes.recipient(old, after);
        changed.push(after);
    }
    store(txn, &changed).await?;
    changes.write(txn).await
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
