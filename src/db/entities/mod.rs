pub mod admin_sessions;
pub mod audit_log;
pub mod domain_conf;
pub mod id_allocator;
pub mod login_failures;
pub mod settings;
pub mod url_map;
pub mod users;
