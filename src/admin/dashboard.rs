//! Visit dashboards: every link together, and one link. They read the daily aggregates only,
//! so a page costs a handful of indexed queries however many clicks are stored.

use crate::admin::access::auth::CurrentUser;
use crate::admin::error::AdminError;
use crate::admin::pages::{Frame, render};
use crate::charts;
use crate::charts::map::{self, Outline, Region};
use crate::i18n::Text;
use crate::i18n::{Message, Says};
use crate::rules::ShortCode;
use crate::services::links;
use crate::state::AppState;
use crate::stats::days::today;
use crate::stats::dimension::Dimension;
use crate::stats::report::{self, DayRow, LinkTotal, PRESETS, Period, Preset, Scope, Share};
use crate::stats::visits::Visits;
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use askama::Template;
use std::collections::HashMap;

const TOP: u64 = 10;

#[derive(serde::Deserialize, Default)]
pub struct RangeQuery {
    range: Option<String>,
    from: Option<String>,
    to: Option<String>,
}

impl RangeQuery {
    fn period(&self, state: &AppState) -> Result<Period, AdminError> {
        Period::parse(
            self.range.as_deref(),
            self.from.as_deref(),
            self.to.as_deref(),
            today(state.core.settings.timezone),
        )
        .map_err(|err| AdminError::BadRequest(err.says()))
    }
}

pub struct Breakdown {
    pub title: Text,
    pub chart: String,
    pub rows: Vec<Share>,
}

/// A map of where visitors were, with every place on it as a row of its table.
pub struct MapView {
    pub title: Text,
    pub svg: String,
    pub rows: Vec<Share>,
}

/// More places than any map has: every country and province with a visit is drawn.
const ON_A_MAP: u64 = 400;

#[derive(Template)]
#[template(path = "admin/dashboard.html")]
struct DashboardPage {
    frame: Frame,
    heading: Message,
    /// The link, when this is one link's page: (code, target).
    link: Option<(String, String)>,
    base: String,
    period: Period,
    /// Each preset: its `range` value, its label, and whether it is the one shown.
    presets: Vec<(String, String, bool)>,
    timezone: String,
    /// The range's totals as shown, each with its change against the days just before.
    totals: Vec<Total>,
    previous_from: chrono::NaiveDate,
    previous_to: chrono::NaiveDate,
    days: Vec<DayRow>,
    daily_chart: String,
    outcome_chart: String,
    hour_chart: String,
    hours: Vec<Share>,
    maps: Vec<MapView>,
    breakdowns: Vec<Breakdown>,
    top_links: Vec<LinkTotal>,
}

/// A total of the range as the page shows it.
struct Total {
    /// `pv`, `uv`, …: the ids of its elements.
    id: &'static str,
    label: String,
    value: i64,
    shown: String,
    change: String,
    /// `up`, `down` or `flat`, for its colour and arrow.
    trend: &'static str,
    previous: String,
}

fn shown_totals(now: &Visits, before: &Visits, lang: crate::i18n::Lang) -> Vec<Total> {
    [
        ("pv", t!("PV"), now.pv, before.pv),
        ("uv", t!("UV"), now.uv, before.uv),
        ("ip", t!("IP"), now.ip, before.ip),
        (
            "effective",
            t!("Effective"),
            now.effective,
            before.effective,
        ),
        (
            "ineffective",
            t!("Ineffective"),
            now.ineffective,
            before.ineffective,
        ),
    ]
    .into_iter()
    .map(|(id, label, value, previous)| Total {
        id,
        label: lang.t(label).to_owned(),
        value,
        shown: lang.number(value),
        change: lang.change(value, previous),
        trend: match value.cmp(&previous) {
            std::cmp::Ordering::Greater => "up",
            std::cmp::Ordering::Less => "down",
            std::cmp::Ordering::Equal => "flat",
        },
        previous: lang.f(t!("{} before"), lang.number(previous)),
    })
    .collect()
}

fn title(dimension: Dimension) -> Text {
    match dimension {
        Dimension::Country => t!("Countries"),
        Dimension::Province => t!("Provinces"),
        Dimension::City => t!("Cities"),
        Dimension::Carrier => t!("Carriers"),
        Dimension::Browser => t!("Browsers"),
        Dimension::Os => t!("Operating systems"),
        Dimension::Device => t!("Devices"),
        Dimension::Referrer => t!("Referrers"),
        Dimension::UtmSource => t!("Campaign sources (utm_source)"),
        Dimension::UtmMedium => t!("Campaign media (utm_medium)"),
        Dimension::UtmCampaign => t!("Campaigns (utm_campaign)"),
        Dimension::Channel => t!("Channels (channel)"),
        Dimension::Hour => t!("Hour of the day"),
    }
}

