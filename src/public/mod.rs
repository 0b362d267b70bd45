//! The public pages around the redirects: home, health and metrics, static assets, and the
//! friendly error pages.

pub mod assets;
pub mod health;
pub mod pages;

use actix_web::{guard, web};

/// A route for GET and HEAD alike (`web::get()` alone turns HEAD away).
fn read() -> actix_web::Route {
    web::route().guard(guard::Any(guard::Get()).or(guard::Head()))
}

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/", read().to(pages::home))
        .route("/healthz", read().to(health::healthz))
        .route("/metrics", read().to(health::metrics))
        // A scope is matched by its prefix, a `/static/{file}` route by a regular expression
        // that every redirect would run first.
        .service(web::scope("/static").route("/{file}", read().to(assets::serve)))
        .route("/lang/{tag}", web::get().to(pages::switch_language))
        .route("/robots.txt", read().to(assets::robots))
        .route("/favicon.ico", read().to(assets::favicon));
}
