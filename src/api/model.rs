//! The JSON the API takes and gives. Their schemas, derived here, are the OpenAPI document's:
//! what the code accepts and what the contract says cannot drift apart.

use crate::rules::RedirectStatus;
use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Deserializer, Serialize};
use utoipa::{IntoParams, ToSchema};

/// `Some(None)` for an explicit `null` (clear the value), `None` when the field is absent.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    deserializer: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(deserializer).map(Some)
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum CodeStrategy {
    /// A code from the keyed sequence: short, unguessable, never repeated.
    Sequence,
    /// A code derived from the URL: the same URL gets the same code.
    Hash,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum LinkState {
    Active,
    Disabled,
    Expired,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum SetState {
    Active,
    Disabled,
}

/// A redirect status: 301, 302, 307 or 308. JSON Schema counts `302.0` as an integer, so a
/// whole-numbered float is accepted too.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(try_from = "f64", into = "u16")]
pub struct RedirectCode(pub RedirectStatus);

impl TryFrom<f64> for RedirectCode {
    type Error = String;
    fn try_from(code: f64) -> Result<Self, String> {
        RedirectStatus::ALL
            .into_iter()
            .find(|status| f64::from(status.code()) == code)
            .map(Self)
            .ok_or_else(|| format!("{code} is not a redirect status; use 301, 302, 307 or 308"))
    }
}

impl From<RedirectCode> for u16 {
    fn from(code: RedirectCode) -> u16 {
        code.0.code()
    }
}

impl utoipa::PartialSchema for RedirectCode {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, Type};
        ObjectBuilder::new()
            .schema_type(Type::Integer)
            .enum_values(Some(RedirectStatus::ALL.map(RedirectStatus::code)))
            .description(Some("A redirect status: 301, 302, 307 or 308"))
            .into()
    }
}

impl ToSchema for RedirectCode {}

/// An RFC 3339 date-time such as `2026-12-31T23:59:59+08:00`.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(try_from = "String")]
pub struct Timestamp(pub DateTime<Utc>);

impl TryFrom<String> for Timestamp {
    type Error = String;
    fn try_from(text: String) -> Result<Self, String> {
        crate::rules::time::rfc3339(&text)
            .map(Self)
            .map_err(|err| err.to_string())
    }
}

impl utoipa::PartialSchema for Timestamp {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
        ObjectBuilder::new()
            .schema_type(Type::String)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::DateTime)))
            .examples(["2026-12-31T23:59:59+08:00"])
            .into()
    }
}

impl ToSchema for Timestamp {}

/// A number of visits, 1 to 1,000,000,000 (a whole-numbered float is accepted too).
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(try_from = "f64", into = "i64")]
pub struct VisitCount(pub crate::rules::VisitLimit);

impl TryFrom<f64> for VisitCount {
    type Error = String;
    fn try_from(value: f64) -> Result<Self, String> {
        let limit = (value.fract() == 0.0 && value.abs() < 1e15)
            .then_some(value as i64)
            .and_then(|n| crate::rules::VisitLimit::new(n).ok());
        limit
            .map(Self)
            .ok_or_else(|| crate::rules::CampaignError::VisitLimit.to_string())
    }
}

impl From<VisitCount> for i64 {
    fn from(count: VisitCount) -> i64 {
        count.0.get()
    }
}

impl utoipa::PartialSchema for VisitCount {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, Type};
        ObjectBuilder::new()
            .schema_type(Type::Integer)
            .minimum(Some(1))
            .maximum(Some(1_000_000_000))
            .description(Some("A number of visits, 1 to 1,000,000,000"))
            .into()
    }
}

impl ToSchema for VisitCount {}

/// A generated code's length, 4 to 12.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(try_from = "f64", into = "u8")]
pub struct LengthValue(pub crate::rules::CodeLength);