/// A value of a breakdown as the table and its chart show it: the words of inklink's own
/// vocabularies (browsers, systems, devices, carriers, and what an empty value stands for) in
/// the reader's language; what visitors brought (referrers, campaign parameters, places) as
/// it is (places are named in the reader's language by [`place_in`] where the GeoIP database
/// named them).
fn label(dimension: Dimension, value: &str, lang: crate::i18n::Lang) -> String {
    match (dimension, value) {
        (Dimension::Referrer, "") => lang.t(t!("(direct)")).to_owned(),
        (_, "") => lang.t(t!("(unknown)")).to_owned(),
        (Dimension::Carrier, word) => carrier_in(word, lang).to_owned(),
        (Dimension::Browser | Dimension::Os | Dimension::Device, word) => {
            let known = AGENT_WORDS
                .iter()
                .find(|text| text.english() == word)
                .copied();
            lang.t_or(known, word).to_owned()
        }
        _ => value.to_owned(),
    }
}

/// The names inklink's user-agent rules give that have words in Chinese: the super-apps and
/// the device categories. Only these are translated: any other browser name is a product
/// token the visitor's user agent carried (`Disabled/1.0` is a browser called "Disabled").
const AGENT_WORDS: &[Text] = &[
    t!("Alipay"),
    t!("DingTalk"),
    t!("Douyin"),
    t!("Taobao"),
    t!("Toutiao"),
    t!("WeChat"),
    t!("WeCom"),
    t!("Weibo"),
    t!("Xiaohongshu"),
    t!("bot"),
    t!("desktop"),
    t!("mobile"),
    t!("other"),
    t!("tablet"),
];

/// A carrier in the reader's language: the operators are stored by their Chinese names, and
/// any other carrier as the database named it.
pub(super) fn carrier_in(word: &str, lang: crate::i18n::Lang) -> &str {
    match lang {
        crate::i18n::Lang::En => crate::clicks::carrier::in_english(word),
        crate::i18n::Lang::ZhCn => word,
    }
}

/// A place in the reader's language, whatever language the clicks stored it in.
fn place_in(place: &report::NamedPlace, lang: crate::i18n::Lang) -> &str {
    match lang {
        crate::i18n::Lang::En => &place.en,
        crate::i18n::Lang::ZhCn => &place.zh,
    }
}

/// The places among `values` (of a place `dimension`) in `lang`, by stored name: those the
/// GeoIP database named; any other value is shown as stored.
pub(super) async fn places_in(
    db: &sea_orm::DatabaseConnection,
    dimension: Dimension,
    values: &[&str],
    lang: crate::i18n::Lang,
) -> Result<HashMap<String, String>, AdminError> {
    Ok(report::place_names(db, dimension, values)
        .await?
        .into_iter()
        .map(|(stored, place)| {
            let shown = place_in(&place, lang).to_owned();
            (stored, shown)
        })
        .collect())
}

/// The world's countries and China's provinces shaded by page views, each with its table;
/// none for a range without a located visit.
async fn maps(
    db: &sea_orm::DatabaseConnection,
    scope: Scope<'_>,
    period: &Period,
    lang: crate::i18n::Lang,
) -> Result<Vec<MapView>, AdminError> {
    let mut maps = Vec::with_capacity(2);
    for (dimension, outline, title) in [
        (
            Dimension::Country,
            Outline::World,
            t!("Countries and regions"),
        ),
        (
            Dimension::Province,
            Outline::China,
            t!("Provinces of China"),
        ),
    ] {
        let shares =
            report::breakdown(db, scope, dimension, period.from, period.to, ON_A_MAP).await?;
        let values: Vec<&str> = shares.iter().map(|s| s.value.as_str()).collect();
        let names = report::place_names(db, dimension, &values).await?;
        let mut rows = Vec::new();
        let mut regions = Vec::new();
        for share in &shares {
            let Some(place) = names.get(&share.value) else {
                continue;
            };
            let code = place.code.as_deref();
            let in_china = code.is_none_or(|code| code.starts_with("CN-"));
            if (outline == Outline::China && !in_china) || !map::knows(outline, code, &place.en) {
                continue;
            }
            let name = place_in(place, lang);
            let (pv, uv) = (lang.number(share.pv), lang.number(share.uv));
            regions.push(Region {
                code,
                english: &place.en,
                title: lang.fill(
                    t!("{place}: PV {pv}, UV {uv}"),
                    &[("place", name), ("pv", &pv), ("uv", &uv)],
                ),
                value: share.pv,
            });
            rows.push(Share {
                value: name.to_owned(),
                ..share.clone()
            });
        }
        if !rows.is_empty() {
            maps.push(MapView {
                title,
                svg: map::choropleth(outline, &regions, lang.t(title)),
                rows,
            });
        }
    }
    Ok(maps)
}

