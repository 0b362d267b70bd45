//! Liveness and database check for load balancers and orchestrators.

use super::AppState;
use actix_web::{HttpResponse, web};
use serde_json::json;

pub async fn healthz(state: web::Data<AppState>) -> HttpResponse {
    match state.core.db.ping().await {
        Ok(()) => HttpResponse::Ok().json(json!({"status": "ok", "database": "ok"})),
        Err(err) => {
            tracing::warn!(error = %err, "health check: database unreachable");
            HttpResponse::ServiceUnavailable()
                .json(json!({"status": "error", "database": "unreachable"}))
        }
    }
}
