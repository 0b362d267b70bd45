//! Reading JSON bodies ourselves (rather than with actix's `Json`): the key is checked before
//! the body is read, the size limit answers 413, and a bad field is named in the error.

mod strict;

use super::error::ApiError;
use actix_web::web::{self, Bytes, BytesMut};
use futures_util::StreamExt;
use serde::de::DeserializeOwned;
use strict::Strict;
pub use strict::read_value;

pub async fn read_body(mut payload: web::Payload, limit: usize) -> Result<Bytes, ApiError> {
    let mut body = BytesMut::new();
    while let Some(chunk) = payload.next().await {
        let chunk = chunk
            .map_err(|err| ApiError::bad(format!("the body could not be read: {err}"), None))?;
        if body.len() + chunk.len() > limit {
            return Err(ApiError::TooLarge(limit));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body.freeze())
}

fn field_of(path: &serde_path_to_error::Path) -> Option<String> {
    let path = path.to_string();
    (path != ".").then_some(path)
}

/// The body as `T`, a struct read only from a JSON object at any depth (see [`Strict`]), the
/// field at fault named in the error.
pub fn parse_json<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    if body.is_empty() {
        return Err(ApiError::bad("the request needs a JSON body", None));
    }
    let deserializer = &mut serde_json::Deserializer::from_slice(body);
    serde_path_to_error::deserialize(Strict(deserializer)).map_err(|err| {
        ApiError::bad(
            format!("the JSON body is not valid: {}", err.inner()),
            field_of(err.path()).as_deref(),
        )
    })
}

/// One item of a batch, its errors named from the top of the request (`items[3].url`).
pub fn from_value<T: DeserializeOwned>(value: serde_json::Value, at: &str) -> Result<T, ApiError> {
    serde_path_to_error::deserialize(Strict(value)).map_err(|err| {
        let field = match field_of(err.path()) {
            Some(inner) => format!("{at}.{inner}"),
            None => at.to_owned(),
        };
        ApiError::bad(
            format!("this item is not valid: {}", err.inner()),
            Some(&field),
        )
    })
}

/// The fields of a `multipart/form-data` upload, by name, at most `limit` bytes together.
pub async fn form_fields(
    headers: &actix_web::http::header::HeaderMap,
    payload: web::Payload,
    limit: usize,
) -> Result<std::collections::HashMap<String, Vec<u8>>, ApiError> {
    use crate::net::upload::{UploadError, fields};
    fields(headers, payload, limit)
        .await
        .map_err(|err| match err {
            UploadError::TooLarge { bytes, .. } => ApiError::TooLarge(bytes),
            err @ UploadError::Unreadable => ApiError::bad(err.to_string(), None),
        })
}
