//! Hands out ids for the sequence strategy. Each process takes a block of ids with one atomic
//! update of a shared row, so any number of processes on one database never issue the same
//! id, and a process touches the database once per block rather than once per link. Ids of a
//! block that a process did not use before it stopped are skipped, which costs nothing: the
//! code space is 62^L.

use super::entities::id_allocator;
use crate::db::is_unique_violation;
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, DatabaseConnection, DatabaseTransaction, DbErr, EntityTrait,
    QueryFilter, Set,
};
use std::ops::Range;
use tokio::sync::Mutex;

pub const SEQUENCE: &str = "url_map_code";

/// The sequence of codes of `length` (4 to 12) when it is not the configured default length
/// (which keeps [`SEQUENCE`], so that existing databases carry on where they were).
pub fn sequence_of_length(length: u8) -> &'static str {
    const NAMES: [&str; 9] = [
        "url_map_code_4",
        "url_map_code_5",
        "url_map_code_6",
        "url_map_code_7",
        "url_map_code_8",
        "url_map_code_9",
        "url_map_code_10",
        "url_map_code_11",
        "url_map_code_12",
    ];
    NAMES[usize::from(length) - 4]
}

pub struct BlockAllocator {
    name: &'static str,
    block_size: i64,
    current: Mutex<Range<i64>>,
}

impl BlockAllocator {
    pub fn new(name: &'static str, block_size: i64) -> Self {
        assert!(block_size > 0);
        Self {
            name,
            block_size,
            current: Mutex::new(0..0),
        }
    }

    pub async fn next_id(&self, db: &DatabaseConnection) -> Result<u64, DbErr> {
        let mut current = self.current.lock().await;
        if current.is_empty() {
            *current = self.take_block(db).await?;
        }
        let id = current.start;
        current.start += 1;
        Ok(u64::try_from(id).expect("ids start at 0"))
    }

    async fn take_block(&self, db: &DatabaseConnection) -> Result<Range<i64>, DbErr> {
        let mut attempt = 0;
        loop {
            let txn = super::begin_write(db).await?;
            let taken = self.take_block_in(&txn).await;
            match crate::db::finish(txn, taken).await {
                Ok(Some(block)) => return Ok(block),
                // No row yet: create it on its own, outside any locking transaction (an
                // UPDATE of a missing row takes gap locks on MySQL, and two instances each
                // inserting under their own gap lock deadlock), then take a block from it.
                Ok(None) => self.create_row(db).await?,
                Err(err) if crate::db::is_retryable(&err) && attempt < 20 => {
                    attempt += 1;
                    tokio::time::sleep(std::time::Duration::from_millis(5 * attempt)).await;
                }
                Err(err) => return Err(err),
            }
        }
    }

    async fn take_block_in(&self, txn: &DatabaseTransaction) -> Result<Option<Range<i64>>, DbErr> {
        take_in(txn, self.name, self.block_size).await
    }

    async fn create_row(&self, db: &DatabaseConnection) -> Result<(), DbErr> {
        create_row(db, self.name).await
    }

    /// Takes `count` ids of this sequence at once for the caller (a campaign batch's codes),
    /// leaving this process's own block as it is.
    pub async fn take_many(
        &self,
        db: &DatabaseConnection,
        count: i64,
    ) -> Result<Range<i64>, DbErr> {
        take_range(db, self.name, count).await
    }
}

/// Takes `count` ids of sequence `name` (created at 0 when new) with one atomic update.
pub async fn take_range(
    db: &DatabaseConnection,
    name: &str,
    count: i64,
) -> Result<Range<i64>, DbErr> {
    let mut attempt = 0;
    loop {
        let txn = super::begin_write(db).await?;
        let taken = take_in(&txn, name, count).await;
        match crate::db::finish(txn, taken).await {
            Ok(Some(range)) => return Ok(range),
            Ok(None) => create_row(db, name).await?,
            Err(err) if crate::db::is_retryable(&err) && attempt < 20 => {
                attempt += 1;
                tokio::time::sleep(std::time::Duration::from_millis(5 * attempt)).await;
            }
            Err(err) => return Err(err),
        }
    }
}

async fn take_in(
    txn: &DatabaseTransaction,
    name: &str,
    count: i64,
) -> Result<Option<Range<i64>>, DbErr> {
    // The update takes the row lock; the read in the same transaction then sees exactly
    // the value this update wrote, whatever other processes do meanwhile.
    let updated = id_allocator::Entity::update_many()
        .col_expr(
            id_allocator::Column::NextId,
            Expr::col(id_allocator::Column::NextId).add(count),
        )
        .filter(id_allocator::Column::Name.eq(name))
        .exec(txn)
        .await?;
    if updated.rows_affected == 0 {
        return Ok(None);
    }
    let row = id_allocator::Entity::find_by_id(name)
        .one(txn)
        .await?
        .ok_or_else(|| DbErr::RecordNotFound(name.to_owned()))?;
    Ok(Some(row.next_id - count..row.next_id))
}

async fn create_row(db: &DatabaseConnection, name: &str) -> Result<(), DbErr> {
    let row = id_allocator::ActiveModel {
        name: Set(name.to_owned()),
        next_id: Set(0),
    };
    match row.insert(db).await {
        Ok(_) => Ok(()),
        // Another process created it first: just as good.
        Err(err) if is_unique_violation(&err) || crate::db::is_retryable(&err) => Ok(()),
        Err(err) => Err(err),
    }
}
