//! The one fact of an X.509 certificate that domain health reads: when it stops being valid
//! (`notAfter`), found by walking the DER of the certificate's first fields.

/// One DER element at the start of `input`: its tag, its contents, and what follows it.
fn element(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (length, rest) = match first {
        short if short < 0x80 => (usize::from(short), rest),
        long => {
            let count = usize::from(long & 0x7f);
            if count == 0 || count > 4 || rest.len() < count {
                return None;
            }
            let length = rest[..count]
                .iter()
                .fold(0usize, |n, &b| (n << 8) | usize::from(b));
            (length, &rest[count..])
        }
    };
    (rest.len() >= length).then(|| (tag, &rest[..length], &rest[length..]))
}

/// A certificate's `notAfter`, in seconds since 1970 (UTC), or `None` when `der` is not a
/// certificate this walk understands.
pub fn not_after(der: &[u8]) -> Option<i64> {
    const SEQUENCE: u8 = 0x30;
    let (SEQUENCE, certificate, _) = element(der)? else {
        return None;
    };
    let (SEQUENCE, tbs, _) = element(certificate)? else {
        return None;
    };
    let mut rest = tbs;
    // [0] EXPLICIT version, when present.
    if rest.first() == Some(&0xa0) {
        rest = element(rest)?.2;
    }
    // serialNumber, signature, issuer.
    for _ in 0..3 {
        rest = element(rest)?.2;
    }
    let (SEQUENCE, validity, _) = element(rest)? else {
        return None;
    };
    let (_, _, after) = element(validity)?;
    let (tag, time, _) = element(after)?;
    let text = std::str::from_utf8(time).ok()?.strip_suffix('Z')?;
    let full = match tag {
        // UTCTime: YYMMDDHHMMSS, years 1950 to 2049 (RFC 5280 §4.1.2.5.1).
        0x17 if text.len() == 12 => {
            let year: i32 = text[..2].parse().ok()?;
            format!(
                "{}{}",
                if year >= 50 { 1900 + year } else { 2000 + year },
                &text[2..]
            )
        }
        // GeneralizedTime: YYYYMMDDHHMMSS.
        0x18 if text.len() == 14 => text.to_owned(),
        _ => return None,
    };
    chrono::NaiveDateTime::parse_from_str(&full, "%Y%m%d%H%M%S")
        .ok()
        .map(|at| at.and_utc().timestamp())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// DER of `tag` around `contents`.
    fn der(tag: u8, contents: &[u8]) -> Vec<u8> {
        let mut out = vec![tag];
        match contents.len() {
            n if n < 0x80 => out.push(n as u8),
            n => out.extend([0x82, (n >> 8) as u8, n as u8]),
        }
        out.extend_from_slice(contents);
        out
    }

    fn certificate(not_after: (u8, &str)) -> Vec<u8> {
        let validity = [
            der(0x17, b"260101000000Z"),
            der(not_after.0, not_after.1.as_bytes()),
        ]
        .concat();
        let tbs = [
            der(0xa0, &der(0x02, &[2])),
            der(0x02, &[1, 2, 3]),
            der(0x30, &der(0x06, &[42, 134, 72])),
            der(0x30, &[0x31; 200]),
            der(0x30, &validity),
            der(0x30, b"subject"),
        ]
        .concat();
        der(
            0x30,
            &[der(0x30, &tbs), der(0x30, b"alg"), der(0x03, b"sig")].concat(),
        )
    }

    #[test]
    fn not_after_is_read_in_both_time_forms() {
        assert_eq!(
            not_after(&certificate((0x17, "261231235959Z"))),
            Some(1_798_761_599)
        );
        assert_eq!(
            not_after(&certificate((0x18, "20261231235959Z"))),
            Some(1_798_761_599)
        );
        assert_eq!(
            not_after(&certificate((0x17, "491231235959Z"))),
            Some(2_524_607_999)
        );
        assert_eq!(
            not_after(&certificate((0x17, "500101000000Z"))),
            Some(-631_152_000)
        );
        assert_eq!(not_after(b"\x30\x05\x30\x03"), None);
        assert_eq!(not_after(&[]), None);
    }
}