async fn page(
    state: &AppState,
    user: &CurrentUser,
    scope: Scope<'_>,
    period: Period,
    heading: Message,
    link: Option<(String, String)>,
    base: String,
) -> Result<HttpResponse, AdminError> {
    let db = &state.core.db;
    let days = report::daily(db, scope, period.from, period.to).await?;
    let totals = report::range_totals(db, &state.core.kept, scope, period.from, period.to).await?;
    let previous_to = period.from.pred_opt().unwrap_or(period.from);
    let previous_from = previous_to - chrono::Duration::days(period.days() - 1);
    let previous =
        report::range_totals(db, &state.core.kept, scope, previous_from, previous_to).await?;
    let hours = report::hours(db, scope, period.from, period.to).await?;
    let mut breakdowns = Vec::new();
    for (dimension, shares) in report::breakdowns(db, scope, period.from, period.to, TOP).await? {
        // The campaign parameters show only when visitors brought them.
        if shares.is_empty() && dimension.is_query() {
            continue;
        }
        let values: Vec<&str> = shares.iter().map(|s| s.value.as_str()).collect();
        let places = places_in(db, dimension, &values, user.lang).await?;
        breakdowns.push((dimension, shares, places));
    }
    let breakdowns = breakdowns
        .into_iter()
        .map(|(dimension, shares, places)| {
            let rows: Vec<Share> = shares
                .into_iter()
                .map(|share| Share {
                    value: match places.get(&share.value) {
                        Some(place) => place.clone(),
                        None => label(dimension, &share.value, user.lang),
                    },
                    ..share
                })
                .collect();
            let bars: Vec<(String, i64)> = rows.iter().map(|r| (r.value.clone(), r.pv)).collect();
            Breakdown {
                title: title(dimension),
                chart: charts::horizontal_bars(&bars),
                rows,
            }
        })
        .collect();
    let maps = maps(db, scope, &period, user.lang).await?;
    let top_links = match scope {
        Scope::All => {
            report::top_links(db, &state.core.kept, period.from, period.to, TOP as usize).await?
        }
        Scope::Link(_) | Scope::Tag(_) => Vec::new(),
    };
    let section = match scope {
        Scope::All => "dashboard",
        Scope::Link(_) => "links",
        Scope::Tag(_) => "tags",
    };
    let page = DashboardPage {
        frame: Frame::new(user, None, section),
        heading,
        link,
        base,
        period,
        presets: PRESETS
            .iter()
            .map(|preset| {
                let label = match preset {
                    Preset::Today => user.lang.t(t!("Today")).to_owned(),
                    Preset::Yesterday => user.lang.t(t!("Yesterday")).to_owned(),
                    Preset::Last(days) => user.lang.f(t!("{} days"), days),
                };
                (preset.name(), label, period.preset == Some(*preset))
            })
            .collect(),
        timezone: state.core.settings.timezone.name().to_owned(),
        daily_chart: charts::daily_lines(&days),
        outcome_chart: charts::outcome_bars(&days, user.lang),
        hour_chart: charts::hour_bars(&hours),
        hours,
        totals: shown_totals(&totals, &previous, user.lang),
        previous_from,
        previous_to,
        days,
        maps,
        breakdowns,
        top_links,
    };
    Ok(render(StatusCode::OK, &page))
}

pub async fn global(
    user: CurrentUser,
    state: web::Data<AppState>,
    query: web::Query<RangeQuery>,
) -> Result<HttpResponse, AdminError> {
    let period = query.period(&state)?;
    page(
        &state,
        &user,
        Scope::All,
        period,
        Message::new(t!("Dashboard")),
        None,
        "/admin/dashboard".to_owned(),
    )
    .await
}

async fn find_link(state: &AppState, code: &str) -> Result<(i64, String, String), AdminError> {
    let code = ShortCode::parse(code).map_err(|_| AdminError::NotFound)?;
    let link = links::find_by_code(&state.core.db, &code)
        .await?
        .ok_or(AdminError::NotFound)?;
    // Shown as people read it (a browser encodes it again when followed).
    Ok((
        link.id,
        link.compression_code.to_string(),
        crate::rules::TargetUrl::readable(&link.long_url),
    ))
}

pub async fn link(
    user: CurrentUser,
    state: web::Data<AppState>,
    code: web::Path<String>,
    query: web::Query<RangeQuery>,
) -> Result<HttpResponse, AdminError> {
    let (id, code, target) = find_link(&state, &code).await?;
    let period = query.period(&state)?;
    let base = format!("/admin/links/{code}/stats");
    page(
        &state,
        &user,
        Scope::Link(id),
        period,
        Message::new(t!("Visits to {code}")).data("code", &code),
        Some((code, target)),
        base,
    )
    .await
}

