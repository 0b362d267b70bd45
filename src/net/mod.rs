//! Network facts about a request, below both configuration and the web layer: who the client
//! is (`client`), which hosts the admin front ends answer on (`hosts`), and per-caller rate
//! limits (`rate_limit`), and requests inklink sends (`outbound`, and to a single sign-on
//! provider, `oidc`).

pub mod certificate;
pub mod client;
pub mod download;
pub mod hosts;
pub mod oidc;
pub mod outbound;
pub mod rate_limit;
pub mod upload;

/// A setting that lists values with commas (`a, b,c`): each item trimmed, empty items
/// skipped, and the first that `parse` refuses named in the error.
pub fn comma_separated<T>(
    text: &str,
    parse: impl FnMut(&str) -> Result<T, String>,
) -> Result<Vec<T>, String> {
    text.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(parse)
        .collect()
}

/// `text` as one segment of a URL's path: everything but ASCII letters, digits and `-._~`
/// percent-encoded, so that a `/`, `?`, `#`, `+` or space in a name (a tag) stays in its segment.
pub fn path_segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}
