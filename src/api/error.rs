//! Every API failure as one JSON shape, `{"error": {"code", "message", "field"}}`, with the
//! status that fits. Nothing under /api answers with HTML or an empty body.

use crate::services::api_keys::{KeyError, Refusal};
use crate::services::links::LinkError;
use actix_web::http::StatusCode;
use actix_web::http::header::{ALLOW, RETRY_AFTER};
use actix_web::{HttpResponse, ResponseError};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// What went wrong, for programs: stable, and written in snake case in the body.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    BadRequest,
    Unauthorized,
    Forbidden,
    NotFound,
    CodeTaken,
    NameTaken,
    StaleVersion,
    NoFreeCode,
    PayloadTooLarge,
    InvalidUrl,
    InvalidCode,
    InvalidValue,
    ExpiryInPast,
    UnknownDomain,
    DomainDisabled,
    RateLimited,
    MethodNotAllowed,
    Unavailable,
}

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// Malformed JSON or parameters.
    #[error("{message}")]
    BadRequest {
        message: String,
        field: Option<String>,
    },
    #[error("{0}")]
    Unauthorized(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{message}")]
    Conflict { code: ErrorCode, message: String },
    #[error("the request body is larger than {0} bytes")]
    TooLarge(usize),
    /// Parsed, but breaks a rule.
    #[error("{message}")]
    Unprocessable {
        code: ErrorCode,
        message: String,
        field: Option<String>,
    },
    #[error("too many requests for this API key; retry in {0} s")]
    RateLimited(u64),
    #[error("this endpoint does not accept {method}; use {allow}")]
    MethodNotAllowed { method: String, allow: &'static str },
    #[error("the database is busy or could not be reached; try again shortly")]
    Unavailable(#[source] sea_orm::DbErr),
}

/// The body of every error response.
#[derive(Serialize, Deserialize, ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ErrorDetail {
    /// Stable, machine-readable.
    pub code: ErrorCode,
    /// For people: what was wrong and what to do.
    pub message: String,
    /// The request field the error is about, when there is one.
    pub field: Option<String>,
}

impl ApiError {
    pub fn bad(message: impl Into<String>, field: Option<&str>) -> Self {
        Self::BadRequest {
            message: message.into(),
            field: field.map(str::to_owned),
        }
    }

    pub fn invalid(code: ErrorCode, message: impl Into<String>, field: &str) -> Self {
        Self::Unprocessable {
            code,
            message: message.into(),
            field: Some(field.to_owned()),
        }
    }

    pub fn detail(&self) -> ErrorDetail {
        ErrorDetail {
            code: self.code(),
            message: self.to_string(),
            field: self.field(),
        }
    }

    fn code(&self) -> ErrorCode {
        match self {
            Self::BadRequest { .. } => ErrorCode::BadRequest,
            Self::Unauthorized(_) => ErrorCode::Unauthorized,
            Self::Forbidden(_) => ErrorCode::Forbidden,
            Self::NotFound(_) => ErrorCode::NotFound,
            Self::Conflict { code, .. } | Self::Unprocessable { code, .. } => *code,
            Self::TooLarge(_) => ErrorCode::PayloadTooLarge,
            Self::RateLimited(_) => ErrorCode::RateLimited,
            Self::MethodNotAllowed { .. } => ErrorCode::MethodNotAllowed,
            Self::Unavailable(_) => ErrorCode::Unavailable,
        }
    }

    fn field(&self) -> Option<String> {
        match self {
            Self::BadRequest { field, .. } | Self::Unprocessable { field, .. } => field.clone(),
            _ => None,
        }
    }
}

impl From<sea_orm::DbErr> for ApiError {
    fn from(err: sea_orm::DbErr) -> Self {
        Self::Unavailable(err)
    }
}

impl From<Refusal> for ApiError {
    fn from(refusal: Refusal) -> Self {
        match refusal {
            Refusal::Db(db) => Self::Unavailable(db),
            other => Self::Unauthorized(other.to_string()),
        }
    }
}

impl From<KeyError> for ApiError {
    fn from(err: KeyError) -> Self {
        match err {
            KeyError::Db(db) => Self::Unavailable(db),
            KeyError::NotFound => Self::NotFound(err.to_string()),
            KeyError::NameTaken(_) => Self::Conflict {
                code: ErrorCode::NameTaken,
                message: err.to_string(),
            },
            KeyError::ExpiryInPast(_) => {
                Self::invalid(ErrorCode::ExpiryInPast, err.to_string(), "expires_at")
            }
        }
    }
}

impl From<LinkError> for ApiError {
    fn from(err: LinkError) -> Self {
        let message = err.to_string();
        match err {
            LinkError::Db(db) => Self::Unavailable(db),
            LinkError::NotFound(_) => Self::NotFound(message),
            LinkError::NotYours(_) => Self::Forbidden(message),
            LinkError::CodeTaken(_) => Self::Conflict {
                code: ErrorCode::CodeTaken,
                message,
            },
            LinkError::Stale(_) => Self::Conflict {
                code: ErrorCode::StaleVersion,
                message,
            },
            LinkError::UnknownDomain(_) => {
                Self::invalid(ErrorCode::UnknownDomain, message, "domain")
            }
            LinkError::DomainDisabled(_) | LinkError::DomainStandby(_) => {
                Self::invalid(ErrorCode::DomainDisabled, message, "domain")
            }
            LinkError::NoDefaultDomain => {
                Self::invalid(ErrorCode::UnknownDomain, message, "domain")
            }
            LinkError::ExpiryInPast(_) => {
                Self::invalid(ErrorCode::ExpiryInPast, message, "expires_at")
            }
            LinkError::OpensAfterExpiry(_) => {
                Self::invalid(ErrorCode::InvalidValue, message, "valid_from")
            }
            LinkError::DescriptionTooLong(_) => {
                Self::invalid(ErrorCode::InvalidValue, message, "description")
            }
            LinkError::InvalidUrl(_) => Self::invalid(ErrorCode::InvalidUrl, message, "url"),
            LinkError::CustomWithoutCode => Self::invalid(ErrorCode::InvalidCode, message, "code"),
            LinkError::InvalidCode(_) => Self::invalid(ErrorCode::InvalidCode, message, "code"),
            LinkError::Exhausted(_) | LinkError::NoFreeCode => Self::Conflict {
                code: ErrorCode::NoFreeCode,
                message,
            },
        }
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        match self {
            Self::BadRequest { .. } => StatusCode::BAD_REQUEST,
            Self::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::Conflict { .. } => StatusCode::CONFLICT,
            Self::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::Unprocessable { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            Self::RateLimited(_) => StatusCode::TOO_MANY_REQUESTS,
            Self::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            Self::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    fn error_response(&self) -> HttpResponse {
        if let Self::Unavailable(err) = self {
            tracing::error!(error = %err, "API request failed on the database");
        }
        let mut response = HttpResponse::build(self.status_code());
        match self {
            Self::RateLimited(seconds) => {
                response.insert_header((RETRY_AFTER, seconds.to_string()));
            }
            Self::MethodNotAllowed { allow, .. } => {
                response.insert_header((ALLOW, *allow));
            }
            Self::Unauthorized(_) => {
                response.insert_header(("WWW-Authenticate", "Bearer realm=\"inklink\""));
            }
            _ => {}
        }
        response.json(ErrorBody {
            error: self.detail(),
        })
    }
}
