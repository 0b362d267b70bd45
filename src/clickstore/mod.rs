//! The click store: the only module that names the click tables. It defines what a stored
//! click is (`row`, `insert::COLUMNS`) and the dictionaries its texts are kept in, writes
//! batches with one writer per backend, keeps the list of clicks waiting to be counted
//! (`waiting`), reads clicks back (`stored`) for the export, recounts and the tests, purges them (`purge`),
//! keeps what each stored place is called in the UI's languages (`places`), and moves the
//! clicks of the old wide table on upgrade.
//!
//! Ingest (`crate::clicks`) writes through it; statistics (`crate::stats`) read and purge
//! through it; neither knows its tables.

pub mod dictionary;
pub mod insert;
pub mod outgoing;
pub mod places;
pub mod purge;
pub mod row;
pub mod stored;
pub mod traffic;
pub mod upgrade;
pub mod waiting;
