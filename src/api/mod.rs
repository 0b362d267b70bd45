//! The REST API for business back ends: `/api/v1`, JSON in and out, API keys, and its
//! OpenAPI document at `/api/openapi.json`.

pub mod auth;
pub mod batch_model;
pub mod batches;
pub mod body;
pub mod domains;
pub mod error;
pub mod events;
pub mod link_input;
pub mod links;
pub mod model;
pub mod openapi;
pub mod receipts;
pub mod sms;
pub mod stats;
pub mod webhooks;

use crate::net::hosts::AdminHosts;
use actix_web::{HttpRequest, web};
use error::ApiError;

/// A resource that answers the methods it has and 405 (in JSON, with `Allow`) to the rest.
fn resource(path: &str, allow: &'static str) -> actix_web::Resource {
    web::resource(path).default_service(web::to(move |req: HttpRequest| async move {
        Err::<actix_web::HttpResponse, _>(ApiError::MethodNotAllowed {
            method: req.method().to_string(),
            allow,
        })
    }))
}

async fn not_found() -> Result<actix_web::HttpResponse, ApiError> {
    Err(ApiError::NotFound(
        "there is no such API endpoint; see /api/openapi.json".into(),
    ))
}

pub fn routes(cfg: &mut web::ServiceConfig, hosts: &AdminHosts) {
    cfg.service(
        web::scope("/api")
            .guard(hosts.guard())
            .app_data(web::QueryConfig::default().error_handler(|err, _| {
                ApiError::bad(format!("a query parameter is not valid: {err}"), None).into()
            }))
            .app_data(web::PathConfig::default().error_handler(|err, _| {
                ApiError::bad(format!("the path is not valid: {err}"), None).into()
            }))
            .service(
                resource("/openapi.json", "GET, HEAD")
                    .route(web::get().to(openapi::serve))
                    .route(web::head().to(openapi::serve)),
            )
            .service(
                web::scope("/v1")
                    .service(
                        resource("/links", "GET, POST")
                            .route(web::get().to(links::list))
                            .route(web::post().to(links::create)),
                    )
                    .service(resource("/links/batch", "POST").route(web::post().to(links::batch)))
                    .service(resource("/links/bulk", "POST").route(web::post().to(links::bulk)))
                    .service(
                        resource("/links/{code}", "GET, PATCH, DELETE")
                            .route(web::get().to(links::get))
                            .route(web::patch().to(links::update))
                            .route(web::delete().to(links::revoke)),
                    )
                    .service(
                        resource("/links/{code}/stats", "GET").route(web::get().to(stats::stats)),
                    )
                    .service(resource("/tags/{tag}/stats", "GET").route(web::get().to(stats::tag)))
                    .service(resource("/stats", "GET").route(web::get().to(stats::all)))
                    .service(
                        resource("/batches", "GET, POST")
                            .route(web::get().to(batches::list))
                            .route(web::post().to(batches::create)),
                    )
                    .service(resource("/batches/{id}", "GET").route(web::get().to(batches::get)))
                    .service(
                        resource("/batches/{id}/messages", "GET")
                            .route(web::get().to(batches::messages)),
                    )
                    .service(
                        resource("/batches/{id}/funnel", "GET")
                            .route(web::get().to(batches::funnel)),
                    )
                    .service(
                        resource("/batches/{id}/recipients", "GET")
                            .route(web::get().to(batches::recipients)),
                    )
                    .service(
                        resource("/batches/{id}/receipts", "POST")
                            .route(web::post().to(receipts::batch_receipts)),
                    )
                    .service(
                        resource("/receipts/aliyun", "POST")
                            .route(web::post().to(receipts::aliyun)),
                    )
                    .service(
                        resource("/receipts/tencent", "POST")
                            .route(web::post().to(receipts::tencent)),
                    )
                    .service(resource("/events", "GET").route(web::get().to(events::export)))
                    .service(resource("/domains", "GET").route(web::get().to(domains::list)))
                    .service(
                        resource("/domains/{host}", "PATCH")
                            .route(web::patch().to(domains::update)),
                    )
                    .service(
                        resource("/webhooks", "GET, POST")
                            .route(web::get().to(webhooks::list))
                            .route(web::post().to(webhooks::create)),
                    )
                    .service(
                        resource("/webhooks/{id}", "GET, PATCH, DELETE")
                            .route(web::get().to(webhooks::get))
                            .route(web::patch().to(webhooks::update))
                            .route(web::delete().to(webhooks::delete)),
                    )
                    .service(
                        resource("/webhooks/{id}/deliveries", "GET")
                            .route(web::get().to(webhooks::deliveries)),
                    )
                    .service(
                        resource("/webhooks/{id}/test", "POST")
                            .route(web::post().to(webhooks::test)),
                    )
                    .service(
                        resource("/webhooks/{id}/resend", "POST")
                            .route(web::post().to(webhooks::resend)),
                    )
                    .service(resource("/sms", "POST").route(web::post().to(sms::compose)))
                    .service(resource("/sms/count", "POST").route(web::post().to(sms::count)))
                    .default_service(web::to(not_found)),
            )
            .default_service(web::to(not_found)),
    );
}
