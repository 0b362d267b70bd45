//! The day sets of one link's day packed in one value (`visit_day_values.sets`, migration 39):
//! each set after the other, as its kind, its value and its members (a serialized bitmap),
//! each after its length in bytes (one byte for the kind, two for the value, four for the
//! members, little-endian). Counting (`stats::daysets`) writes and reads it; it is defined here
//! because the migration that packs the sets unpacks them again going down.

/// One set of a packed row.
#[derive(Debug, PartialEq, Eq)]
pub struct Entry<'a> {
    pub kind: &'a str,
    pub value: &'a str,
    pub members: &'a [u8],
}

/// Appends a set to a packed row. A kind is a letter and a value at most 255 characters, so
/// their lengths fit; a set's members fit in four bytes' length as in the database's blob.
pub fn push(out: &mut Vec<u8>, kind: &str, value: &str, members: &[u8]) {
    let kind_len = u8::try_from(kind.len()).expect("a set's kind is a letter");
    let value_len = u16::try_from(value.len()).expect("a value is at most 255 characters");
    let members_len = u32::try_from(members.len()).expect("a day set under 4 GB");
    out.reserve(7 + kind.len() + value.len() + members.len());
    out.push(kind_len);
    out.extend_from_slice(kind.as_bytes());
    out.extend_from_slice(&value_len.to_le_bytes());
    out.extend_from_slice(value.as_bytes());
    out.extend_from_slice(&members_len.to_le_bytes());
    out.extend_from_slice(members);
}

/// The sets of a packed row, in the order written; an error says where it is damaged.
pub fn entries(mut bytes: &[u8]) -> Result<Vec<Entry<'_>>, String> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let kind = take_text(&mut bytes, 1)?;
        let value = take_text(&mut bytes, 2)?;
        let members = take(&mut bytes, 4)?;
        out.push(Entry {
            kind,
            value,
            members,
        });
    }
    Ok(out)
}

/// The next `width`-byte length and the bytes it counts.
fn take<'a>(bytes: &mut &'a [u8], width: usize) -> Result<&'a [u8], String> {
    let damaged = || format!("a packed day set is damaged ({} bytes left)", bytes.len());
    let len = bytes.get(..width).ok_or_else(damaged)?;
    let len = len
        .iter()
        .rev()
        .fold(0usize, |n, b| (n << 8) | usize::from(*b));
    let found = bytes.get(width..width + len).ok_or_else(damaged)?;
    *bytes = &bytes[width + len..];
    Ok(found)
}

fn take_text<'a>(bytes: &mut &'a [u8], width: usize) -> Result<&'a str, String> {
    let text = take(bytes, width)?;
    std::str::from_utf8(text).map_err(|err| format!("a packed day set's key is damaged: {err}"))
}
