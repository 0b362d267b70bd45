//! Actions on the links selected in the list (ticked, or every link the filter matches):
//! disable, enable, tag, untag, export or delete, each after a confirmation that says how many
//! links it changes, through the same service as the API's bulk endpoint.

use crate::admin::access::auth::CurrentUser;
use crate::admin::error::AdminError;
use crate::admin::links::FilterForm;
use crate::admin::pages::{Confirm, Frame, see_other};
use crate::i18n::Message;
use crate::i18n::Says;
use crate::i18n::Text;
use crate::rules::{ShortCode, Tag};
use crate::services::links::listing;
use crate::services::links::many::{self, BulkAction, BulkError, Selection};
use crate::state::AppState;
use actix_web::{HttpResponse, web};

/// What the list's selection form posts (codes repeat, so it is read by hand).
struct Posted {
    csrf: String,
    action: String,
    codes: Vec<String>,
    all: bool,
    tags: String,
    confirm: bool,
    filter: FilterForm,
}

fn read(body: &[u8]) -> Posted {
    let mut posted = Posted {
        csrf: String::new(),
        action: String::new(),
        codes: Vec::new(),
        all: false,
        tags: String::new(),
        confirm: false,
        filter: FilterForm::default(),
    };
    for (key, value) in url::form_urlencoded::parse(body) {
        let value = value.into_owned();
        match key.as_ref() {
            "csrf" => posted.csrf = value,
            "action" => posted.action = value,
            "codes" => posted.codes.push(value),
            "all" => posted.all = value == "yes",
            "tags" => posted.tags = value,
            "confirm" => posted.confirm = value == "yes",
            "q" => posted.filter.q = value,
            "status" => posted.filter.status = value,
            "domain" => posted.filter.domain = value,
            "creator" => posted.filter.creator = value,
            "tag" => posted.filter.tag = value,
            _ => {}
        }
    }
    posted
}

/// Back to the list as it was filtered.
fn back(filter: &FilterForm) -> String {
    format!("/admin/links?{}", filter.query_string())
}

pub async fn apply(
    user: CurrentUser,
    state: web::Data<AppState>,
    body: web::Bytes,
) -> Result<HttpResponse, AdminError> {
    let posted = read(&body);
    user.check_csrf(&posted.csrf)?;
    let refuse = |text: Text| AdminError::Refused(Message::new(text));
    let selection = if posted.all {
        Selection::Filter(posted.filter.filter())
    } else {
        if posted.codes.is_empty() {
            return Err(refuse(t!(
                "no link is selected; tick the links to change, or choose every link that matches"
            )));
        }
        Selection::Codes(
            posted
                .codes
                .iter()
                .map(|code| ShortCode::parse(code).map_err(|err| AdminError::Refused(err.says())))
                .collect::<Result<_, _>>()?,
        )
    };
    let tags = Tag::parse_list(&posted.tags).map_err(|err| AdminError::Refused(err.says()))?;
    let action = match posted.action.as_str() {
        "disable" => BulkAction::Disable,
        "enable" => BulkAction::Enable,
        "delete" => BulkAction::Delete,
        "tag" | "untag" if tags.is_empty() => {
            return Err(refuse(t!("give the tags to add or remove")));
        }
        "tag" => BulkAction::Tag(tags.clone()),
        "untag" => BulkAction::Untag(tags.clone()),
        "export" => return export(&state, &posted, user.tz).await,
        _ => return Err(refuse(t!("choose what to do with the selected links"))),
    };
    let count = match &selection {
        Selection::Codes(codes) => codes.len() as u64,
        Selection::Filter(filter) => listing::count(&state.core.db, filter).await?,
    };
    if !posted.confirm {
        // The tags are data, the number of links words.
        let links = match count {
            1 => Message::new(t!("1 link")),
            _ => Message::new(t!("{} links")).data("", count),
        };
        let tags = posted.tags.trim();
        let text = |english: Text| {
            Message::new(english)
                .data("tags", tags)
                .message("links", links.clone())
        };
        let (button, heading) = match &action {
            BulkAction::Disable => (text(t!("Disable {links}")), text(t!("Disable {links}?"))),
            BulkAction::Enable => (text(t!("Enable {links}")), text(t!("Enable {links}?"))),
            BulkAction::Delete => (text(t!("Delete {links}")), text(t!("Delete {links}?"))),
            BulkAction::Tag(_) => (
                text(t!("Add the tags {tags} to {links}")),
                text(t!("Add the tags {tags} to {links}?")),
            ),
            BulkAction::Untag(_) => (
                text(t!("Remove the tags {tags} from {links}")),
                text(t!("Remove the tags {tags} from {links}?")),
            ),
        };
        let mut fields: Vec<(&'static str, String)> = vec![
            ("action", posted.action.clone()),
            ("tags", posted.tags.clone()),
            ("q", posted.filter.q.clone()),
            ("status", posted.filter.status.clone()),
            ("domain", posted.filter.domain.clone()),
            ("creator", posted.filter.creator.clone()),
            ("tag", posted.filter.tag.clone()),
        ];
        if posted.all {
            fields.push(("all", "yes".to_owned()));
        }
        fields.extend(posted.codes.iter().map(|code| ("codes", code.clone())));
        let consequence = match &action {
            BulkAction::Disable => {
                t!("They answer 410 (or their fallback) at once; each can be enabled again.")
            }
            BulkAction::Enable => t!("They redirect again at once."),
            BulkAction::Delete => {
                t!(
                    "They answer 404 and leave the lists; their codes are never given out again. This cannot be undone."
                )
            }
            BulkAction::Tag(_) | BulkAction::Untag(_) => t!("Their statistics stay as they are."),
        };
        return Ok(Confirm {
            frame: Frame::new(&user, None, "links"),
            heading,
            lines: vec![
                Message::new(consequence),
                Message::new(t!(
                    "Links you may not change (others' links, for operators) are left as they are."
                )),
            ],
            action: "/admin/links/selection".to_owned(),
            fields,
            button,
            back: "/admin/links",
            listing: Vec::new(),
        }
        .page());
    }
    let outcome = many::apply(&state.core, &selection, &action, &user.actor())
        .await
        .map_err(|err| match err {
            BulkError::Db(err) => AdminError::Db(err),
            other => AdminError::Refused(other.says()),
        })?;
    let changed = Message::new(t!("{} of {} selected links changed"))
        .data("", outcome.changed)
        .data("", outcome.matched);
    user.flash(if outcome.refused > 0 {
        Message::Parts(vec![
            changed,
            Message::new(t!("{} left alone (not yours)")).data("", outcome.refused),
        ])
    } else {
        changed
    });
    Ok(see_other(&back(&posted.filter)))
}

/// The selected links as the list's CSV export.
async fn export(
    state: &AppState,
    posted: &Posted,
    tz: chrono_tz::Tz,
) -> Result<HttpResponse, AdminError> {
    let db = &state.core.db;
    let csv = if posted.all {
        crate::services::links::bulk::export_csv(db, &posted.filter.filter(), tz).await?
    } else {
        let codes: Vec<ShortCode> = posted
            .codes
            .iter()
            .filter_map(|code| ShortCode::parse(code).ok())
            .collect();
        crate::services::links::bulk::export_codes_csv(db, &codes, tz).await?
    };
    Ok(crate::admin::download::attachment(
        &csv,
        "inklink-selected-links.csv",
    ))
}
