use std::process::ExitCode;

// Each click is allocated on an HTTP worker and freed on the click writer's thread; with
// glibc's allocator the writer spent a sixth of its CPU in malloc and free under load.
// mimalloc's `override` feature (Cargo.toml) makes it C's malloc too, for SQLite's pages.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc asks the kernel for transparent huge pages on its arenas (`madvise`), and then one
/// live allocation keeps 2 MB resident where it would keep 4 KB: under the redirect benchmark
/// 94 MB of the heap were huge pages and the peak RSS was 272 MB; without them 218 MB, at the
/// same CPU per request (bench/README.md). This turns them off for the process before the
/// heap grows. A failure (a kernel without the call) leaves things as they were.
#[allow(unsafe_code)]
fn no_transparent_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl(2) with PR_SET_THP_DISABLE takes integers only, no pointers; it sets a flag
    // of this process's address space that the kernel consults on later page faults.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

fn main() -> ExitCode {
    no_transparent_huge_pages();
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
