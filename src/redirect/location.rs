//! Where a click goes when the short URL carries query parameters of its own.

use std::collections::HashSet;
use url::form_urlencoded;

/// Appends the short URL's query pairs to the target, before any fragment. A key the target
/// already has keeps the target's value: the link's owner decides its parameters, a visitor
/// only adds to them. Returns `None` when nothing is added.
pub fn merge_query(target: &str, incoming: &str) -> Option<String> {
    let (base, fragment) = match target.split_once('#') {
        Some((base, fragment)) => (base, Some(fragment)),
        None => (target, None),
    };
    let existing_query = base.split_once('?').map(|(_, q)| q).unwrap_or("");
    let taken: HashSet<_> = form_urlencoded::parse(existing_query.as_bytes())
        .map(|(key, _)| key)
        .collect();
    let mut merged = String::with_capacity(target.len() + incoming.len() + 1);
    merged.push_str(base);
    let mut separator = match base.find('?') {
        None => "?",
        Some(_) if base.ends_with('?') || base.ends_with('&') => "",
        Some(_) => "&",
    };
    let mut added = false;
    for pair in incoming.split('&').filter(|pair| !pair.is_empty()) {
        let key = form_urlencoded::parse(pair.as_bytes())
            .next()
            .map(|(key, _)| key);
        if key.as_ref().is_some_and(|key| taken.contains(key)) {
            continue;
        }
        merged.push_str(separator);
        separator = "&";
        push_encoded(&mut merged, pair);
        added = true;
    }
    if !added {
        return None;
    }
    if let Some(fragment) = fragment {
        merged.push('#');
        merged.push_str(fragment);
    }
    Some(merged)
}

/// Copies a query pair, percent-encoding any byte a query may not hold as it is.
fn push_encoded(out: &mut String, pair: &str) {
    for byte in pair.bytes() {
        let allowed = byte.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/?%".contains(&byte);
        if allowed {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
}
