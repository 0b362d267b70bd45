//! Why a CSV file a person sent could not be read, in our words: the csv crate's own are
//! English and name its internals.

/// A CSV file's fault, with the line it is on (the header is line 1).
#[derive(Debug, thiserror::Error, crate::i18n::Says)]
pub enum CsvError {
    #[error("line {line} is not UTF-8 text; save the file as CSV UTF-8")]
    Encoding { line: u64 },
    #[error("line {line} has {found} fields where the first line has {expected}")]
    Fields {
        line: u64,
        found: u64,
        expected: u64,
    },
    #[error("the file could not be read as CSV (line {line})")]
    Unreadable { line: u64 },
}

impl From<::csv::Error> for CsvError {
    fn from(err: ::csv::Error) -> Self {
        let line = err.position().map_or(1, ::csv::Position::line);
        match err.kind() {
            ::csv::ErrorKind::Utf8 { pos, .. } => Self::Encoding {
                line: pos.as_ref().map_or(line, ::csv::Position::line),
            },
            ::csv::ErrorKind::UnequalLengths {
                pos,
                expected_len,
                len,
            } => Self::Fields {
                line: pos.as_ref().map_or(line, ::csv::Position::line),
                found: *len,
                expected: *expected_len,
            },
            _ => {
                tracing::debug!(error = %err, "a CSV file could not be read");
                Self::Unreadable { line }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first_error(text: &str) -> CsvError {
        let mut reader = ::csv::ReaderBuilder::new().from_reader(text.as_bytes());
        reader
            .records()
            .find_map(Result::err)
            .expect("an error")
            .into()
    }

    #[test]
    fn a_csv_fault_names_its_line() {
        assert!(matches!(
            first_error("a,b\n1,2\n1,2,3\n"),
            CsvError::Fields {
                line: 3,
                found: 3,
                expected: 2
            }
        ));
        // As the importers read: the header first, then the records.
        let mut reader = ::csv::ReaderBuilder::new().from_reader(&b"a,b\n1,2\n1,\xff\n"[..]);
        assert!(reader.headers().is_ok());
        let bad = reader.records().find_map(Result::err).map(CsvError::from);
        assert!(
            matches!(bad, Some(CsvError::Encoding { line: 3 })),
            "{bad:?}"
        );
    }
}
