//! Logging to standard error, filtered by INKLINK_LOG (`info`, `inklink=debug,warn`, …), as
//! text or JSON lines (INKLINK_LOG_FORMAT).

use crate::config::LogFormat;
use std::io::IsTerminal;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::prelude::*;

pub fn init(filter: &str, format: LogFormat) -> Result<(), String> {
    let targets: Targets = filter
        .parse()
        .map_err(|err| format!("INKLINK_LOG '{filter}' is not a valid filter: {err}"))?;
    // Colour codes are for people at a terminal; in a file or a journal they are noise.
    let colour = std::io::stderr().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty());
    let text = (format == LogFormat::Text).then(|| {
        tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(colour)
    });
    let json = (format == LogFormat::Json).then(|| {
        tracing_subscriber::fmt::layer()
            .json()
            .with_writer(std::io::stderr)
    });
    tracing_subscriber::registry()
        .with(text)
        .with(json)
        .with(targets)
        .try_init()
        .map_err(|err| err.to_string())
}