impl TryFrom<f64> for LengthValue {
    type Error = String;
    fn try_from(value: f64) -> Result<Self, String> {
        (value.fract() == 0.0 && (0.0..256.0).contains(&value))
            .then_some(value as u64)
            .and_then(|n| crate::rules::CodeLength::new(n).ok())
            .map(Self)
            .ok_or_else(|| crate::rules::CampaignError::CodeLength.to_string())
    }
}

impl From<LengthValue> for u8 {
    fn from(length: LengthValue) -> u8 {
        length.0.get()
    }
}

impl utoipa::PartialSchema for LengthValue {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, Type};
        ObjectBuilder::new()
            .schema_type(Type::Integer)
            .minimum(Some(4))
            .maximum(Some(12))
            .description(Some(
                "The generated code's length, 4 to 12; shorter codes only as a custom code",
            ))
            .into()
    }
}

impl ToSchema for LengthValue {}

/// A whole number that may arrive as `1` or `1.0` (both are JSON Schema integers).
fn whole<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i32, D::Error> {
    let value = f64::deserialize(deserializer)?;
    if value.fract() == 0.0 && value >= f64::from(i32::MIN) && value <= f64::from(i32::MAX) {
        Ok(value as i32)
    } else {
        Err(serde::de::Error::custom(format!(
            "{value} is not a whole number in range"
        )))
    }
}

/// A link to create.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateLink {
    /// The target: an absolute http or https URL.
    #[schema(example = "https://example.com/spring-sale?utm_source=sms")]
    pub url: String,
    /// A custom code (1–64 of `A-Z a-z 0-9 - _`, not a reserved word); generated when absent.
    #[serde(default)]
    pub code: Option<String>,
    /// The host to serve the link on (one of GET /domains); the default domain when absent.
    #[serde(default)]
    pub domain: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    /// RFC 3339 date-time after which the link answers 410.
    #[serde(default)]
    pub expires_at: Option<Timestamp>,
    /// 301, 302, 307 or 308; the service default when absent.
    #[serde(default)]
    pub redirect_status: Option<RedirectCode>,
    /// How to make the code when none is given (default: sequence).
    #[serde(default)]
    pub strategy: Option<CodeStrategy>,
    /// Return the existing active link for the same URL and domain (200) instead of a new one.
    #[serde(default)]
    pub reuse: Option<bool>,
    /// The generated code's length, 4 to 12 (default: the service's `INKLINK_CODE_LENGTH`).
    /// Shorter codes only as a custom `code`.
    #[serde(default)]
    pub length: Option<LengthValue>,
    /// Visitors must enter this password (4–128 characters) before they are sent on.
    #[serde(default)]
    pub password: Option<String>,
    /// The link sends visitors on at most this many times (1 to 1,000,000,000), over all
    /// instances; then it answers like an expired link.
    #[serde(default)]
    pub max_visits: Option<VisitCount>,
    /// Before this RFC 3339 date-time the link answers 403 "not open yet".
    #[serde(default)]
    pub valid_from: Option<Timestamp>,
    /// Where the link sends visitors once disabled, expired or used up, instead of the 410
    /// page (default: the domain's fallback, if any).
    #[serde(default)]
    pub fallback_url: Option<String>,
    /// In-app browsers that get a page telling the visitor to open the link in their browser
    /// instead of a redirect: any of `wechat`, `qq`, `weibo`, `douyin`, `toutiao`,
    /// `xiaohongshu`, `dingtalk`, `alipay`, `taobao`; `[]` for none; absent: the domain's
    /// choice.
    #[serde(default)]
    pub in_app_page: Option<Vec<String>>,
    /// Alternative targets, the first whose rule matches the visitor winning.
    #[serde(default)]
    pub targets: Option<Vec<AltTarget>>,
    /// Tags (campaigns), up to 10 of 1–32 characters each; letters are kept in lower case.
    #[serde(default)]
    pub tags: Option<Vec<String>>,
}

