//! Threads of lower scheduling priority for the work that may wait: storing clicks (the
//! writer's `storer`) and counting them into the statistics. On a machine the redirects keep
//! busy, the kernel then gives them the cores first and this work takes what is left; on a
//! quiet one it runs at full speed.
//! Resting after each counting turn instead slowed counting whether the cores were needed or
//! not, and a burst reached the dashboard late (bench/README.md has the figures).
//!
//! One of the three modules with `unsafe` code (Cargo.toml denies it everywhere else; the
//! others are `insert::sqlite` and the journal's `segment`): one
//! call of `setpriority(2)` on the calling thread, which has no memory safety conditions.
#![allow(unsafe_code)]

/// The nice value of background threads: the redirects' threads (0) weigh about ten times as
/// much with the kernel's scheduler.
const NICE: i32 = 10;

/// Runs the future `work` makes to its end on a thread named `name`, at [`NICE`], on a runtime
/// of its own (whose sockets and timers the work then uses). Threads it starts (SQLite's
/// connection workers, a blocking insert) inherit the priority.
pub fn spawn<W, F>(name: &str, work: W) -> std::io::Result<()>
where
    W: FnOnce() -> F + Send + 'static,
    F: std::future::Future<Output = ()>,
{
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            lower_this_thread();
            runtime.block_on(work());
        })?;
    Ok(())
}

/// Lowers the calling thread's priority to [`NICE`]. A failure leaves the priority as it was.
fn lower_this_thread() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: a plain system call without pointers. On Linux the nice value belongs to
        // each thread, and PRIO_PROCESS with 0 names the calling one.
        let done = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, NICE) };
        if done != 0 {
            tracing::debug!(
                error = %std::io::Error::last_os_error(),
                "cannot lower a background thread's priority"
            );
        }
    }
}
