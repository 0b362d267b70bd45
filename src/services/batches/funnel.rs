//! The funnel of a batch as people read it: sent → delivered → people who clicked → CTR,
//! failures by error code, the time from delivery to first click, and the same by province,
//! city and carrier; read from the figures `stats::funnel` keeps, never from the recipients.

use crate::db::entities::campaign_batch;
use crate::stats::funnel::{Figures, Kind, figures};
use sea_orm::{DatabaseConnection, DbErr};

/// One value of a breakdown (a province, a city, a carrier). The empty value holds the
/// delivered recipients who have not clicked (and clicks from unknown places).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    pub value: String,
    pub delivered: i64,
    pub clicked: i64,
    pub clicks: i64,
}

/// Clicks and deliveries in one hour since the batch's first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hour {
    /// Hours since the first hour with a delivery or a click.
    pub since_start: i64,
    pub delivered: i64,
    pub clicks: i64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Funnel {
    pub sent: i64,
    pub delivered: i64,
    pub failed: i64,
    /// Recipients with at least one click by a person.
    pub clicked: i64,
    pub clicks: i64,
    /// `clicked ÷ delivered` (0 when nothing was delivered).
    pub ctr: f64,
    pub failed_by_code: Vec<(String, i64)>,
    /// The median minutes from delivery to first click, among delivered people who clicked.
    pub median_minutes_to_click: Option<i64>,
    pub by_province: Vec<Row>,
    pub by_city: Vec<Row>,
    pub by_carrier: Vec<Row>,
    /// The first hour of `hours` (hours since 1970, UTC).
    pub start_hour: Option<i64>,
    pub hours: Vec<Hour>,
}

/// The funnel of `batch`, as of now.
pub async fn read(db: &DatabaseConnection, batch: &campaign_batch::Model) -> Result<Funnel, DbErr> {
    let rows = figures(db, batch.id).await?;
    let total = rows
        .iter()
        .find(|(kind, _, _)| *kind == Kind::Total)
        .map(|(_, _, f)| *f)
        .unwrap_or_default();
    let breakdown = |wanted: Kind| -> Vec<Row> {
        let mut out: Vec<Row> = rows
            .iter()
            .filter(|(kind, _, f)| *kind == wanted && *f != Figures::default())
            .map(|(_, value, f)| Row {
                value: value.clone(),
                delivered: f.delivered,
                clicked: f.clicked,
                clicks: f.clicks,
            })
            .filter(|r| r.delivered != 0 || r.clicked != 0 || r.clicks != 0)
            .collect();
        out.sort_by(|a, b| {
            (b.clicked, b.delivered, b.clicks)
                .cmp(&(a.clicked, a.delivered, a.clicks))
                .then_with(|| a.value.cmp(&b.value))
        });
        out
    };
    let mut failed_by_code: Vec<(String, i64)> = rows
        .iter()
        .filter(|(kind, _, f)| *kind == Kind::Error && f.failed > 0)
        .map(|(_, value, f)| (value.clone(), f.failed))
        .collect();
    failed_by_code.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let mut delays: Vec<(i64, i64)> = rows
        .iter()
        .filter(|(kind, _, f)| *kind == Kind::Delay && f.clicked > 0)
        .filter_map(|(_, value, f)| Some((value.parse().ok()?, f.clicked)))
        .collect();
    delays.sort_unstable();
    let people: i64 = delays.iter().map(|(_, n)| n).sum();
    let median_minutes_to_click = (people > 0).then(|| {
        // The lower median: the minute of the person in the middle.
        let middle = (people + 1) / 2;
        let mut seen = 0;
        delays
            .iter()
            .find(|(_, n)| {
                seen += n;
                seen >= middle
            })
            .map_or(0, |(minutes, _)| *minutes)
    });
    let mut by_hour: std::collections::BTreeMap<i64, (i64, i64)> = Default::default();
    for (kind, value, f) in &rows {
        let Ok(hour) = value.parse::<i64>() else {
            continue;
        };
        match kind {
            Kind::Hour => by_hour.entry(hour).or_default().1 += f.clicks,
            Kind::ReceiptHour => by_hour.entry(hour).or_default().0 += f.delivered,
            _ => {}
        }
    }
    by_hour.retain(|_, (d, c)| *d != 0 || *c != 0);
    let start_hour = by_hour.keys().next().copied();
    let hours = by_hour
        .iter()
        .map(|(hour, (delivered, clicks))| Hour {
            since_start: hour - start_hour.unwrap_or(*hour),
            delivered: *delivered,
            clicks: *clicks,
        })
        .collect();
    Ok(Funnel {
        sent: batch.recipients,
        delivered: total.delivered,
        failed: total.failed,
        clicked: total.clicked,
        clicks: total.clicks,
        ctr: match total.delivered {
            0 => 0.0,
            delivered => total.clicked as f64 / delivered as f64,
        },
        failed_by_code,
        median_minutes_to_click,
        by_province: breakdown(Kind::Province),
        by_city: breakdown(Kind::City),
        by_carrier: breakdown(Kind::Carrier),
        start_hour,
        hours,
    })
}
