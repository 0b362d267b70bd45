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
        // A scope is matched by its prefix, a `/static/{file}` or `/lang/{tag}` route by a
        // regular expression that every redirect would run first (`/lang/{tag}` was 0.8 % of
        // the server's CPU under the redirect benchmark). A path a scope has no route for
        // (`/lang` alone: a link's code) goes on to the redirect.
        .service(web::scope("/static").route("/{file}", read().to(assets::serve)))
        .service(web::scope("/lang").route("/{tag}", web::get().to(pages::switch_language)))
        .route("/robots.txt", read().to(assets::robots))
        .route("/favicon.ico", read().to(assets::favicon));
}
