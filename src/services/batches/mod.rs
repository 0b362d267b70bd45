//! Campaign batches: one message sent to many recipients, each with a link of their own, the
//! messages out as a CSV for the SMS platform, delivery receipts in, and the funnel from sent
//! to clicked (counted by `stats::funnel`).
//!
//! A recipient's link is either a short code of its own (`code` mode: same target and
//! settings as the batch's link, which it redirects through) or the batch's link with a short
//! `r` parameter (`param` mode, for SMS platforms that approve one fixed link per template).

mod create;
pub mod export;
pub mod funnel;
pub mod read;
pub mod receipts;
pub mod retention;

pub use create::{
    BatchFields, BatchSpec, Created, LinkChoice, RecipientRow, Rejected, RowResult, create,
};

use super::audit::Actor;
use super::links::LinkError;
use crate::db::entities::campaign_batch;
use crate::i18n::Message;
use crate::rules::PhoneError;
use crate::rules::csv::CsvError;
use crate::rules::sms::{self, LINK_PLACEHOLDER, MAX_MESSAGE_CHARS};
use read::{MAX_FILE_MB, MAX_ROW_BYTES};
use receipts::MAX_RECEIPTS;
use sea_orm::{ColumnTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter, QueryOrder};
use std::collections::HashMap;

/// Recipients one batch may have.
pub const MAX_RECIPIENTS: usize = 1_000_000;
/// Rejected rows listed in an answer (all are counted).
pub const MAX_LISTED_REJECTIONS: usize = 1_000;
/// Longest batch name, in characters.
pub const MAX_NAME_CHARS: usize = 200;
/// The bytes of a recipient's variables together, at most.
pub const MAX_VARIABLE_BYTES: usize = 1_000;
/// Variables a template may use.
pub const MAX_VARIABLES: usize = 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Each recipient has a short code of their own.
    Code,
    /// One fixed link plus `?r=<token>`.
    Param,
}

impl Mode {
    pub fn parse(input: &str) -> Option<Self> {
        match input.trim() {
            "code" => Some(Self::Code),
            "param" => Some(Self::Param),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Code => "code",
            Self::Param => "param",
        }
    }

    /// The lengths a recipient's token may have, and the default.
    pub fn lengths(self) -> (std::ops::RangeInclusive<u8>, u8) {
        match self {
            Self::Code => (4..=12, 7),
            Self::Param => (4..=6, 4),
        }
    }
}

#[derive(Debug, thiserror::Error, crate::i18n::Says)]
pub enum BatchError {
    #[error("the batch needs a name")]
    NoName,
    #[error("the name is {0} characters long; at most {MAX_NAME_CHARS} are allowed")]
    NameTooLong(usize),
    #[error(
        "the mode '{0}' is not known; use code (a code per recipient) or param (one link with ?r=)"
    )]
    UnknownMode(String),
    #[error("in {mode} mode the length must be from {min} to {max}")]
    TokenLength {
        mode: &'static str,
        min: u8,
        max: u8,
    },
    #[error(
        "the message has no {LINK_PLACEHOLDER}; write {LINK_PLACEHOLDER} where the recipient's link goes"
    )]
    NoPlaceholder,
    #[error("the message has {LINK_PLACEHOLDER} {0} times; write it once")]
    SeveralPlaceholders(usize),
    #[error("the message is {0} characters long; at most {MAX_MESSAGE_CHARS} are allowed")]
    TemplateTooLong(usize),
    #[error(
        "the message uses {{{0}}}, which the recipients do not have; add a column '{0}' or remove it from the message"
    )]
    MissingVariable(String),
    #[error("the message contains the control character {0:?}; remove it")]
    ControlCharacter(char),
    #[error("the message uses more than {MAX_VARIABLES} variables")]
    TooManyVariables,
    #[error("'{0}' is not a counting rule; use china or standard")]
    UnknownRule(String),
    #[error("give either a target URL for a new link or the code of an existing link, not both")]
    LinkChoice,
    #[error("the batch has no recipients")]
    NoRecipients,
    #[error(
        "the file has {0} recipients; a batch holds at most {MAX_RECIPIENTS}; split it into several batches"
    )]
    TooManyRecipients(usize),
    #[error("the recipients' file is not valid: {0}")]
    BadFile(#[from] FileError),
    #[error(
        "the first line must name the columns, and one of them must be 'phone' (the others are variables for the message)"
    )]
    NoPhoneColumn,
    #[error(
        "all codes of length {0} for this link's parameter are used; choose a longer parameter"
    )]
    TokensUsedUp(u8),
    #[error("there is no batch {0}")]
    NotFound(i64),
    #[error("you may see only the batches you created; ask an admin about batch {0}")]
    NotYours(i64),
    #[error("the secret does not match this batch's receipt URL")]
    BadSecret,
    #[error("the phone numbers of batch {0} were deleted at the end of their retention period")]
    Purged(i64),
    #[error(transparent)]
    Link(#[from] LinkError),
    #[error("database error: {0}")]
    Db(#[from] DbErr),
}

impl From<crate::rules::codes::CodeSpaceExhausted> for BatchError {
    fn from(err: crate::rules::codes::CodeSpaceExhausted) -> Self {
        Self::Link(LinkError::from(err))
    }
}

/// The message of a batch, with `{link}` once and `{name}`-style variables.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Template {
    text: String,
    variables: Vec<String>,
}

