//! Counting days again from their stored clicks: `inklink stats rebuild`, and the recount after
//! an upgrade. A recount forgets a day's rows and lists its clicks as waiting; the tally then
//! counts them as it counts new clicks, so both give the same rows.

use super::days::{day_range, today};
use super::frozen::purged_before;
use super::tally::{drain, take_turn};
use crate::db::sql::statement;
use chrono::{Days, NaiveDate};
use chrono_tz::Tz;
use sea_orm::{ConnectionTrait, DatabaseConnection, DbErr};

/// Forgets `day`'s statistics and lists its events as waiting again, in one transaction; the
/// tally counts them again (a click waiting already is listed once). Days whose events were purged are left as they are.
pub async fn forget_day(db: &DatabaseConnection, tz: Tz, day: NaiveDate) -> Result<bool, DbErr> {
    let Some((start, end)) = day_range(day, tz) else {
        return Ok(false);
    };
    let mut attempt = 0;
    loop {
        let txn = crate::db::begin_write(db).await?;
        let result = async {
            take_turn(&txn).await?;
            if purged_before(&txn)
                .await?
                .is_some_and(|frozen| day < frozen)
            {
                return Ok(false);
            }
            let backend = txn.get_database_backend();
            super::daysets::forget(&txn, day).await?;
            super::dayvalues::forget(&txn, day).await?;
            for table in ["visit_statistics", "visit_statistics_breakdown"] {
                let sql = format!("DELETE FROM {table} WHERE stat_date = ?");
                txn.execute_raw(statement(backend, &sql, vec![day.into()]))
                    .await?;
            }
            // The funnels of campaign batches take back what these clicks added; the tally
            // adds it again with the rest.
            super::funnel::forget_clicks(
                &txn,
                crate::clickstore::insert::micros(start),
                crate::clickstore::insert::micros(end),
            )
            .await?;
            crate::clickstore::waiting::list_again(&txn, start, end).await?;
            Ok(true)
        }
        .await;
        match crate::db::finish(txn, result).await {
            Err(err) if crate::db::is_retryable(&err) && attempt < 5 => attempt += 1,
            done => return done,
        }
    }
}

/// Recounts `day` (in `tz`): afterwards its stored rows are exactly what its events give.
/// A day whose events were purged keeps its rows.
pub async fn recompute_day(db: &DatabaseConnection, tz: Tz, day: NaiveDate) -> Result<(), DbErr> {
    forget_day(db, tz, day).await?;
    drain(db, tz).await?;
    Ok(())
}

/// Turns the sets kept by versions before the bitmaps into bitmaps, a day a turn; returns
/// how many days.
async fn adopt_old_sets(db: &DatabaseConnection) -> Result<u64, DbErr> {
    let mut turned = 0;
    while let Some(day) = super::daysets::oldest_old_set_day(db).await? {
        let txn = crate::db::begin_write(db).await?;
        let result = async {
            let turn = take_turn(&txn).await?;
            super::daysets::adopt_old_day(&txn, turn, day).await
        }
        .await;
        crate::db::finish(txn, result).await?;
        turned += 1;
    }
    Ok(turned)
}

/// Recounts every day from `from` to `to` inclusive, except days whose events were purged
/// (their statistics are final); returns how many. Visitor sets kept by earlier versions are
/// turned into bitmaps first.
pub async fn rebuild(
    db: &DatabaseConnection,
    tz: Tz,
    from: NaiveDate,
    to: NaiveDate,
) -> Result<u64, DbErr> {
    let adopted = adopt_old_sets(db).await?;
    if adopted > 0 {
        tracing::info!(
            days = adopted,
            "visitor sets of earlier versions turned into bitmaps"
        );
    }
    let mut days = 0;
    let mut day = from;
    while day <= to {
        days += u64::from(forget_day(db, tz, day).await?);
        day = match day.checked_add_days(Days::new(1)) {
            Some(next) => next,
            None => break,
        };
    }
    drain(db, tz).await?;
    Ok(days)
}

pub(super) async fn recount_after_upgrade(db: &DatabaseConnection, tz: Tz) -> Result<(), DbErr> {
    let backend = db.get_database_backend();
    let sql = "SELECT recounted FROM stats_tally WHERE id = 1";
    let done = match db.query_one_raw(statement(backend, sql, vec![])).await? {
        Some(row) => row.try_get::<bool>("", "recounted")?,
        None => true,
    };
    if done {
        return Ok(());
    }
    let today = today(tz);
    rebuild(db, tz, today.pred_opt().unwrap_or(today), today).await?;
    let sql = "UPDATE stats_tally SET recounted = TRUE WHERE id = 1";
    db.execute_raw(statement(backend, sql, vec![])).await?;
    Ok(())
}