/// The dashboard of a tag: its links together, UV and IP distinct over them.
pub async fn tag(
    user: CurrentUser,
    state: web::Data<AppState>,
    tag: web::Path<String>,
    query: web::Query<RangeQuery>,
) -> Result<HttpResponse, AdminError> {
    let tag = crate::rules::Tag::parse(&tag).map_err(|_| AdminError::NotFound)?;
    let period = query.period(&state)?;
    let encoded = crate::net::path_segment(tag.as_str());
    page(
        &state,
        &user,
        Scope::Tag(tag.as_str()),
        period,
        Message::new(t!("Visits to the links tagged {tag}")).data("tag", &tag),
        None,
        format!("/admin/tags/{encoded}/stats"),
    )
    .await
}

/// The daily rows of `scope`, then one `total` row for the range (UV and IP distinct over the
/// range), as the file `inklink-visits-{what}{from}-{to}.csv`.
async fn daily_csv(
    state: &AppState,
    scope: Scope<'_>,
    period: &Period,
    what: &str,
) -> Result<HttpResponse, AdminError> {
    let db = &state.core.db;
    let days = report::daily(db, scope, period.from, period.to).await?;
    let total = report::range_totals(db, &state.core.kept, scope, period.from, period.to).await?;
    let name = format!("inklink-visits-{what}{}-{}.csv", period.from, period.to);
    // Dates, the word "total" and numbers: nothing a CSV field would need to quote.
    let mut body = String::from("date,pv,uv,ip,effective,ineffective\n");
    let rows = days
        .iter()
        .map(|d| (d.day.to_string(), &d.visits))
        .chain([("total".to_owned(), &total)]);
    for (label, v) in rows {
        body.push_str(&format!(
            "{label},{},{},{},{},{}\n",
            v.pv, v.uv, v.ip, v.effective, v.ineffective
        ));
    }
    Ok(crate::admin::download::attachment(&body, &name))
}

pub async fn global_csv(
    _user: CurrentUser,
    state: web::Data<AppState>,
    query: web::Query<RangeQuery>,
) -> Result<HttpResponse, AdminError> {
    let period = query.period(&state)?;
    daily_csv(&state, Scope::All, &period, "").await
}

pub async fn link_csv(
    _user: CurrentUser,
    state: web::Data<AppState>,
    code: web::Path<String>,
    query: web::Query<RangeQuery>,
) -> Result<HttpResponse, AdminError> {
    let (id, code, _) = find_link(&state, &code).await?;
    let period = query.period(&state)?;
    daily_csv(&state, Scope::Link(id), &period, &format!("{code}-")).await
}

pub async fn tag_csv(
    _user: CurrentUser,
    state: web::Data<AppState>,
    tag: web::Path<String>,
    query: web::Query<RangeQuery>,
) -> Result<HttpResponse, AdminError> {
    let tag = crate::rules::Tag::parse(&tag).map_err(|_| AdminError::NotFound)?;
    let period = query.period(&state)?;
    let safe: String = tag
        .as_str()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let scope = Scope::Tag(tag.as_str());
    daily_csv(&state, scope, &period, &format!("tag-{safe}-")).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::i18n::Lang;

    #[test]
    fn apps_and_devices_are_translated_and_any_other_browser_name_is_shown_as_sent() {
        assert_eq!(label(Dimension::Browser, "WeChat", Lang::ZhCn), "微信");
        assert_eq!(label(Dimension::Device, "mobile", Lang::ZhCn), "手机");
        assert_eq!(label(Dimension::Device, "mobile", Lang::En), "mobile");
        // Product tokens of visitors' user agents that read like words of the UI.
        assert_eq!(
            label(Dimension::Browser, "Disabled", Lang::ZhCn),
            "Disabled"
        );
        assert_eq!(label(Dimension::Browser, "Edit", Lang::ZhCn), "Edit");
        assert_eq!(label(Dimension::Os, "Links", Lang::ZhCn), "Links");
        assert_eq!(label(Dimension::Browser, "", Lang::ZhCn), "（未知）");
        assert_eq!(
            label(Dimension::Carrier, "中国移动", Lang::En),
            "China Mobile"
        );
        assert_eq!(
            label(Dimension::Carrier, "中国移动", Lang::ZhCn),
            "中国移动"
        );
        assert_eq!(
            label(Dimension::Carrier, "Disabled", Lang::ZhCn),
            "Disabled"
        );
    }
}