impl Template {
    pub fn parse(text: &str) -> Result<Self, BatchError> {
        let chars = text.chars().count();
        if chars > MAX_MESSAGE_CHARS {
            return Err(BatchError::TemplateTooLong(chars));
        }
        if let Some(c) = sms::control_character(text) {
            return Err(BatchError::ControlCharacter(c));
        }
        match text.matches(LINK_PLACEHOLDER).count() {
            0 => return Err(BatchError::NoPlaceholder),
            1 => {}
            n => return Err(BatchError::SeveralPlaceholders(n)),
        }
        let mut variables: Vec<String> = Vec::new();
        for (name, _) in placeholders(text) {
            if name != "link" && !variables.iter().any(|v| v == name) {
                variables.push(name.to_owned());
            }
        }
        if variables.len() > MAX_VARIABLES {
            return Err(BatchError::TooManyVariables);
        }
        Ok(Self {
            text: text.to_owned(),
            variables,
        })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The variables the message uses, `link` aside, in order of first use.
    pub fn variables(&self) -> &[String] {
        &self.variables
    }

    /// The message for one recipient: `{link}` and each variable replaced (a variable the
    /// recipient has no value for becomes empty).
    pub fn render(&self, link: &str, values: &HashMap<String, String>) -> String {
        let mut out = String::with_capacity(self.text.len() + link.len() + 16);
        let mut rest = self.text.as_str();
        for (name, range) in placeholders(&self.text) {
            let start = range.start - (self.text.len() - rest.len());
            out.push_str(&rest[..start]);
            match name {
                "link" => out.push_str(link),
                name => out.push_str(values.get(name).map_or("", String::as_str)),
            }
            rest = &self.text[range.end..];
        }
        out.push_str(rest);
        out
    }
}

/// `{name}` placeholders of `text`: names of letters (any script), digits and `_`, up to 32,
/// not starting with a digit (`{name}`, `{姓名}`); other braces are text.
fn placeholders(text: &str) -> Vec<(&str, std::ops::Range<usize>)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'{'
            && let Some(len) = bytes[i + 1..].iter().position(|b| *b == b'}')
        {
            let name = &text[i + 1..i + 1 + len];
            if is_variable_name(name) {
                out.push((name, i..i + len + 2));
                i += len + 2;
                continue;
            }
        }
        i += 1;
    }
    out
}

/// Whether a column of the recipients' file can be used in the message as `{name}`.
pub fn is_variable_name(name: &str) -> bool {
    (1..=32).contains(&name.chars().count())
        && name.chars().all(|c| c.is_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit())
}

/// The recipient key a provider carries back (`out_id`): the batch and the recipient's number.
pub fn recipient_key(batch: i64, number: i32) -> String {
    format!("{batch}-{number}")
}

/// A recipient key read back: `None` when it is not one.
pub fn parse_recipient_key(key: &str) -> Option<(i64, i32)> {
    let (batch, number) = key.trim().split_once('-')?;
    Some((batch.parse().ok()?, number.parse().ok()?))
}

