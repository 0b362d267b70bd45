//! What a chat group's robot (WeCom, Feishu/Lark, DingTalk) is sent: the events of a burst as
//! one message for people, in the language of the admin who made the subscription. Codes,
//! URLs, hosts and names are data: they pass through untranslated.

use crate::i18n::Lang;
use crate::rules::webhook::{EventType, Format};
use serde_json::{Value, json};

/// Events listed in one message; more are summed up in a last line.
const LINES: usize = 20;

/// The body of one robot message telling `items` (event name, Standard Webhooks body).
pub fn message(format: Format, language: &str, items: &[(&str, &str)]) -> Vec<u8> {
    let lang = Lang::from_tag(language).unwrap_or(Lang::En);
    let mut lines: Vec<String> = items
        .iter()
        .take(LINES)
        .map(|(event, body)| line(lang, event, body))
        .collect();
    if items.len() > LINES {
        lines.push(lang.f(t!("…and {} more"), items.len() - LINES));
    }
    let title = lang.t(t!("inklink events"));
    let text = lines.join("\n");
    let body = match format {
        Format::WeCom => {
            json!({"msgtype": "markdown", "markdown": {"content": format!("**{title}**\n{text}")}})
        }
        Format::DingTalk => {
            json!({"msgtype": "markdown", "markdown": {"title": title, "text": format!("**{title}**\n\n{}", lines.join("\n\n"))}})
        }
        Format::Feishu | Format::Standard => {
            json!({"msg_type": "text", "content": {"text": format!("{title}\n{text}")}})
        }
    };
    body.to_string().into_bytes()
}

/// One event as a line for people.
fn line(lang: Lang, event: &str, body: &str) -> String {
    let body: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let data = &body["data"];
    let target = data["target"].as_str().unwrap_or("");
    let by = data["by"]["name"].as_str().unwrap_or("");
    let state = if data["after"].is_null() {
        &data["before"]
    } else {
        &data["after"]
    };
    let url = state["url"].as_str().unwrap_or("");
    let words = match EventType::parse(event) {
        Ok(EventType::LinkCreated) => t!("Link {code} created by {by}: {url}"),
        Ok(EventType::LinkUpdated) => t!("Link {code} changed by {by}: {url}"),
        Ok(EventType::LinkDeleted) => t!("Link {code} deleted by {by}"),
        Ok(EventType::BatchCreated) => t!("Batch {code} created by {by}"),
        Ok(EventType::BatchPurged) => t!("Batch {code}: phone numbers deleted"),
        Ok(EventType::DomainSuspect) => t!("Domain {code} may be blocked: {reason}"),
        Ok(EventType::DomainBlocked) => t!("Domain {code} is blocked: {reason}"),
        Ok(EventType::DomainRecovered) => t!("Domain {code} is reachable again"),
        Ok(EventType::DomainRotated) => match state["sms_templates"].as_str() {
            Some(templates) if !templates.is_empty() => {
                t!(
                    "Domain {code} rotated to {next} by {by}; submit its approved SMS templates again: {templates}"
                )
            }
            _ => t!("Domain {code} rotated to {next} by {by}"),
        },
        Ok(EventType::LinkClicked) => t!("Clicks"),
        Err(_) => t!("Test message from inklink (sent by {by})"),
    };
    // Already in the robot's language (put there when the event was announced).
    let reason = state["reason"].as_str().unwrap_or("");
    let templates = state["sms_templates"]
        .as_str()
        .unwrap_or("")
        .lines()
        .collect::<Vec<_>>()
        .join("; ");
    format!(
        "- {}",
        lang.fill(
            words,
            &[
                ("code", target),
                ("by", by),
                ("url", url),
                ("reason", reason),
                ("next", state["replaced_by"].as_str().unwrap_or("")),
                ("templates", &templates),
            ]
        )
    )
}

/// Why a robot refused a message it answered with 200, if it did: its `errcode` (WeCom,
/// DingTalk) or `code` (Feishu) is not 0.
pub fn refusal(body: &[u8]) -> Option<(i64, String)> {
    let answer: Value = serde_json::from_slice(body).ok()?;
    let code = answer
        .get("errcode")
        .or_else(|| answer.get("code"))
        .or_else(|| answer.get("StatusCode"))?
        .as_i64()?;
    if code == 0 {
        return None;
    }
    let reason = answer
        .get("errmsg")
        .or_else(|| answer.get("msg"))
        .and_then(Value::as_str)
        .unwrap_or("");
    Some((code, reason.to_owned()))
}
