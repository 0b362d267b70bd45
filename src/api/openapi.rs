//! The OpenAPI 3.1 document, generated from the handlers' annotations and the models' types.

use super::error::{ErrorBody, ErrorCode, ErrorDetail};
use super::model;
use actix_web::HttpResponse;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "inklink API",
        description = "Create and manage short links from business back ends. Authenticate with \
            `Authorization: Bearer <key>`; admins create keys in the admin UI (API keys) or with \
            `inklink apikey add`. Operator keys can read everything and create links, and change \
            or revoke the links they created; admin keys can change any link. Every error is \
            `{\"error\": {\"code\", \"message\", \"field\"}}`.",
        version = "1"
    ),
    paths(
        super::links::create,
        super::links::batch,
        super::links::bulk,
        super::links::list,
        super::links::get,
        super::links::update,
        super::links::revoke,
        super::stats::stats,
        super::stats::tag,
        super::stats::all,
        super::events::export,
        super::domains::list,
        super::domains::update,
        super::webhooks::create,
        super::webhooks::list,
        super::webhooks::get,
        super::webhooks::update,
        super::webhooks::delete,
        super::webhooks::deliveries,
        super::webhooks::test,
        super::webhooks::resend,
        super::sms::compose,
        super::sms::count,
        super::batches::create,
        super::batches::list,
        super::batches::get,
        super::batches::messages,
        super::batches::funnel,
        super::batches::recipients,
        super::receipts::batch_receipts,
        super::receipts::aliyun,
        super::receipts::tencent,
    ),
    components(schemas(
        model::CreateLink,
        model::Link,
        model::PatchLink,
        model::BatchRequest,
        model::BatchResponse,
        model::BatchResult,
        model::LinkPage,
        model::LinkStats,
        model::DayStats,
        model::RangeStats,
        model::ScopeStats,
        model::Breakdown,
        model::BreakdownValue,
        model::Domain,
        model::DomainHealth,
        model::PatchDomain,
        model::AltTarget,
        model::BulkRequest,
        model::BulkFilter,
        model::BulkResult,
        model::BulkActionName,
        model::SmsRequest,
        model::SmsCountRequest,
        model::SmsCountView,
        model::SmsResult,
        model::StatusFilter,
        model::CodeStrategy,
        model::LinkState,
        model::SetState,
        super::batch_model::CreateBatch,
        super::batch_model::Batch,
        super::batch_model::BatchList,
        super::batch_model::ReceiptUrls,
        super::batch_model::RejectedRow,
        super::batch_model::Funnel,
        super::batch_model::FunnelBy,
        super::batch_model::FunnelRow,
        super::batch_model::FunnelHour,
        super::batch_model::FailedBy,
        super::batch_model::RecipientList,
        super::batch_model::PlainReceipt,
        super::batch_model::ReceiptReport,
        super::batch_model::ReceiptProblem,
        super::webhooks::CreateWebhook,
        super::webhooks::PatchWebhook,
        super::webhooks::Webhook,
        super::webhooks::WebhookDelivery,
        super::webhooks::Resent,
        ErrorBody,
        ErrorDetail,
        ErrorCode
    )),
    modifiers(&BearerKey),
    tags(
        (name = "links", description = "Shorten, restore, list, edit, revoke, and daily visits"),
        (name = "domains", description = "The hosts links are served on"),
        (name = "sms", description = "Count SMS segments and compose messages around a new link"),
        (name = "batches", description = "Campaign batches: a link per recipient, the messages CSV, delivery receipts (Aliyun, Tencent, CSV) and the funnel"),
        (name = "events", description = "The raw clicks: every stored click with readable fields, streamed"),
        (name = "webhooks", description = "Subscriptions to events (signed as Standard Webhooks says, or for a chat group's robot), their deliveries, tests and re-sending")
    )
)]
pub struct ApiDoc;

struct BearerKey;

impl Modify for BearerKey {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "api_key",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("ik_…")
                    .description(Some("An inklink API key"))
                    .build(),
            ),
        );
    }
}

pub fn document() -> String {
    ApiDoc::openapi()
        .to_pretty_json()
        .expect("the OpenAPI document serialises")
}

pub async fn serve() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(document())
}
