//! The SMS composer: the operator writes a message with `{link}` where the short link goes;
//! the composer picks the shortest active domain and a code length that keep the message
//! within the segments asked for, warns about text that phones would read as part of the
//! link, and creates the link.

use super::audit::Actor;
use super::domains;
use super::links::{self, LinkError, NewLink, SavedLink};
use crate::db::entities::domain_conf::{self, DomainStatus};
use crate::rules::sms::{self, CountRule, LINK_PLACEHOLDER, MAX_MESSAGE_CHARS, SmsCount};
use crate::rules::{CodeLength, TargetUrl};
use crate::state::Inklink;
use sea_orm::DbErr;

/// The most segments a composed message may take.
pub const MAX_SEGMENTS: usize = 10;

#[derive(Debug, thiserror::Error, crate::i18n::Says)]
pub enum SmsError {
    #[error(
        "the message has no {LINK_PLACEHOLDER}; write {LINK_PLACEHOLDER} where the short link goes"
    )]
    NoPlaceholder,
    #[error("the message has {LINK_PLACEHOLDER} {0} times; write it once")]
    SeveralPlaceholders(usize),
    #[error("the message is {0} characters long; at most {MAX_MESSAGE_CHARS} are allowed")]
    TooLong(usize),
    #[error("the number of segments must be from 1 to {MAX_SEGMENTS}")]
    Segments,
    #[error("the message contains the control character {0:?}; remove it")]
    ControlCharacter(char),
    #[error(
        "even with the shortest link ({shortest} characters) the message takes {needed} segments, more than the {allowed} asked for; shorten it by {over} characters or allow more segments"
    )]
    DoesNotFit {
        shortest: usize,
        needed: usize,
        allowed: usize,
        over: usize,
    },
    #[error("no domain is active; add one with: inklink domain add HOST")]
    NoActiveDomain,
    #[error(transparent)]
    Link(#[from] LinkError),
    #[error("database error: {0}")]
    Db(#[from] DbErr),
}

/// A message to compose, parsed at the edge.
#[derive(Clone, Debug)]
pub struct SmsDraft {
    /// The text, with [`LINK_PLACEHOLDER`] once.
    pub message: String,
    /// The sender's 【signature】, put in front unless the message already starts with it.
    pub signature: Option<String>,
    pub rule: CountRule,
    /// The most segments the message may take.
    pub segments: usize,
}

impl SmsDraft {
    pub fn new(
        message: &str,
        signature: Option<&str>,
        rule: CountRule,
        segments: usize,
    ) -> Result<Self, SmsError> {
        let chars = message.chars().count();
        if chars > MAX_MESSAGE_CHARS {
            return Err(SmsError::TooLong(chars));
        }
        // The signature is one line: a line break there is a control character too.
        if let Some(c) = sms::control_character(message)
            .or_else(|| signature.and_then(|s| s.chars().find(|c| c.is_control())))
        {
            return Err(SmsError::ControlCharacter(c));
        }
        match message.matches(LINK_PLACEHOLDER).count() {
            0 => return Err(SmsError::NoPlaceholder),
            1 => {}
            n => return Err(SmsError::SeveralPlaceholders(n)),
        }
        if !(1..=MAX_SEGMENTS).contains(&segments) {
            return Err(SmsError::Segments);
        }
        let signature =
            signature
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|s| match s.starts_with('【') {
                    true => s.to_owned(),
                    false => format!("【{s}】"),
                });
        Ok(Self {
            message: message.to_owned(),
            signature,
            rule,
            segments,
        })
    }

    /// The text as sent, with `link` in place.
    pub fn text_with(&self, link: &str) -> String {
        let body = self.message.replacen(LINK_PLACEHOLDER, link, 1);
        match &self.signature {
            Some(signature) if !body.starts_with(signature.as_str()) => {
                format!("{signature}{body}")
            }
            _ => body,
        }
    }

    /// Warnings for the operator: text straight after the link that phones would take in.
    pub fn warnings(&self) -> Vec<SmsWarning> {
        let after = self
            .message
            .split_once(LINK_PLACEHOLDER)
            .and_then(|(_, rest)| rest.chars().next());
        match after {
            Some(next) if sms::joins_link(next) => vec![SmsWarning::JoinsLink(next)],
            _ => Vec::new(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, crate::i18n::Says)]
pub enum SmsWarning {
    #[error(
        "'{0}' right after the link would be read as part of it by many phones' SMS apps; put a space after {LINK_PLACEHOLDER}"
    )]
    JoinsLink(char),
}

