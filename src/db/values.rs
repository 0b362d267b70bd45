//! Domain types stored as text columns, so that entities carry them typed: a value is read
//! back as the type it was written as, and a stored value that is not one is an error, not a
//! silent default.

use crate::rules::{Role, ShortCode};
use sea_orm::sea_query::{ArrayType, ColumnType, Nullable, StringLen, ValueType, ValueTypeErr};
use sea_orm::{ColIdx, DbErr, QueryResult, TryGetError, TryGetable, Value};

/// Implements the column traits for a type written as text with `to_text` and read back with
/// `from_text`.
macro_rules! text_column {
    ($type:ty, $to_text:expr, $from_text:expr) => {
        impl From<$type> for Value {
            fn from(value: $type) -> Value {
                let to_text: fn(&$type) -> String = $to_text;
                Value::from(to_text(&value))
            }
        }

        impl TryGetable for $type {
            fn try_get_by<I: ColIdx>(res: &QueryResult, index: I) -> Result<Self, TryGetError> {
                let from_text: fn(String) -> Result<$type, String> = $from_text;
                let text = String::try_get_by(res, index)?;
                from_text(text).map_err(|err| TryGetError::DbErr(DbErr::Type(err)))
            }
        }

        impl ValueType for $type {
            fn try_from(value: Value) -> Result<Self, ValueTypeErr> {
                let from_text: fn(String) -> Result<$type, String> = $from_text;
                let text = <String as ValueType>::try_from(value)?;
                from_text(text).map_err(|_| ValueTypeErr)
            }

            fn type_name() -> String {
                stringify!($type).to_owned()
            }

            fn array_type() -> ArrayType {
                ArrayType::String
            }

            fn column_type() -> ColumnType {
                ColumnType::String(StringLen::None)
            }
        }

        impl Nullable for $type {
            fn null() -> Value {
                <String as Nullable>::null()
            }
        }
    };
}

text_column!(Role, |role| role.as_str().to_owned(), |text| text
    .parse::<Role>()
    .map_err(|err| err.to_string()));
text_column!(ShortCode, |code| code.as_str().to_owned(), |text| Ok(
    ShortCode::stored(text)
));
