//! Recent in-app traffic by host: what domain health's traffic probe reads (a domain whose
//! WeChat and QQ visitors vanish, or all stop at the "open in browser" page, while another
//! domain still gets them).

use crate::db::sql::statement;
use sea_orm::{ConnectionTrait, DbErr};

/// The in-app browsers whose visitors a blocking app stops: WeChat (and WeCom) and QQ.
const IN_APP: [&str; 3] = ["WeChat", "WeCom", "QQ"];

/// In-app visits to one host in one of the two windows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostTraffic {
    pub host: String,
    /// In the latest window (else the one before it).
    pub latest: bool,
    /// Visits in all, and those that stopped at the "open in browser" page.
    pub visits: i64,
    pub stopped: i64,
}

/// In-app page views (bots apart) per host since `since` (microseconds), split at `split`
/// into the window before and the latest, read from at most the `limit` newest clicks so that
/// the cost stays bounded however busy the service is.
pub async fn in_app_by_host(
    db: &impl ConnectionTrait,
    since: i64,
    split: i64,
    limit: u64,
) -> Result<Vec<HostTraffic>, DbErr> {
    // Grouped by position: PostgreSQL takes `CASE WHEN c.at >= $1` and `… >= $4` for two
    // different expressions.
    let sql = format!(
        "SELECT t.value AS host, \
         CASE WHEN c.at >= ? THEN 1 ELSE 0 END AS latest, \
         COUNT(*) AS visits, \
         COUNT(CASE WHEN o.failure_reason = 'in_app_page' THEN 1 END) AS stopped \
         FROM (SELECT at, host, agent, outcome FROM click \
               WHERE at >= ? AND bot = FALSE ORDER BY at DESC LIMIT {limit}) c \
         JOIN click_agent a ON a.id = c.agent \
         JOIN click_text t ON t.id = c.host \
         JOIN click_outcome o ON o.id = c.outcome \
         WHERE a.browser IN ({}) \
         GROUP BY 1, 2",
        vec!["?"; IN_APP.len()].join(", ")
    );
    let mut values = vec![split.into(), since.into()];
    values.extend(IN_APP.iter().map(|app| (*app).into()));
    let rows = db
        .query_all_raw(statement(db.get_database_backend(), &sql, values))
        .await?;
    rows.iter()
        .map(|row| {
            let number = |column: &str| -> Result<i64, DbErr> {
                // A CASE of small literals may come back as a 32-bit integer.
                row.try_get::<i64>("", column)
                    .or_else(|_| row.try_get::<i32>("", column).map(i64::from))
            };
            Ok(HostTraffic {
                host: row.try_get("", "host")?,
                latest: number("latest")? == 1,
                visits: number("visits")?,
                stopped: number("stopped")?,
            })
        })
        .collect()
}