/// The one rule for every front end: admins see and change every batch; operators (people
/// and keys) only the batches they created.
pub fn may_see(actor: &Actor, batch: &campaign_batch::Model) -> Result<(), BatchError> {
    match actor.is_admin() || actor.is(batch.creator_kind.as_deref(), batch.creator_id) {
        true => Ok(()),
        false => Err(BatchError::NotYours(batch.id)),
    }
}

/// Batch `id`, if `actor` may see it.
pub async fn find(
    db: &DatabaseConnection,
    id: i64,
    actor: &Actor,
) -> Result<campaign_batch::Model, BatchError> {
    let batch = campaign_batch::Entity::find_by_id(id)
        .one(db)
        .await?
        .ok_or(BatchError::NotFound(id))?;
    may_see(actor, &batch)?;
    Ok(batch)
}

/// The batches `actor` may see, newest first.
pub async fn list(
    db: &DatabaseConnection,
    actor: &Actor,
) -> Result<Vec<campaign_batch::Model>, DbErr> {
    let mut query = campaign_batch::Entity::find().order_by_desc(campaign_batch::Column::Id);
    if !actor.is_admin() {
        query = query
            .filter(campaign_batch::Column::CreatorKind.eq(actor.kind()))
            .filter(campaign_batch::Column::CreatorId.eq(actor.id()));
    }
    query.all(db).await
}

/// Why a recipient row was turned away.
#[derive(Debug, thiserror::Error, crate::i18n::Says)]
pub enum RowError {
    #[error(transparent)]
    Phone(#[from] PhoneError),
    #[error("{0} is already in this batch (row {1})")]
    Duplicate(String, usize),
    #[error("the row's variables take {0} bytes; at most {MAX_VARIABLE_BYTES} are allowed")]
    VariablesTooLong(usize),
    #[error("the row could not be read: {0}")]
    Unreadable(#[from] CsvError),
    #[error("the row is {0} bytes long; at most {MAX_ROW_BYTES} are allowed")]
    TooLong(usize),
    #[error("the field '{0}' must be a string or a number")]
    FieldType(String),
    #[error("the recipient has no phone")]
    NoPhone,
    #[error("the batch already has {MAX_RECIPIENTS} recipients")]
    BatchFull,
}

/// Why a recipients' or receipts' file was refused as a whole.
#[derive(Debug, thiserror::Error, crate::i18n::Says)]
pub enum FileError {
    #[error(
        "the file is {0} MB; at most {MAX_FILE_MB} MB are taken at once; split it into several batches"
    )]
    TooLarge(usize),
    #[error("it is neither UTF-8 nor GB18030 text; save it as CSV UTF-8")]
    Encoding,
    #[error(transparent)]
    Csv(#[from] CsvError),
    #[error("no row could be used; row {row}: {error}")]
    NoUsableRow { row: usize, error: Message },
    #[error(
        "the first line must name the columns: phone (or key), delivered, and optionally error_code and at"
    )]
    ReceiptColumns,
    #[error("the receipts need a 'phone' or a 'key' column")]
    ReceiptRecipient,
    #[error("it has more than {MAX_RECEIPTS} receipts; send them in several files")]
    TooManyReceiptRows,
    #[error("it has {0} receipts; at most {MAX_RECEIPTS} are taken at once")]
    TooManyReceipts(usize),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_fills_in_the_link_and_the_variables() {
        let template = Template::parse("【店】{name}您好，{link} 回T退订 {x y} {1a}").unwrap();
        assert_eq!(template.variables(), ["name"]);
        let values = HashMap::from([("name".to_owned(), "王小美".to_owned())]);
        assert_eq!(
            template.render("https://s.cn/Ab3", &values),
            "【店】王小美您好，https://s.cn/Ab3 回T退订 {x y} {1a}"
        );
        assert!(matches!(
            Template::parse("text"),
            Err(BatchError::NoPlaceholder)
        ));
        assert_eq!(parse_recipient_key("12-345"), Some((12, 345)));
        assert_eq!(parse_recipient_key("x"), None);
    }
}
