//! The JSON of campaign batches, receipts and funnels. As in `model`, the schemas derived
//! here are the OpenAPI document's.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// A new batch. Recipients come here as a list, or as a CSV file (`phone` and any other
/// columns) in a `multipart/form-data` upload with the same fields and the file as
/// `recipients`.
#[derive(Deserialize, ToSchema)]
pub struct CreateBatch {
    pub name: String,
    /// The target of a new link for the batch (or `code`).
    pub url: Option<String>,
    /// The code of an existing link (or `url`).
    pub code: Option<String>,
    /// `code` (default): a short code per recipient; `param`: one link plus `?r=`.
    pub mode: Option<String>,
    /// Length of each recipient's code (4–12, default 7) or parameter (4–6, default 4).
    pub length: Option<u8>,
    /// The message, with `{link}` once and `{column}` for the recipients' other fields.
    pub template: String,
    /// How segments are counted: `china` (default) or `standard`.
    pub rule: Option<String>,
    /// Each recipient: `phone` and any other fields (strings or numbers) as variables.
    #[serde(default)]
    #[schema(value_type = Vec<Object>)]
    pub recipients: Vec<serde_json::Map<String, serde_json::Value>>,
}

#[derive(Serialize, Deserialize, ToSchema)]
pub struct ReceiptUrls {
    /// Aliyun SmsReport's callback, carrying the batch's secret instead of a key.
    pub aliyun: String,
    /// Tencent Cloud's status callback, likewise.
    pub tencent: String,
}

/// A row of the recipients that was turned away.
#[derive(Serialize, Deserialize, ToSchema)]
pub struct RejectedRow {
    /// The line of the CSV file (the header is line 1), or the index in `recipients`.
    pub row: usize,
    pub error: String,
}

#[derive(Serialize, Deserialize, ToSchema)]
pub struct Batch {
    pub id: i64,
    pub name: String,
    pub mode: String,
    pub length: i16,
    pub template: String,
    pub variables: Vec<String>,
    /// Recipients (sent).
    pub recipients: i64,
    pub rejected_count: i64,
    /// The most segments a message of the batch takes.
    pub max_segments: i32,
    /// Messages that a variable made one segment longer.
    pub grown_segments: i64,
    pub created_at: DateTime<Utc>,
    pub creator: Option<String>,
    /// When the phone numbers were deleted (retention); exports are refused from then on.
    pub phones_deleted_at: Option<DateTime<Utc>>,
    pub receipt_urls: ReceiptUrls,
    /// On creation: the rows turned away (the first 1,000).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rejected: Option<Vec<RejectedRow>>,
}

#[derive(Serialize, Deserialize, ToSchema)]
pub struct BatchList {
    pub items: Vec<Batch>,
}

#[derive(Serialize, Deserialize, ToSchema)]
pub struct FailedBy {
    pub error_code: String,
    pub failed: i64,
}

/// One value of a breakdown; the empty value holds the delivered recipients who have not
/// clicked (and clicks from unknown places).
#[derive(Serialize, Deserialize, ToSchema)]
pub struct FunnelRow {
    pub value: String,
    pub delivered: i64,
    pub clicked: i64,
    pub clicks: i64,
}

#[derive(Serialize, Deserialize, ToSchema)]
pub struct FunnelBy {
    pub province: Vec<FunnelRow>,
    pub city: Vec<FunnelRow>,
    pub carrier: Vec<FunnelRow>,
}

#[derive(Serialize, Deserialize, ToSchema)]
pub struct FunnelHour {
    /// Hours since `start`.
    pub hour: i64,
    pub delivered: i64,
    pub clicks: i64,
}

#[derive(Serialize, Deserialize, ToSchema)]
pub struct Funnel {
    pub sent: i64,
    pub delivered: i64,
    pub failed: i64,
    /// People: recipients with at least one click by a person (bots, link previews and HEAD
    /// requests never count).
    pub clicked: i64,
    pub clicks: i64,
    /// `clicked ÷ delivered`.
    pub ctr: f64,
    pub failed_by: Vec<FailedBy>,
    pub median_minutes_to_first_click: Option<i64>,
    pub by: FunnelBy,
    /// The first hour with a delivery or a click.
    pub start: Option<DateTime<Utc>>,
    pub hours: Vec<FunnelHour>,
}

#[derive(Serialize, Deserialize, ToSchema)]
pub struct RecipientList {
    #[schema(value_type = Vec<Object>)]
    pub items: Vec<serde_json::Value>,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RecipientsQuery {
    /// `false`: only those who have not clicked (the next wave); `true`: only those who did.
    pub clicked: Option<bool>,
    /// `csv` (default) or `json`.
    pub format: Option<String>,
}

/// A receipt of our own: `key` (from the messages CSV) or `phone`.
#[derive(Deserialize, ToSchema)]
pub struct PlainReceipt {
    pub key: Option<String>,
    pub phone: Option<String>,
    pub delivered: bool,
    pub error_code: Option<String>,
    /// RFC 3339, or `YYYY-MM-DD HH:MM:SS` in Beijing time.
    pub at: Option<String>,
}

#[derive(Serialize, Deserialize, ToSchema)]
pub struct ReceiptProblem {
    /// The receipt's index in the list (its line in a CSV).
    pub row: usize,
    /// `duplicate`, `unmatched` or `invalid`.
    pub status: String,
    pub error: Option<String>,
}

/// What became of a delivery of receipts. Provider callbacks also carry the answer the
/// provider expects (`code`/`msg` for Aliyun, `result`/`errmsg` for Tencent).
#[derive(Serialize, Deserialize, ToSchema)]
pub struct ReceiptReport {
    pub received: usize,
    pub recorded: usize,
    pub duplicates: usize,
    pub unmatched: usize,
    pub invalid: usize,
    /// The receipts not recorded (the first 1,000).
    pub problems: Vec<ReceiptProblem>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub msg: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errmsg: Option<String>,
}

/// The largest batch id a query may name.
pub const MAX_BATCH_ID: i64 = 1_000_000_000_000;

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CallbackQuery {
    /// The batch the receipts are for.
    #[param(minimum = 1, maximum = 1000000000000_i64)]
    pub batch: Option<i64>,
    /// The batch's secret (from `receipt_urls`), instead of an API key.
    pub secret: Option<String>,
}