/// An alternative target: visitors matching `rule` are sent to `url`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct AltTarget {
    /// `ios` (iPhone, iPad), `android` (Android, HarmonyOS), `desktop`, or `wechat` (WeChat's
    /// and WeCom's in-app browser).
    #[schema(example = "ios")]
    pub rule: String,
    #[schema(example = "https://apps.apple.com/app/id123456")]
    pub url: String,
}

/// A link as the API shows it.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema, PartialEq)]
pub struct Link {
    pub code: String,
    /// The URL to hand out: on the link's domain, or the domain that replaced it.
    pub short_url: String,
    pub url: String,
    pub domain: String,
    pub status: LinkState,
    #[schema(value_type = u16)]
    pub redirect_status: u16,
    pub description: Option<String>,
    pub created_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
    /// Send it back with PATCH: an edit made meanwhile by someone else is refused (409).
    pub version: i32,
    pub tags: Vec<String>,
    /// Visitors must enter a password.
    pub password_protected: bool,
    pub max_visits: Option<i64>,
    /// Redirects served while a visit limit was set.
    pub visits: i64,
    pub valid_from: Option<DateTime<Utc>>,
    pub fallback_url: Option<String>,
    /// The link's own choice of in-app browsers shown the "open in your browser" page;
    /// `null`: the domain's.
    pub in_app_page: Option<Vec<String>>,
    pub targets: Vec<AltTarget>,
}

/// Changes to a link; absent fields stay as they are, `null` clears.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PatchLink {
    /// The `version` the change is based on (from the link as last read).
    #[serde(deserialize_with = "whole")]
    pub version: i32,
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub description: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<Timestamp>)]
    pub expires_at: Option<Option<Timestamp>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<RedirectCode>)]
    pub redirect_status: Option<Option<RedirectCode>>,
    #[serde(default)]
    pub status: Option<SetState>,
    /// A new visitor password; `null` removes it.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub password: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<VisitCount>)]
    pub max_visits: Option<Option<VisitCount>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<Timestamp>)]
    pub valid_from: Option<Option<Timestamp>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub fallback_url: Option<Option<String>>,
    /// `null`: follow the domain's choice again.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<Vec<String>>)]
    pub in_app_page: Option<Option<Vec<String>>>,
    /// Replaces every alternative target; `[]` removes them.
    #[serde(default)]
    pub targets: Option<Vec<AltTarget>>,
    /// Replaces the tags (up to 10); `[]` removes them.
    #[serde(default)]
    pub tags: Option<Vec<String>>,
}

#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BatchRequest {
    /// 1 to 1,000 links to create, each as for POST /links.
    #[schema(value_type = Vec<CreateLink>, min_items = 1, max_items = 1000)]
    pub items: Vec<serde_json::Value>,
}

/// One item's outcome: `link` on success (status 201, or 200 when reused), else `error`.
#[derive(Serialize, Deserialize, ToSchema)]
pub struct BatchResult {
    pub index: usize,
    pub status: u16,
    pub link: Option<Link>,
    pub error: Option<super::error::ErrorDetail>,
}

#[derive(Serialize, Deserialize, ToSchema)]
pub struct BatchResponse {
    /// One per item, in input order.
    pub results: Vec<BatchResult>,
}

pub use crate::services::links::listing::StatusFilter;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Part of the code, URL or description.
    pub q: Option<String>,
    pub status: Option<StatusFilter>,
    /// Only links made for this host.
    pub domain: Option<String>,
    /// Only links with this tag.
    pub tag: Option<String>,
    /// 1-based page number (default 1).
    #[param(minimum = 1, maximum = 10000000)]
    pub page: Option<u64>,
    /// Links per page, 1–100 (default 20).
    #[param(minimum = 1, maximum = 100)]
    pub per_page: Option<u64>,
}

