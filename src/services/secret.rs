//! The service secret keys codes (and later sessions and visitor hashes). When the operator
//! does not set one, it is generated once and kept in the database, so every instance on that
//! database and every restart use the same key.

use crate::db::{self, entities::settings, is_unique_violation};
use sea_orm::{ActiveModelTrait, DatabaseConnection, DbErr, EntityTrait, Set};

const KEY: &str = "secret";

pub async fn load_or_create(
    db: &DatabaseConnection,
    configured: Option<&str>,
) -> Result<String, DbErr> {
    if let Some(secret) = configured.filter(|s| !s.is_empty()) {
        return Ok(secret.to_owned());
    }
    if let Some(row) = settings::Entity::find_by_id(KEY).one(db).await? {
        return Ok(row.value);
    }
    let generated = random_hex(32);
    let row = settings::ActiveModel {
        name: Set(KEY.to_owned()),
        value: Set(generated.clone()),
        updated_at: Set(db::now()),
    };
    match row.insert(db).await {
        Ok(_) => Ok(generated),
        // Another instance generated it first: use theirs.
        Err(err) if is_unique_violation(&err) => settings::Entity::find_by_id(KEY)
            .one(db)
            .await?
            .map(|row| row.value)
            .ok_or_else(|| DbErr::RecordNotFound(KEY.to_owned())),
        Err(err) => Err(err),
    }
}

pub fn random_bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).expect("the operating system's random source failed");
    bytes
}

pub fn random_hex(len: usize) -> String {
    let mut bytes = vec![0u8; len];
    getrandom::fill(&mut bytes).expect("the operating system's random source failed");
    crate::digest::hex(&bytes)
}
