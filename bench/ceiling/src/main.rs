//! `ceiling PORT`: the cheapest redirect actix-web can give, for comparing inklink with its
//! own framework as well as with nginx.

use actix_web::{App, HttpResponse, HttpServer, http::header, web};

#[actix_web::main]
async fn main() -> std::io::Result<()> {
    let port: u16 = std::env::args()
        .nth(1)
        .and_then(|port| port.parse().ok())
        .expect("usage: ceiling PORT");
    HttpServer::new(|| {
        App::new().default_service(web::to(|| async {
            HttpResponse::Found()
                .insert_header((header::LOCATION, "https://example.com/target"))
                .finish()
        }))
    })
    .bind(("127.0.0.1", port))?
    .run()
    .await
}
