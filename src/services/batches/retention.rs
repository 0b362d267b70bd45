//! Recipients' phone numbers and variables are personal data: kept for
//! `INKLINK_RECIPIENT_RETENTION_DAYS` after their batch was made, then deleted. The batch keeps
//! its funnel figures, its tokens (so that its links go on counting) and its receipts.

use crate::db;
use crate::db::entities::campaign_batch;
use crate::db::sql::statement;
use crate::services::audit::{self, Actor, Entry};
use chrono::Duration;
use sea_orm::ConnectionTrait;
use sea_orm::{ColumnTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter};
use serde_json::json;

/// Rows cleared per statement, so that no writer waits behind one huge update.
const STEP: i64 = 20_000;

/// Deletes the phone numbers of batches made more than `days` days ago; returns how many
/// batches were purged.
pub async fn purge(db: &DatabaseConnection, days: u32) -> Result<u64, DbErr> {
    let before = db::now() - Duration::days(i64::from(days));
    let due = campaign_batch::Entity::find()
        .filter(campaign_batch::Column::CreatedAt.lt(before))
        .filter(campaign_batch::Column::PurgedAt.is_null())
        .all(db)
        .await?;
    let backend = db.get_database_backend();
    let mut purged = 0;
    for batch in due {
        let mut from = 0i64;
        while from <= batch.recipients {
            let sql = "UPDATE batch_recipient SET phone = NULL, vars = NULL \
                       WHERE batch_id = ? AND number > ? AND number <= ?";
            let values = vec![batch.id.into(), from.into(), (from + STEP).into()];
            db.execute_raw(statement(backend, sql, values)).await?;
            from += STEP;
        }
        let txn = db::begin_write(db).await?;
        let done = async {
            // Every instance purges; the one whose update marks the batch records it.
            let marked = txn
                .execute_raw(statement(
                    backend,
                    "UPDATE campaign_batch SET purged_at = ? WHERE id = ? AND purged_at IS NULL",
                    vec![db::now().into(), batch.id.into()],
                ))
                .await?;
            if marked.rows_affected() == 0 {
                return Ok(false);
            }
            audit::record(
                &txn,
                &Actor::System,
                Entry {
                    action: "batch.purge",
                    target_kind: "batch",
                    target_id: &batch.id.to_string(),
                    before: None,
                    after: Some(json!({ "retention_days": days })),
                },
            )
            .await?;
            Ok::<_, DbErr>(true)
        }
        .await;
        if db::finish(txn, done).await? {
            purged += 1;
        }
    }
    Ok(purged)
}

/// Purges every hour, for ever.
pub async fn run(db: DatabaseConnection, days: u32) {
    let mut ticker = tokio::time::interval(std::time::Duration::from_secs(3600));
    loop {
        ticker.tick().await;
        match purge(&db, days).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(
                batches = n,
                "deleted the phone numbers of batches past their retention"
            ),
            Err(err) => {
                tracing::warn!(error = %err, "could not delete expired phone numbers; will try again")
            }
        }
    }
}
