//! The one route table: which front end answers which path. Each front end keeps the table of
//! its own paths; only this module puts them together.

use crate::admin::{self, access::session_store::DbSessionStore};
use crate::net::hosts::AdminHosts;
use crate::{api, public, redirect};
use actix_web::cookie::Key;
use actix_web::web;

/// What the admin and API front ends are configured with, built once per server.
pub struct Frontends {
    pub admin_hosts: AdminHosts,
    pub sessions: DbSessionStore,
    pub cookie_key: Key,
    pub secure_cookie: bool,
}

pub fn configure(cfg: &mut web::ServiceConfig, frontends: &Frontends) {
    admin::routes(
        cfg,
        &frontends.admin_hosts,
        frontends.sessions.clone(),
        frontends.cookie_key.clone(),
        frontends.secure_cookie,
    );
    api::routes(cfg, &frontends.admin_hosts);
    public::routes(cfg);
    // Every other path: a short code or not found. The redirect is the default service, not a
    // `/{code}` route: a route would run a regular expression on every request.
    cfg.default_service(web::to(redirect::follow));
}
