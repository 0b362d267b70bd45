//! Reading recipients: a CSV file (UTF-8, with or without a BOM, or GB18030 as Excel saves it
//! in a Chinese locale) or the API's JSON list.

use super::create::{RecipientRow, RowResult};
use super::{BatchError, FileError, MAX_RECIPIENTS, RowError, is_variable_name};
use std::collections::HashMap;

/// The largest recipients' file taken (about four million rows of a phone and a name).
pub const MAX_FILE_MB: usize = 64;
pub const MAX_FILE_BYTES: usize = MAX_FILE_MB * 1024 * 1024;
/// The longest row of a file, in bytes.
pub const MAX_ROW_BYTES: usize = 4096;

/// Names the phone column may have (compared without case).
const PHONE_COLUMNS: [&str; 7] = [
    "phone",
    "mobile",
    "phone_number",
    "手机",
    "手机号",
    "手机号码",
    "电话",
];

/// A recipients' file, decoded, with its header read.
pub struct RecipientFile {
    text: String,
    phone: usize,
    /// The file's columns (the phone's included, at its place).
    header: Vec<String>,
}

impl RecipientFile {
    pub fn parse(bytes: &[u8]) -> Result<Self, BatchError> {
        if bytes.len() > MAX_FILE_BYTES {
            return Err(FileError::TooLarge(bytes.len() / (1024 * 1024)).into());
        }
        let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        let text = match std::str::from_utf8(bytes) {
            Ok(text) => text.to_owned(),
            Err(_) => {
                let (text, _, bad) = encoding_rs::GB18030.decode(bytes);
                if bad {
                    return Err(FileError::Encoding.into());
                }
                text.into_owned()
            }
        };
        let header: Vec<String> = {
            let mut reader = reader(&text);
            match reader.headers() {
                Ok(header) => header.iter().map(|h| h.trim().to_owned()).collect(),
                Err(err) => return Err(FileError::Csv(err.into()).into()),
            }
        };
        let phone = header
            .iter()
            .position(|h| PHONE_COLUMNS.iter().any(|p| p.eq_ignore_ascii_case(h)))
            .ok_or(BatchError::NoPhoneColumn)?;
        let file = Self {
            text,
            phone,
            header,
        };
        let rows = file.count_rows();
        if rows > MAX_RECIPIENTS {
            return Err(BatchError::TooManyRecipients(rows));
        }
        Ok(file)
    }

    /// The variables the recipients have (the columns other than the phone's).
    pub fn columns(&self) -> Vec<String> {
        self.header
            .iter()
            .enumerate()
            .filter(|(i, name)| *i != self.phone && is_variable_name(name))
            .map(|(_, name)| name.clone())
            .collect()
    }

    /// Data rows, blank lines not counted.
    fn count_rows(&self) -> usize {
        let mut reader = reader(&self.text);
        let mut record = csv::ByteRecord::new();
        let mut rows = 0;
        while let Ok(true) = reader.read_byte_record(&mut record) {
            rows += 1;
        }
        rows
    }

    /// Each data row as a recipient, or why it could not be read; rows are numbered by their
    /// line in the file (the header is line 1).
    pub fn rows(&self) -> impl Iterator<Item = RowResult> + '_ {
        let mut reader = reader(&self.text);
        // The header was read at parse time; read it again so records start at the data.
        let _ = reader.headers();
        let columns: Vec<(usize, String)> = self
            .header
            .iter()
            .enumerate()
            .filter(|(i, name)| *i != self.phone && is_variable_name(name))
            .map(|(i, name)| (i, name.clone()))
            .collect();
        let phone = self.phone;
        reader.into_records().map(move |record| {
            let record = record.map_err(|err| {
                let line = err.position().map_or(0, |p| p.line() as usize);
                (line, RowError::Unreadable(err.into()))
            })?;
            let line = record.position().map_or(0, |p| p.line() as usize);
            let bytes = record.as_byte_record().as_slice().len();
            if bytes > MAX_ROW_BYTES {
                return Err((line, RowError::TooLong(bytes)));
            }
            Ok(RecipientRow {
                row: line,
                phone: record.get(phone).unwrap_or_default().to_owned(),
                values: columns
                    .iter()
                    .map(|(i, name)| (name.clone(), record.get(*i).unwrap_or_default().to_owned()))
                    .collect(),
            })
        })
    }
}

fn reader(text: &str) -> csv::Reader<&[u8]> {
    csv::ReaderBuilder::new()
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes())
}

/// The recipients of the API's JSON list: `phone` and any other fields as variables (strings
/// and numbers); rows are numbered by their index in the list.
pub fn from_json(
    recipients: Vec<serde_json::Map<String, serde_json::Value>>,
) -> (Vec<String>, Vec<RowResult>) {
    let mut columns: Vec<String> = Vec::new();
    let rows = recipients
        .into_iter()
        .enumerate()
        .map(|(index, fields)| {
            let mut phone = None;
            let mut values = HashMap::new();
            for (name, value) in fields {
                let text = match value {
                    serde_json::Value::String(text) => text,
                    serde_json::Value::Number(n) => n.to_string(),
                    serde_json::Value::Null => continue,
                    _ => {
                        return Err((index, RowError::FieldType(name)));
                    }
                };
                if name == "phone" {
                    phone = Some(text);
                } else if is_variable_name(&name) {
                    if !columns.contains(&name) {
                        columns.push(name.clone());
                    }
                    values.insert(name, text);
                }
            }
            let phone = phone.ok_or((index, RowError::NoPhone))?;
            Ok(RecipientRow {
                row: index,
                phone,
                values,
            })
        })
        .collect();
    (columns, rows)
}
