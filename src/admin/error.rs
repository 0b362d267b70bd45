//! What can go wrong on an admin page, mapped once to a response: a page for people, never a
//! bare status.

use crate::admin::pages::render_message;
use crate::i18n::{Message, Says};
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};

#[derive(Debug, thiserror::Error, crate::i18n::Says)]
pub enum AdminError {
    #[error("sign in to continue")]
    SignedOut,
    /// Signed out while asking for this page: sign-in leads back to it.
    #[error("sign in to continue")]
    SignedOutFrom(String),
    #[error("you do not have access to this page; it is for admins")]
    Forbidden,
    #[error(
        "this form has expired or did not come from this site; go back, reload the page and try again"
    )]
    Csrf,
    #[error("there is nothing at this address")]
    NotFound,
    /// The signed-in person may not do this to this thing; the message says why.
    #[error("{0}")]
    Denied(Message),
    #[error("the database is busy or could not be reached; please try again")]
    Db(#[from] sea_orm::DbErr),
    #[error("the session could not be read or saved; please sign in again")]
    Session(String),
    /// Something below the page (the session store) failed: the database is away.
    #[error("the database is busy or could not be reached; please try again in a moment")]
    Unavailable,
    /// The address or form could not be read (a hand-edited URL, a broken client).
    #[error("{0}")]
    BadRequest(Message),
    /// A rule refused the action; the message says which.
    #[error("{0}")]
    Refused(Message),
}

impl From<crate::services::links::LinkError> for AdminError {
    fn from(err: crate::services::links::LinkError) -> Self {
        use crate::services::links::LinkError;
        let message = err.says();
        match err {
            LinkError::NotFound(_) => Self::NotFound,
            LinkError::NotYours(_) => Self::Denied(message),
            LinkError::Db(db) => Self::Db(db),
            _ => Self::Refused(message),
        }
    }
}

impl ResponseError for AdminError {
    fn status_code(&self) -> StatusCode {
        match self {
            Self::SignedOut | Self::SignedOutFrom(_) => StatusCode::SEE_OTHER,
            Self::Forbidden | Self::Csrf | Self::Denied(_) => StatusCode::FORBIDDEN,
            Self::NotFound => StatusCode::NOT_FOUND,
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::Refused(_) => StatusCode::UNPROCESSABLE_ENTITY,
            Self::Db(_) | Self::Session(_) | Self::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    fn error_response(&self) -> HttpResponse {
        match self {
            Self::SignedOut => crate::admin::pages::see_other("/admin/login"),
            Self::SignedOutFrom(path) => match crate::admin::pages::local_next(path) {
                Some(path) if path != "/admin/links" && path != "/admin" && path != "/admin/" => {
                    let next: String =
                        url::form_urlencoded::byte_serialize(path.as_bytes()).collect();
                    crate::admin::pages::see_other(&format!("/admin/login?next={next}"))
                }
                _ => crate::admin::pages::see_other("/admin/login"),
            },
            other => {
                if let Self::Db(err) = other {
                    tracing::error!(error = %err, "admin page failed");
                }
                if let Self::Session(err) = other {
                    tracing::error!(error = %err, "admin session failed");
                }
                render_message(other.status_code(), t!("Sorry"), &other.says())
            }
        }
    }
}
