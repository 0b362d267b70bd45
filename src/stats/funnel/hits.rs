//! The clicks side of the funnel: which page views are recipients' (their own code, or the
//! `r` parameter of a `param` batch's link), counted into their rows and their batches'
//! figures in the counting turn's transaction, or taken back before a recount.

use super::{COLUMNS, Changes, Kind, RECIPIENT_PARAM, Recipient, for_update, store};
use crate::clickstore::dictionary::texts;
use crate::clickstore::row::Text;
use crate::clickstore::waiting::{Meanings, Waiting};
use crate::db::sql::each_row_in;
use sea_orm::{ConnectionTrait, DbErr};
use std::collections::{BTreeMap, BTreeSet, HashMap};

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
    // link → (its code batches, its param batches)
    let mut batches: HashMap<i64, (Vec<i64>, Vec<i64>)> = HashMap::new();
    let links: Vec<i64> = links.into_iter().collect();
    let select = "SELECT id, link_id, mode FROM campaign_batch WHERE link_id";
    each_row_in(db, (select, &links), ("", &[]), |row| {
        let id: i64 = row.try_get("", "id")?;
        let link: i64 = row.try_get("", "link_id")?;
        let mode: String = row.try_get("", "mode")?;
        let entry = batches.entry(link).or_default();
        match mode.as_str() {
            "param" => entry.1.push(id),
            _ => entry.0.push(id),
        }
        Ok(())
    })
    .await?;
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
    let select = format!("SELECT {COLUMNS} FROM batch_recipient WHERE token");
    let rest = format!(" ORDER BY batch_id, number{}", for_update(backend));
    each_row_in(txn, (&select, &tokens), (&rest, &[]), |row| {
        let r = Recipient::read(row)?;
        found.insert((r.token.as_str().into(), r.batch), r);
        Ok(())
    })
    .await?;
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