#[derive(Serialize, Deserialize, ToSchema)]
pub struct LinkPage {
    pub items: Vec<Link>,
    /// Links matching the filter, on all pages.
    pub total: u64,
    pub page: u64,
    pub per_page: u64,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct StatsQuery {
    /// First day, YYYY-MM-DD (default: six days before `to`).
    #[param(format = Date)]
    pub from: Option<String>,
    /// Last day, YYYY-MM-DD (default: today, in the service's time zone). At most 366 days.
    #[param(format = Date)]
    pub to: Option<String>,
    /// Also the range's page views and visitors by one dimension, as the dashboards show
    /// them: country, province, city, carrier, browser, os, device, referrer, utm_source,
    /// utm_medium, utm_campaign, channel or hour.
    pub dimension: Option<String>,
}

#[derive(Serialize, Deserialize, ToSchema)]
pub struct DayStats {
    pub date: NaiveDate,
    /// Page views: successful redirects of people (bots excluded).
    pub pv: i64,
    /// Distinct visitors among page views.
    pub uv: i64,
    /// Distinct client addresses among page views.
    pub ip: i64,
    /// Successful redirects, bots included.
    pub effective: i64,
    /// Requests that were not redirected (disabled or expired link).
    pub ineffective: i64,
}

#[derive(Serialize, Deserialize, ToSchema)]
pub struct LinkStats {
    pub code: String,
    pub from: NaiveDate,
    pub to: NaiveDate,
    /// The IANA time zone the days are counted in.
    pub timezone: String,
    /// Every day of the range, days without visits as zeros.
    pub days: Vec<DayStats>,
    /// The whole range: pv, effective and ineffective are the sums of the days; uv and ip
    /// are distinct over the range (a visitor who came on several days counts once).
    pub total: RangeStats,
    /// With `dimension`: the range's values of it, most page views first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub breakdown: Option<Breakdown>,
}

/// The statistics of a tag's links or of every link.
#[derive(Serialize, Deserialize, ToSchema)]
pub struct ScopeStats {
    /// The tag, for a tag's statistics.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    pub from: NaiveDate,
    pub to: NaiveDate,
    /// The IANA time zone the days are counted in.
    pub timezone: String,
    /// Every day of the range, days without visits as zeros.
    pub days: Vec<DayStats>,
    /// The whole range, uv and ip distinct over it.
    pub total: RangeStats,
    /// With `dimension`: the range's values of it, most page views first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub breakdown: Option<Breakdown>,
}

/// Page views and visitors by the values of one dimension over the range.
#[derive(Serialize, Deserialize, ToSchema)]
pub struct Breakdown {
    pub dimension: String,
    pub values: Vec<BreakdownValue>,
}

#[derive(Serialize, Deserialize, ToSchema)]
pub struct BreakdownValue {
    /// The value; empty when the visitors had none (no referrer, an unknown place).
    pub value: String,
    /// Page views.
    pub pv: i64,
    /// Distinct visitors over the range (for the hour: per hour of the day, summed over days).
    pub uv: i64,
}

#[derive(Serialize, Deserialize, ToSchema)]
pub struct RangeStats {
    /// Page views over the range.
    pub pv: i64,
    /// Distinct visitors over the range.
    pub uv: i64,
    /// Distinct client addresses over the range.
    pub ip: i64,
    /// Successful redirects over the range, bots included.
    pub effective: i64,
    /// Requests over the range that were not redirected.
    pub ineffective: i64,
}

#[derive(Serialize, Deserialize, ToSchema)]
pub struct Domain {
    pub host: String,
    /// http or https: the scheme of short URLs on this host.
    pub protocol: String,
    /// active or disabled.
    pub status: String,
    pub is_default: bool,
    /// When the domain was rotated away: the host its links are now shown on.
    pub replaced_by: Option<String>,
    /// What the health probes last found.
    pub health: DomainHealth,
    /// A standby takes no new links; fail-over rotates to the first healthy one.
    pub standby: bool,
    /// What happens when this default domain is found blocked: off, confirm or auto.
    pub failover: String,
    /// Its ICP filing number, as written.
    pub icp_filing: Option<String>,
    /// The approved SMS templates that contain this domain: to submit again when it is
    /// rotated away.
    pub sms_templates: Vec<String>,
}

/// A domain's health.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct DomainHealth {
    /// healthy, suspect, blocked or unknown.
    pub state: String,
    pub checked_at: Option<chrono::DateTime<chrono::Utc>>,
    /// Why it is not healthy.
    pub reason: Option<String>,
}

