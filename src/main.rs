use std::process::ExitCode;

// Each click is allocated on an HTTP worker and freed on the click writer's thread; with
// glibc's allocator the writer spent a sixth of its CPU in malloc and free under load.
// mimalloc's `override` feature (Cargo.toml) makes it C's malloc too, for SQLite's pages.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// What mimalloc keeps resident beyond what is live. Under the redirect benchmark (SQLite,
/// 100,000 links; bench/README.md) the peak RSS was 272–282 MB with its defaults; at the same
/// CPU a request it is 172–181 MB with these two settings:
/// - no transparent huge pages: mimalloc asks for them on its arenas (`madvise`), and then a
///   few live bytes keep 2 MB resident (94 MB of the heap were huge pages; 209–238 MB peak
///   without them). `prctl(PR_SET_THP_DISABLE)` turns them off for this process whatever the
///   system's setting, before the heap grows;
/// - freed pages given back at once instead of after mimalloc 3's default second (a burst
///   frees and allocates clicks, counting turns and SQLite's pages at a high rate, and a
///   second of them stayed resident: 40 MB more at the peak).
///
/// mimalloc's own variables (`MIMALLOC_ALLOW_THP`, `MIMALLOC_PURGE_DELAY`) still decide when
/// set. A failure of either call leaves things as they were.
#[allow(unsafe_code)]
fn allocator_settings() {
    let unset = |name: &str| std::env::var_os(name).is_none();
    #[cfg(target_os = "linux")]
    if unset("MIMALLOC_ALLOW_THP") {
        // SAFETY: prctl(2) with PR_SET_THP_DISABLE takes integers only, no pointers; it sets
        // a flag of this process's address space that the kernel consults on page faults.
        unsafe {
            libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
        }
    }
    // `mi_option_purge_delay` in the `mi_option_t` enum of mimalloc.h, where it has been the
    // 16th since 2.1 (libmimalloc-sys, which names no constant for it, builds 3.3 here): set
    // only by a mimalloc whose version says so, so that an upgrade cannot set another option.
    const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;
    unsafe extern "C" {
        fn mi_version() -> std::ffi::c_int;
        fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
    }
    // SAFETY: no arguments; it returns a constant.
    let version = unsafe { mi_version() };
    if unset("MIMALLOC_PURGE_DELAY") && (201..400).contains(&(version / 100)) {
        // SAFETY: integers only; it writes the option's entry in mimalloc's table, here first
        // thing in `main`, before any other thread of ours exists. 15 is a valid option.
        unsafe {
            mi_option_set(MI_OPTION_PURGE_DELAY, 0);
        }
    }
}

fn main() -> ExitCode {
    allocator_settings();
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
