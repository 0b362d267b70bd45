//! Liveness and database check for load balancers and orchestrators.

use crate::metrics::Gauges;
use crate::state::AppState;
use actix_web::{HttpRequest, HttpResponse, web};
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

/// Prometheus text format, only where the configuration puts it (a separate address, or the
/// admin hosts): counters of traffic are not for every visitor.
pub async fn metrics(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let settings = &state.core.settings;
    let here = match settings.metrics_listen {
        Some(address) => req.app_config().local_addr().port() == address.port(),
        None => settings.admin_hosts.admit_request(&req),
    };
    if !here {
        return super::pages::not_found(req).await;
    }
    let clicks = &state.clicks;
    let gauges = Gauges {
        queue_depth: clicks.sink().depth(),
        cache_hits: state.resolver.hits(),
        cache_misses: state.resolver.misses(),
        lookup_queries: state.resolver.queries(),
    };
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .body(clicks.metrics().render(&gauges))
}
