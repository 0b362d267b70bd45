//! What each stored country, province and city is called in the UI's languages, and its ISO
//! code (`place_name`): learned from the GeoIP database as clicks are enriched, read by the
//! dashboards to show a place in the reader's language and by the map to find its outline.

use super::row::Text;
use sea_orm::sea_query::{Alias, Expr, ExprTrait, OnConflict, Query};
use sea_orm::{ConnectionTrait, DbErr, FromQueryResult};
use std::collections::HashMap;

/// A place's level: the same name can be a province and a city (`Beijing`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Level {
    Country = 0,
    Province = 1,
    City = 2,
}

/// What a stored place is called in each language of the UI, and its ISO code (`CN`,
/// `CN-BJ`): the language-neutral key the dashboards translate a stored name by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlaceName {
    pub level: Level,
    /// The name as clicks store it (in `INKLINK_GEOIP_LANG`).
    pub stored: Text,
    pub code: Option<Box<str>>,
    pub en: Box<str>,
    pub zh: Box<str>,
}

/// A stored place as the dashboards show it.
#[derive(Clone, Debug, PartialEq, Eq, FromQueryResult)]
pub struct Known {
    pub stored: String,
    pub code: Option<String>,
    pub en: String,
    pub zh: String,
}

/// Stores `names`, a newer database's names replacing older ones.
pub async fn remember(db: &impl ConnectionTrait, names: &[PlaceName]) -> Result<(), DbErr> {
    // One row per place in a statement (PostgreSQL refuses to update a row twice in one), and
    // statements of a size every backend binds.
    let mut seen = std::collections::HashSet::new();
    let names: Vec<&PlaceName> = names
        .iter()
        .rev()
        .filter(|name| seen.insert((name.level, name.stored.clone())))
        .collect();
    for chunk in names.chunks(500) {
        let table = Alias::new("place_name");
        let columns = ["level", "stored", "code", "en", "zh"].map(Alias::new);
        let mut insert = Query::insert();
        insert.into_table(table).columns(columns.clone());
        for name in chunk {
            insert.values_panic([
                Expr::val(name.level as i16),
                Expr::val(name.stored.as_ref()),
                Expr::val(name.code.as_deref()),
                Expr::val(name.en.as_ref()),
                Expr::val(name.zh.as_ref()),
            ]);
        }
        insert.on_conflict(
            OnConflict::columns([Alias::new("level"), Alias::new("stored")])
                .update_columns(["code", "en", "zh"].map(Alias::new))
                .to_owned(),
        );
        db.execute_raw(db.get_database_backend().build(&insert))
            .await?;
    }
    Ok(())
}

/// The names of those of `stored` at `level` that are known, by stored name.
pub async fn known(
    db: &impl ConnectionTrait,
    level: Level,
    stored: &[&str],
) -> Result<HashMap<String, Known>, DbErr> {
    if stored.is_empty() {
        return Ok(HashMap::new());
    }
    let query = Query::select()
        .columns(["stored", "code", "en", "zh"].map(Alias::new))
        .from(Alias::new("place_name"))
        .and_where(Expr::col(Alias::new("level")).eq(level as i16))
        .and_where(Expr::col(Alias::new("stored")).is_in(stored.iter().copied()))
        .to_owned();
    let rows = Known::find_by_statement(db.get_database_backend().build(&query))
        .all(db)
        .await?;
    Ok(rows.into_iter().map(|r| (r.stored.clone(), r)).collect())
}