/// A change of a domain's standby flag, fail-over policy, ICP filing or SMS templates.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PatchDomain {
    pub standby: Option<bool>,
    /// off, confirm or auto.
    pub failover: Option<String>,
    /// Its ICP filing number, such as 京ICP备12345678号-1 (null or "" clears it).
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub icp_filing: Option<Option<String>>,
    /// The approved SMS templates that contain this domain, one per line (null or "" clears
    /// them).
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub sms_templates: Option<Option<String>>,
}

/// A message to compose around a new short link.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SmsRequest {
    /// The text, with `{link}` once where the short link goes.
    #[schema(example = "Spring sale, 30% off: {link} Reply TD to unsubscribe")]
    pub message: String,
    /// The link's target.
    pub url: String,
    /// The sender's signature, put in front as 【signature】 (it counts).
    #[serde(default)]
    pub signature: Option<String>,
    /// The most segments the message may take (1 to 10, default 1).
    #[serde(default)]
    pub segments: Option<u64>,
    /// `standard` (GSM-7 when possible, else UCS-2; default) or `china` (the mainland
    /// carriers' rule: 70 characters, 67 per part, whatever the alphabet).
    #[serde(default)]
    pub rule: Option<String>,
    /// `false`: only plan (domain, code length, count) without creating the link.
    #[serde(default)]
    pub create: Option<bool>,
    #[serde(default)]
    pub description: Option<String>,
}

/// A text to count.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SmsCountRequest {
    pub message: String,
    /// `standard` (default) or `china`.
    #[serde(default)]
    pub rule: Option<String>,
}

/// How an SMS is counted.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
pub struct SmsCountView {
    /// `GSM-7`, `UCS-2` or `China`.
    pub encoding: String,
    /// Septets (GSM-7) or characters counted (UTF-16 units).
    pub units: usize,
    pub segments: usize,
    /// What a segment holds in this message: 160/153 (GSM-7) or 70/67.
    pub per_segment: usize,
    /// Left in the last segment.
    pub remaining: usize,
}

/// A composed message.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct SmsResult {
    /// The message as it will be sent (with a stand-in code when nothing was created).
    pub text: String,
    pub count: SmsCountView,
    /// The domain chosen.
    pub domain: String,
    /// The code length chosen.
    pub length: u8,
    pub warnings: Vec<String>,
    pub link: Option<Link>,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum BulkActionName {
    Disable,
    Enable,
    Tag,
    Untag,
    Delete,
}

/// Which links a bulk action selects by filter (as for GET /links).
#[derive(Clone, Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BulkFilter {
    #[serde(default)]
    pub q: Option<String>,
    #[serde(default)]
    pub status: Option<StatusFilter>,
    #[serde(default)]
    pub domain: Option<String>,
    #[serde(default)]
    pub tag: Option<String>,
}

/// An action on many links: give `codes`, or a `filter` for every link it matches (at most
/// 10,000 either way). `tag` and `untag` need `tags`.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BulkRequest {
    pub action: BulkActionName,
    #[serde(default)]
    #[schema(max_items = 10000)]
    pub codes: Option<Vec<String>>,
    #[serde(default)]
    pub filter: Option<BulkFilter>,
    #[serde(default)]
    #[schema(max_items = 10)]
    pub tags: Option<Vec<String>>,
}

#[derive(Clone, Debug, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
pub struct BulkResult {
    /// Links selected.
    pub matched: u64,
    /// Links changed (the others already were as asked).
    pub changed: u64,
    /// Links the key may not change (an operator key and others' links).
    pub refused: u64,
    /// Codes given that name no link.
    pub missing: Vec<String>,
}
