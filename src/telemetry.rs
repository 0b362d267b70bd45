//! Logging to standard error, filtered by INKLINK_LOG (`info`, `inklink=debug,warn`, …).

use tracing_subscriber::filter::Targets;
use tracing_subscriber::prelude::*;

pub fn init(filter: &str) -> Result<(), String> {
    let targets: Targets = filter
        .parse()
        .map_err(|err| format!("INKLINK_LOG '{filter}' is not a valid filter: {err}"))?;
    tracing_subscriber::registry()
        .with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr))
        .with(targets)
        .try_init()
        .map_err(|err| err.to_string())
}
