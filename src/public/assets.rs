//! Static files, compiled into the binary so that it runs from any directory.

use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpResponse, web};

struct Asset {
    name: &'static str,
    content_type: &'static str,
    body: &'static [u8],
}

/// A handful of files: a table is simpler than an embedding crate.
const ASSETS: &[Asset] = &[
    Asset {
        name: "inklink.css",
        content_type: "text/css; charset=utf-8",
        body: include_bytes!("../../static/inklink.css"),
    },
    Asset {
        name: "admin.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../static/admin.js"),
    },
    Asset {
        name: "copy.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../static/copy.js"),
    },
    Asset {
        name: "sms.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../static/sms.js"),
    },
    Asset {
        name: "batches.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../static/batches.js"),
    },
    Asset {
        name: "admin.css",
        content_type: "text/css; charset=utf-8",
        body: include_bytes!("../../static/admin.css"),
    },
];

pub async fn serve(req: actix_web::HttpRequest, file: web::Path<String>) -> HttpResponse {
    match ASSETS.iter().find(|asset| asset.name == file.as_str()) {
        Some(asset) => HttpResponse::Ok()
            .content_type(asset.content_type)
            .insert_header((
                header::CACHE_CONTROL,
                HeaderValue::from_static("public, max-age=3600"),
            ))
            .insert_header((
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ))
            .body(asset.body),
        None => super::pages::not_found(req).await,
    }
}

pub async fn robots() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/plain; charset=utf-8")
        .body("User-agent: *\nDisallow: /admin\nDisallow: /api\n")
}

pub async fn favicon() -> HttpResponse {
    HttpResponse::NoContent().finish()
}
