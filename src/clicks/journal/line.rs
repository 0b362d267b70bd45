//! The journal's line format. It is written on the redirect path, for every click, so nothing
//! here goes through `Display` of dates or addresses or through serde: JSON cost the redirect
//! about a microsecond a click (measured with `bench/redirect.sh`).
//!
//! One line per click, eleven fields separated by tabs: event key (32 hex digits), time (UTC
//! microseconds since 1970), outcome (one letter, `Outcome::letter`), `1` for a `HEAD`, link id, address
//! (`4` and the IPv4 number, or `6` and 32 hex digits), code, host, user agent, referer and
//! query. An empty field is a missing value (captured texts are never empty). In texts, `\`,
//! tab, line feed and carriage return are escaped as `\\`, `\t`, `\n` and `\r`.

use super::super::event::ClickEvent;
use crate::clickstore::row::EventKey;
use crate::rules::Outcome;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

const FIELDS: usize = 11;

pub fn encode(event: &ClickEvent, out: &mut Vec<u8>) {
    if let Some(key) = event.key {
        hex(key.0, out);
    }
    out.push(b'\t');
    decimal(event.at.and_utc().timestamp_micros(), out);
    out.push(b'\t');
    out.push(event.outcome.letter());
    out.push(b'\t');
    out.push(if event.head { b'1' } else { b'0' });
    out.push(b'\t');
    if let Some(id) = event.link_id {
        decimal(id, out);
    }
    out.push(b'\t');
    match event.client_ip {
        IpAddr::V4(v4) => {
            out.push(b'4');
            decimal(i64::from(u32::from(v4)), out);
        }
        IpAddr::V6(v6) => {
            out.push(b'6');
            hex(u128::from(v6), out);
        }
    }
    for text in [
        Some(&event.code),
        event.host.as_ref(),
        event.user_agent.as_ref(),
        event.referer.as_ref(),
        event.query.as_ref(),
    ] {
        out.push(b'\t');
        if let Some(text) = text {
            escaped(text.as_bytes(), out);
        }
    }
    out.push(b'\n');
}

/// The click of one line (without its line feed); `None` for a line that is not one (cut
/// short by a crash).
pub fn decode(line: &[u8]) -> Option<ClickEvent> {
    let fields: Vec<&[u8]> = line.split(|&b| b == b'\t').collect();
    let [
        key,
        at,
        outcome,
        head,
        link,
        ip,
        code,
        host,
        agent,
        referer,
        query,
    ] = <[&[u8]; FIELDS]>::try_from(fields).ok()?;
    let text = |field: &[u8]| -> Option<Option<Box<str>>> {
        if field.is_empty() {
            return Some(None);
        }
        Some(Some(unescaped(field)?.into_boxed_str()))
    };
    let number = |field: &[u8]| std::str::from_utf8(field).ok()?.parse::<i64>().ok();
    Some(ClickEvent {
        at: chrono::DateTime::from_timestamp_micros(number(at)?)?.naive_utc(),
        code: text(code)??,
        link_id: match link {
            [] => None,
            digits => Some(number(digits)?),
        },
        host: text(host)?,
        client_ip: match ip.split_first()? {
            (b'4', digits) => IpAddr::V4(Ipv4Addr::from(u32::try_from(number(digits)?).ok()?)),
            (b'6', digits) => IpAddr::V6(Ipv6Addr::from(crate::digest::from_hex128(digits)?)),
            _ => return None,
        },
        user_agent: text(agent)?,
        referer: text(referer)?,
        query: text(query)?,
        outcome: match outcome {
            [letter] => Outcome::from_letter(*letter)?,
            _ => return None,
        },
        head: head == b"1",
        key: match key {
            [] => None,
            digits => Some(EventKey(crate::digest::from_hex128(digits)?)),
        },
        generation: 0,
    })
}

fn decimal(value: i64, out: &mut Vec<u8>) {
    if value < 0 {
        out.push(b'-');
    }
    let mut n = value.unsigned_abs();
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

fn hex(value: u128, out: &mut Vec<u8>) {
    out.extend_from_slice(&crate::digest::hex128(value));
}

fn escaped(text: &[u8], out: &mut Vec<u8>) {
    let special = |b: &u8| matches!(b, b'\\' | b'\t' | b'\n' | b'\r');
    if !text.iter().any(special) {
        out.extend_from_slice(text);
        return;
    }
    for &b in text {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b => out.push(b),
        }
    }
}

fn unescaped(field: &[u8]) -> Option<String> {
    let mut bytes = Vec::with_capacity(field.len());
    let mut rest = field.iter();
    while let Some(&b) = rest.next() {
        if b != b'\\' {
            bytes.push(b);
            continue;
        }
        bytes.push(match rest.next()? {
            b'\\' => b'\\',
            b't' => b'\t',
            b'n' => b'\n',
            b'r' => b'\r',
            _ => return None,
        });
    }
    String::from_utf8(bytes).ok()
}
