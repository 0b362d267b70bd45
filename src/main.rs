use std::process::ExitCode;

// Each click is allocated on an HTTP worker and freed on the click writer's thread; with
// glibc's allocator the writer spent a sixth of its CPU in malloc and free under load.
// mimalloc's `override` feature (Cargo.toml) makes it C's malloc too, for SQLite's pages.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = inklink::cli::parse().unwrap_or_else(|err| err.exit());
    let serving = matches!(cli.command, None | Some(inklink::cli::Command::Serve));
    let filter = cli
        .settings
        .log
        .clone()
        .unwrap_or_else(|| if serving { "info" } else { "warn" }.to_owned());
    if let Err(err) = inklink::telemetry::init(&filter, cli.settings.log_format) {
        eprintln!("error: {err}");
        return ExitCode::from(2);
    }
    match inklink::cli::run_blocking(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            // The whole chain: what failed, then why.
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
