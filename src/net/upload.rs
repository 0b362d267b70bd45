//! Reading a `multipart/form-data` upload (a form with a file) into its fields, within a
//! bound: the admin UI and the API read recipients' and receipts' files this way.

use futures_util::StreamExt;
use std::collections::HashMap;

#[derive(Debug, thiserror::Error, crate::i18n::Says)]
pub enum UploadError {
    /// More than the limit (in bytes), shown in MB.
    #[error("the upload is larger than {megabytes} MB")]
    TooLarge { bytes: usize, megabytes: usize },
    /// The body is not a multipart form (its cause goes to the log).
    #[error("the upload could not be read; send the form again (multipart/form-data)")]
    Unreadable,
}

fn unreadable(err: impl std::fmt::Display) -> UploadError {
    tracing::info!(error = %err, "an upload could not be read");
    UploadError::Unreadable
}

/// The fields of the upload by name, at most `limit` bytes together.
pub async fn fields(
    headers: &actix_web::http::header::HeaderMap,
    payload: actix_web::web::Payload,
    limit: usize,
) -> Result<HashMap<String, Vec<u8>>, UploadError> {
    let mut multipart = actix_multipart::Multipart::new(headers, payload);
    let mut fields = HashMap::new();
    let mut total = 0;
    while let Some(field) = multipart.next().await {
        let mut field = field.map_err(unreadable)?;
        let name = field.name().unwrap_or_default().to_owned();
        let mut data = Vec::new();
        while let Some(chunk) = field.next().await {
            let chunk = chunk.map_err(unreadable)?;
            total += chunk.len();
            if total > limit {
                return Err(UploadError::TooLarge {
                    bytes: limit,
                    megabytes: limit >> 20,
                });
            }
            data.extend_from_slice(&chunk);
        }
        fields.insert(name, data);
    }
    Ok(fields)
}

/// A text field of an upload (empty when absent).
pub fn text(fields: &HashMap<String, Vec<u8>>, name: &str) -> String {
    fields
        .get(name)
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .unwrap_or_default()
}
