//! A readable page for the REST API, listing the operations of the OpenAPI document itself
//! (so it cannot disagree with it).

use crate::admin::access::auth::CurrentUser;
use crate::admin::error::AdminError;
use crate::admin::pages::{Frame, render};
use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;
use utoipa::OpenApi;

pub struct Operation {
    pub method: String,
    pub path: String,
    /// What the operation does: the catalog's text the OpenAPI document was written with
    /// (looked up whole, never by pattern), else the document's words as they are.
    pub summary: crate::i18n::Message,
}

#[derive(Template)]
#[template(path = "admin/api.html")]
struct ApiPage {
    frame: Frame,
    operations: Vec<Operation>,
    base: String,
}

pub async fn page(user: CurrentUser, req: HttpRequest) -> Result<HttpResponse, AdminError> {
    let doc = crate::api::openapi::ApiDoc::openapi();
    let mut operations = Vec::new();
    for (path, item) in &doc.paths.paths {
        for (method, operation) in [
            ("GET", &item.get),
            ("POST", &item.post),
            ("PATCH", &item.patch),
            ("DELETE", &item.delete),
        ] {
            if let Some(operation) = operation {
                operations.push(Operation {
                    method: method.to_owned(),
                    path: path.clone(),
                    summary: {
                        let english = operation
                            .summary
                            .clone()
                            .or_else(|| operation.description.clone())
                            .unwrap_or_default();
                        match crate::i18n::Text::find(&english) {
                            Some(text) => crate::i18n::Message::new(text),
                            None => crate::i18n::Message::plain(english),
                        }
                    },
                });
            }
        }
    }
    let info = req.connection_info();
    let page = ApiPage {
        frame: Frame::new(&user, None, "api"),
        operations,
        base: format!("{}://{}", info.scheme(), info.host()),
    };
    Ok(render(StatusCode::OK, &page))
}
