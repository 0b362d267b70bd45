//! CSV files as the admin UI hands them out: UTF-8 with a byte-order mark, because Excel on
//! Chinese Windows reads a CSV without one in the local code page (GBK) and shows every
//! Chinese description garbled. The importer skips the mark, so an export imports again.

use actix_web::HttpResponse;
use actix_web::http::header;

const BOM: &str = "\u{feff}";

/// `csv` with the byte-order mark in front.
pub fn for_excel(csv: &str) -> String {
    let mut out = String::with_capacity(BOM.len() + csv.len());
    out.push_str(BOM);
    out.push_str(csv);
    out
}

/// A CSV download named `name`.
pub fn attachment(csv: &str, name: &str) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/csv; charset=utf-8")
        .insert_header((
            header::CONTENT_DISPOSITION,
            format!("attachment; filename=\"{name}\""),
        ))
        .body(for_excel(csv))
}