/// What the composer chose.
#[derive(Clone, Debug)]
pub struct SmsPlan {
    pub domain: domain_conf::Model,
    pub length: CodeLength,
    /// The text with a stand-in link of the chosen length, and its count.
    pub preview: String,
    pub count: SmsCount,
    pub warnings: Vec<SmsWarning>,
}

/// Picks the domain with the shortest short URL, and the longest code length from the
/// configured one down to 4 that keeps the message within the segments asked for.
pub async fn plan(app: &Inklink, draft: &SmsDraft) -> Result<SmsPlan, SmsError> {
    let mut active: Vec<domain_conf::Model> = domains::list(&app.db)
        .await?
        .into_iter()
        .filter(|d| d.status == DomainStatus::Active)
        .collect();
    active.sort_by_key(|d| (domains::short_url(d, "").chars().count(), !d.is_default));
    let Some(shortest) = active.into_iter().next() else {
        return Err(SmsError::NoActiveDomain);
    };
    let configured = app.settings.code_length;
    let check = usize::from(app.settings.code_check_char);
    let lengths: Vec<CodeLength> = CodeLength::all()
        .filter(|length| length.get() <= configured.max(4))
        .rev()
        .collect();
    let mut last = None;
    for length in lengths {
        let stand_in = "x".repeat(usize::from(length.get()) + check);
        let preview = draft.text_with(&domains::short_url(&shortest, &stand_in));
        let count = sms::count(&preview, draft.rule);
        if count.segments <= draft.segments {
            return Ok(SmsPlan {
                domain: shortest,
                length,
                preview,
                count,
                warnings: draft.warnings(),
            });
        }
        last = Some((preview, count, stand_in));
    }
    let (preview, count, stand_in) = last.expect("at least one length");
    let (single, part) = count.encoding.capacity();
    let allowed_units = if draft.segments == 1 {
        single
    } else {
        part * draft.segments
    };
    Err(SmsError::DoesNotFit {
        shortest: domains::short_url(&shortest, &stand_in).chars().count(),
        needed: count.segments,
        allowed: draft.segments,
        over: count.units.saturating_sub(allowed_units).max(1),
    })
    .inspect_err(|_| tracing::debug!(preview = %preview, "SMS does not fit"))
}

/// The composed message: the link created, the text as sent, and its count.
#[derive(Clone, Debug)]
pub struct Composed {
    pub saved: SavedLink,
    pub text: String,
    pub count: SmsCount,
    pub warnings: Vec<SmsWarning>,
}

/// Plans the message, creates its link on the chosen domain with the chosen length, and
/// gives the text as it will be sent.
pub async fn compose(
    app: &Inklink,
    draft: &SmsDraft,
    target: TargetUrl,
    description: Option<String>,
    tags: Vec<crate::rules::Tag>,
    actor: &Actor,
) -> Result<Composed, SmsError> {
    let plan = plan(app, draft).await?;
    let host =
        crate::rules::DomainHost::parse(&plan.domain.host).map_err(|_| SmsError::NoActiveDomain)?;
    let new = NewLink {
        domain: Some(host),
        length: Some(plan.length),
        description,
        tags,
        ..NewLink::to(target)
    };
    let saved = links::create(app, new, actor).await?;
    let text = draft.text_with(&saved.short_url());
    let count = sms::count(&text, draft.rule);
    Ok(Composed {
        saved,
        text,
        count,
        warnings: plan.warnings,
    })
}
