//! What dashboards and the API read: sums over the daily aggregates, never raw events.

use super::dimension::{ALL_LINKS, Dimension};
use super::kept::FinishedDays;
use super::visits::Visits;
use crate::db::sql::{each_row_in, statement, sum};
use chrono::{Days, NaiveDate};
use sea_orm::sea_query::Value;
use sea_orm::{ConnectionTrait, DbErr};
use serde::Serialize;
use std::collections::HashMap;

/// Whose visits: every link together, one link, or the links of a tag (a campaign).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope<'a> {
    All,
    Link(i64),
    Tag(&'a str),
}

impl Scope<'_> {
    /// The condition on `url_map_id` that picks the scope's rows, and its value.
    fn rows(self) -> (&'static str, Value) {
        match self {
            Self::All => ("url_map_id = ?", ALL_LINKS.into()),
            Self::Link(id) => ("url_map_id = ?", id.into()),
            Self::Tag(tag) => (
                "url_map_id IN (SELECT link_id FROM link_tag WHERE tag = ?)",
                tag.into(),
            ),
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DayRow {
    pub day: NaiveDate,
    pub visits: Visits,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Share {
    pub value: String,
    pub pv: i64,
    pub uv: i64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkTotal {
    pub id: i64,
    pub code: String,
    pub long_url: String,
    /// What the link's maker wrote about it (empty: nothing).
    pub description: String,
    pub pv: i64,
    pub effective: i64,
    pub ineffective: i64,
}

impl LinkTotal {
    /// The target as people read it (percent-encoded text decoded).
    pub fn shown_url(&self) -> String {
        crate::rules::TargetUrl::readable(&self.long_url)
    }
}

fn count(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Every day from `from` to `to`, in order, days without visits as zeros.
pub async fn daily(
    db: &impl ConnectionTrait,
    scope: Scope<'_>,
    from: NaiveDate,
    to: NaiveDate,
) -> Result<Vec<DayRow>, DbErr> {
    let backend = db.get_database_backend();
    let (rows, value) = scope.rows();
    let sql = format!(
        "SELECT stat_date, {pv} AS pv, {uv} AS uv, {ip} AS ip, {effective} AS effective, \
         {ineffective} AS ineffective FROM visit_statistics \
         WHERE {rows} AND stat_date >= ? AND stat_date <= ? GROUP BY stat_date",
        pv = sum(backend, "pv"),
        uv = sum(backend, "uv"),
        ip = sum(backend, "ip_count"),
        effective = sum(backend, "effective"),
        ineffective = sum(backend, "ineffective"),
    );
    let values: Vec<Value> = vec![value.clone(), from.into(), to.into()];
    let mut stored: HashMap<NaiveDate, DayRow> = HashMap::new();
    for row in db.query_all_raw(statement(backend, &sql, values)).await? {
        let day: NaiveDate = row.try_get("", "stat_date")?;
        stored.insert(
            day,
            DayRow {
                day,
                visits: Visits::read(&row)?,
            },
        );
    }
    // A tag's UV and IP per day are distinct counts over its links' visitor sets (a visitor
    // of two of its links is one), as over a range.
    if let Scope::Tag(_) = scope {
        let distinct = super::daysets::union(db, rows, value, from, to, true).await?;
        for row in stored.values_mut() {
            (row.visits.uv, row.visits.ip) = (0, 0);
        }
        for (day, (uv, ip)) in distinct.days {
            if let Some(row) = stored.get_mut(&day) {
                (row.visits.uv, row.visits.ip) = (count(uv), count(ip));
            }
        }
    }
    let mut days = Vec::new();
    let mut day = from;
    while day <= to {
        days.push(stored.remove(&day).unwrap_or(DayRow {
            day,
            ..DayRow::default()
        }));
        day = match day.checked_add_days(Days::new(1)) {
            Some(next) => next,
            None => break,
        };
    }
    Ok(days)
}

/// The five numbers of a whole range: PV, effective and ineffective summed over its days, UV
/// and IP as true distinct counts over the range (a visitor who came on three days is one).
pub async fn range_totals(
    db: &impl ConnectionTrait,
    kept: &FinishedDays,
    scope: Scope<'_>,
    from: NaiveDate,
    to: NaiveDate,
) -> Result<Visits, DbErr> {
    let backend = db.get_database_backend();
    let (rows, value) = scope.rows();
    let sums = format!(
        "SELECT {pv} AS pv, {effective} AS effective, {ineffective} AS ineffective \
         FROM visit_statistics \
         WHERE {rows} AND stat_date >= ? AND stat_date <= ?",
        pv = sum(backend, "pv"),
        effective = sum(backend, "effective"),
        ineffective = sum(backend, "ineffective"),
    );
    let range = || -> Vec<Value> { vec![value.clone(), from.into(), to.into()] };
    let mut totals = Visits::default();
    if let Some(row) = db.query_one_raw(statement(backend, &sums, range())).await? {
        let read = |column: &str| -> Result<i64, DbErr> {
            Ok(row.try_get::<Option<i64>>("", column)?.unwrap_or(0))
        };
        (totals.pv, totals.effective, totals.ineffective) =
            (read("pv")?, read("effective")?, read("ineffective")?);
    }
    let (uv, ip) = match scope {
        Scope::All => kept.distinct(db, ALL_LINKS, from, to).await?,
        Scope::Link(id) => kept.distinct(db, id, from, to).await?,
        // A tag's links change with its tags: read its days each time.
        Scope::Tag(_) => {
            let all = super::daysets::union(db, rows, value, from, to, false).await?;
            (all.visitors.len(), all.addresses.len())
        }
    };
    (totals.uv, totals.ip) = (count(uv), count(ip));
    Ok(totals)
}

/// The `limit` most viewed values of `dimension` over the range (UV summed over days).
pub async fn breakdown(
    db: &impl ConnectionTrait,
    scope: Scope<'_>,
    dimension: Dimension,
    from: NaiveDate,
    to: NaiveDate,
    limit: u64,
) -> Result<Vec<Share>, DbErr> {
    let Some(links) = links_of(db, scope).await? else {
        return all_links_breakdown(db, dimension, from, to, limit).await;
    };
    let values = super::dayvalues::summed(db, &links, from, to).await?;
    Ok(most_viewed(&values, dimension, limit))
}

/// The links whose packed days (`stats::dayvalues`) a link's or a tag's breakdown sums; `None`
/// for all links, whose rows are a row per value.
async fn links_of(db: &impl ConnectionTrait, scope: Scope<'_>) -> Result<Option<Vec<i64>>, DbErr> {
    Ok(Some(match scope {
        Scope::All => return Ok(None),
        Scope::Link(id) => vec![id],
        Scope::Tag(tag) => {
            let backend = db.get_database_backend();
            let sql = "SELECT link_id FROM link_tag WHERE tag = ?";
            let rows = db.query_all_raw(statement(backend, sql, vec![tag.into()]));
            (rows.await?.iter())
                .map(|row| row.try_get::<i64>("", "link_id"))
                .collect::<Result<_, _>>()?
        }
    }))
}

/// [`breakdown`] of all links: their rows are a row per value, summed by the database.
async fn all_links_breakdown(
    db: &impl ConnectionTrait,
    dimension: Dimension,
    from: NaiveDate,
    to: NaiveDate,
    limit: u64,
) -> Result<Vec<Share>, DbErr> {
    let backend = db.get_database_backend();
    let sql = format!(
        "SELECT value, {pv} AS pv, {uv} AS uv FROM visit_statistics_breakdown \
         WHERE url_map_id = ? AND dimension = ? AND stat_date >= ? AND stat_date <= ? \
         GROUP BY value ORDER BY 2 DESC, value LIMIT {limit}",
        pv = sum(backend, "pv"),
        uv = sum(backend, "uv"),
    );
    let values: Vec<Value> = vec![
        ALL_LINKS.into(),
        dimension.name().into(),
        from.into(),
        to.into(),
    ];
    db.query_all_raw(statement(backend, &sql, values))
        .await?
        .into_iter()
        .map(|row| {
            Ok(Share {
                value: row.try_get("", "value")?,
                pv: row.try_get("", "pv")?,
                uv: row.try_get("", "uv")?,
            })
        })
        .collect()
}

/// The `limit` values of `dimension` in `values` with the most page views (then by value).
fn most_viewed(
    values: &super::dayvalues::DayValues,
    dimension: Dimension,
    limit: u64,
) -> Vec<Share> {
    let name = dimension.name();
    let mut shares: Vec<Share> = (values.iter())
        .filter(|((d, _), _)| d == name)
        .map(|((_, value), (pv, uv))| Share {
            value: value.clone(),
            pv: *pv,
            uv: *uv,
        })
        .collect();
    shares.sort_by(|a, b| b.pv.cmp(&a.pv).then_with(|| a.value.cmp(&b.value)));
    shares.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    shares
}

/// Every breakdown dimension shown as a table, in [`Dimension::SHOWN`] order.
pub async fn breakdowns(
    db: &impl ConnectionTrait,
    scope: Scope<'_>,
    from: NaiveDate,
    to: NaiveDate,
    limit: u64,
) -> Result<Vec<(Dimension, Vec<Share>)>, DbErr> {
    let mut all = Vec::with_capacity(Dimension::SHOWN.len());
    let Some(links) = links_of(db, scope).await? else {
        for dimension in Dimension::SHOWN {
            let shares = all_links_breakdown(db, dimension, from, to, limit).await?;
            all.push((dimension, shares));
        }
        return Ok(all);
    };
    // A link's or a tag's rows hold every dimension: read once.
    let values = super::dayvalues::summed(db, &links, from, to).await?;
    for dimension in Dimension::SHOWN {
        all.push((dimension, most_viewed(&values, dimension, limit)));
    }
    Ok(all)
}

pub use crate::clickstore::places::Known as NamedPlace;

/// What the places among `values` of `dimension` (a country, province or city as stored) are
/// called in each language of the UI, and their ISO codes; empty for any other dimension, and
/// without the places the GeoIP database never named.
pub async fn place_names(
    db: &impl ConnectionTrait,
    dimension: Dimension,
    values: &[&str],
) -> Result<HashMap<String, NamedPlace>, DbErr> {
    use crate::clickstore::places::{Level, known};
    let level = match dimension {
        Dimension::Country => Level::Country,
        Dimension::Province => Level::Province,
        Dimension::City => Level::City,
        _ => return Ok(HashMap::new()),
    };
    known(db, level, values).await
}

/// The links with the most page views over the range (a deleted link keeps its place
/// and is left out).
pub async fn top_links(
    db: &impl ConnectionTrait,
    kept: &FinishedDays,
    from: NaiveDate,
    to: NaiveDate,
    limit: usize,
) -> Result<Vec<LinkTotal>, DbErr> {
    let mut ranked: Vec<(i64, (i64, i64, i64))> =
        kept.link_sums(db, from, to).await?.into_iter().collect();
    let order = |a: &(i64, (i64, i64, i64)), b: &(i64, (i64, i64, i64))| {
        b.1.0.cmp(&a.1.0).then(a.0.cmp(&b.0))
    };
    if ranked.len() > limit {
        ranked.select_nth_unstable_by(limit, order);
        ranked.truncate(limit);
    }
    ranked.sort_unstable_by(order);
    if ranked.is_empty() {
        return Ok(Vec::new());
    }
    let backend = db.get_database_backend();
    let sql = format!(
        "SELECT id, compression_code, long_url, description FROM url_map WHERE id IN ({})",
        vec!["?"; ranked.len()].join(", ")
    );
    let ids = ranked.iter().map(|(id, _)| Value::from(*id)).collect();
    let mut links: HashMap<i64, (String, String, String)> = HashMap::new();
    for row in db.query_all_raw(statement(backend, &sql, ids)).await? {
        links.insert(
            row.try_get("", "id")?,
            (
                row.try_get("", "compression_code")?,
                row.try_get("", "long_url")?,
                row.try_get::<Option<String>>("", "description")?
                    .unwrap_or_default(),
            ),
        );
    }
    Ok(ranked
        .into_iter()
        .filter_map(|(id, (pv, effective, ineffective))| {
            let (code, long_url, description) = links.remove(&id)?;
            Some(LinkTotal {
                id,
                code,
                long_url,
                description,
                pv,
                effective,
                ineffective,
            })
        })
        .collect())
}

/// The days a report covers, both ends included.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Period {
    pub from: NaiveDate,
    pub to: NaiveDate,
    /// How it was chosen, when by a preset.
    pub preset: Option<Preset>,
}

/// The ranges offered in one click.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Preset {
    Today,
    Yesterday,
    /// The last N days, today included.
    Last(u32),
}

pub const PRESETS: [Preset; 5] = [
    Preset::Today,
    Preset::Yesterday,
    Preset::Last(7),
    Preset::Last(30),
    Preset::Last(90),
];

impl Preset {
    /// Its value of the `range` parameter.
    pub fn name(self) -> String {
        match self {
            Self::Today => "today".to_owned(),
            Self::Yesterday => "yesterday".to_owned(),
            Self::Last(days) => days.to_string(),
        }
    }

    fn parse(text: &str) -> Option<Self> {
        PRESETS.into_iter().find(|preset| preset.name() == text)
    }

    pub fn period(self, today: NaiveDate) -> Period {
        let (from, to) = match self {
            Self::Today => (today, today),
            Self::Yesterday => {
                let yesterday = today.pred_opt().unwrap_or(today);
                (yesterday, yesterday)
            }
            Self::Last(days) => (
                today
                    .checked_sub_days(Days::new(u64::from(days.max(1) - 1)))
                    .unwrap_or(today),
                today,
            ),
        };
        Period {
            from,
            to,
            preset: Some(self),
        }
    }
}
/// Longest custom range: a year of days (leap years included) keeps charts readable.
pub const MAX_DAYS: i64 = 366;

#[derive(Debug, thiserror::Error, crate::i18n::Says, PartialEq, Eq)]
pub enum PeriodError {
    #[error("{field} '{text}' is not a date; use YYYY-MM-DD")]
    BadDate { field: &'static str, text: String },
    #[error("the range must be today, yesterday, 7, 30 or 90 (days), not '{0}'")]
    BadPreset(String),
    #[error("the start {from} is after the end {to}")]
    Reversed { from: NaiveDate, to: NaiveDate },
    #[error("at most {MAX_DAYS} days at a time; this range has {0}")]
    TooLong(i64),
}

impl PeriodError {
    /// The parameter the error is about.
    pub fn field(&self) -> &'static str {
        match self {
            Self::BadDate { field, .. } => field,
            Self::BadPreset(_) => "range",
            Self::Reversed { .. } | Self::TooLong(_) => "from",
        }
    }
}

impl Period {
    pub fn last(days: u32, today: NaiveDate) -> Self {
        Preset::Last(days).period(today)
    }

    /// From a query string's `range` (today, yesterday, 7, 30, 90) or `from` and `to`
    /// (YYYY-MM-DD; a missing end is today, a missing start six days before the end).
    /// Default: the last 7 days.
    pub fn parse(
        range: Option<&str>,
        from: Option<&str>,
        to: Option<&str>,
        today: NaiveDate,
    ) -> Result<Self, PeriodError> {
        let date = |field: &'static str, text: &str| {
            NaiveDate::parse_from_str(text, "%Y-%m-%d").map_err(|_| PeriodError::BadDate {
                field,
                text: text.to_owned(),
            })
        };
        let (from, to) = (nonempty(from), nonempty(to));
        let range = nonempty(range);
        if from.is_none() && to.is_none() {
            return match range {
                None => Ok(Self::last(7, today)),
                Some(text) => Preset::parse(text)
                    .map(|preset| preset.period(today))
                    .ok_or_else(|| PeriodError::BadPreset(text.chars().take(40).collect())),
            };
        }
        let to = to
            .map(|text| date("to", text))
            .transpose()?
            .unwrap_or(today);
        let from = match from {
            Some(text) => date("from", text)?,
            None => to.checked_sub_days(Days::new(6)).unwrap_or(to),
        };
        if from > to {
            return Err(PeriodError::Reversed { from, to });
        }
        let days = (to - from).num_days() + 1;
        if days > MAX_DAYS {
            return Err(PeriodError::TooLong(days));
        }
        Ok(Self {
            from,
            to,
            preset: None,
        })
    }

    pub fn days(&self) -> i64 {
        (self.to - self.from).num_days() + 1
    }
}

fn nonempty(value: Option<&str>) -> Option<&str> {
    value.map(str::trim).filter(|v| !v.is_empty())
}

/// A link's clicks at a glance: page views today, over the last 7 days and in all, and per
/// day over the last 14 (oldest first).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Glance {
    pub today: i64,
    pub week: i64,
    pub total: i64,
    pub last14: [i64; 14],
}

/// [`Glance`] of each of `ids` (links without views are absent), from the daily aggregates.
pub async fn glance(
    db: &impl ConnectionTrait,
    ids: &[i64],
    today: NaiveDate,
) -> Result<HashMap<i64, Glance>, DbErr> {
    let backend = db.get_database_backend();
    let mut found: HashMap<i64, Glance> = HashMap::new();
    let first = today - chrono::Duration::days(13);
    let totals = format!(
        "SELECT url_map_id, {pv} AS pv FROM visit_statistics WHERE url_map_id",
        pv = sum(backend, "pv"),
    );
    each_row_in(db, (&totals, ids), (" GROUP BY url_map_id", &[]), |row| {
        let id: i64 = row.try_get("", "url_map_id")?;
        found.entry(id).or_default().total = row.try_get::<Option<i64>>("", "pv")?.unwrap_or(0);
        Ok(())
    })
    .await?;
    let recent = "SELECT url_map_id, stat_date, pv FROM visit_statistics WHERE url_map_id";
    let days = [first.into(), today.into()];
    each_row_in(
        db,
        (recent, ids),
        (" AND stat_date >= ? AND stat_date <= ?", &days),
        |row| {
            let id: i64 = row.try_get("", "url_map_id")?;
            let day: NaiveDate = row.try_get("", "stat_date")?;
            let pv: i64 = row.try_get("", "pv")?;
            let glance = found.entry(id).or_default();
            let index = (day - first).num_days();
            if let Ok(index) = usize::try_from(index)
                && index < 14
            {
                glance.last14[index] = pv;
                if index >= 7 {
                    glance.week += pv;
                }
                if index == 13 {
                    glance.today = pv;
                }
            }
            Ok(())
        },
    )
    .await?;
    Ok(found)
}

/// Page views and visitors (UV summed over days) for each hour of the day, `00` to `23`,
/// over the range; hours without views as zeros.
pub async fn hours(
    db: &impl ConnectionTrait,
    scope: Scope<'_>,
    from: NaiveDate,
    to: NaiveDate,
) -> Result<Vec<Share>, DbErr> {
    let found = breakdown(db, scope, Dimension::Hour, from, to, 24).await?;
    Ok((0..24)
        .map(|hour| {
            let value = format!("{hour:02}");
            found
                .iter()
                .find(|share| share.value == value)
                .cloned()
                .unwrap_or(Share {
                    value,
                    pv: 0,
                    uv: 0,
                })
        })
        .collect())
}
