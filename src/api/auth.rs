//! Who is calling: `Authorization: Bearer <key>`, checked against the stored digest, then
//! held to the per-key rate limit.

use super::error::ApiError;
use crate::db::entities::api_keys;
use crate::rules::{ApiToken, Role};
use crate::services::{Actor, Principal, api_keys as keys};
use crate::state::AppState;
use actix_web::dev::Payload;
use actix_web::http::header::AUTHORIZATION;
use actix_web::{FromRequest, HttpRequest, web};
use std::future::Future;
use std::pin::Pin;

/// A caller whose key is valid and within its rate limit.
pub struct ApiCaller {
    pub key: api_keys::Model,
    pub role: Role,
}

impl ApiCaller {
    pub fn actor(&self) -> Actor {
        Actor::ApiKey(Principal {
            id: self.key.id,
            name: self.key.name.clone(),
            role: self.role,
        })
    }
}

impl FromRequest for ApiCaller {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let state = req.app_data::<web::Data<AppState>>().cloned();
        let header = req
            .headers()
            .get(AUTHORIZATION)
            .map(|value| value.to_str().map(str::to_owned));
        Box::pin(async move {
            let state = state.expect("app state is configured");
            let header = match header {
                None => {
                    return Err(ApiError::Unauthorized(
                        "send your API key as 'Authorization: Bearer <key>'".into(),
                    ));
                }
                Some(Err(_)) => {
                    return Err(ApiError::Unauthorized(
                        "the Authorization header is not readable text".into(),
                    ));
                }
                Some(Ok(text)) => text,
            };
            let token = header
                .strip_prefix("Bearer ")
                .or_else(|| header.strip_prefix("bearer "))
                .map(str::trim)
                .and_then(ApiToken::parse)
                .ok_or_else(|| {
                    ApiError::Unauthorized(
                        "the Authorization header must be 'Bearer ik_…', with a key from the admin UI".into(),
                    )
                })?;
            let key = keys::authenticate(&state.core.db, &token).await?;
            state
                .api_limits
                .take(key.id)
                .map_err(|wait| ApiError::RateLimited(wait.0))?;
            if let Err(err) = keys::touch(&state.core.db, &key).await {
                tracing::warn!(error = %err, "could not record API key use");
            }
            let role = key.role;
            Ok(ApiCaller { key, role })
        })
    }
}
