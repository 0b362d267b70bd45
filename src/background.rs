//! Threads with runtimes of their own for the work beside the redirects. Storing clicks (the
//! writer's `storer`) and counting them into the statistics may wait: they run at a lower
//! scheduling priority, so that on a machine the redirects keep busy the kernel gives them the
//! cores first and this work takes what is left; on a quiet one it runs at full speed. What
//! goes out (webhook deliveries, domain probes) keeps the usual priority: at the lower one it
//! shared the leftover with storing and counting, and a burst's clicks reached webhook
//! receivers 46–49 s after its end instead of 33 s (bench/README.md).
//! Resting after each counting turn instead slowed counting whether the cores were needed or
//! not, and a burst reached the dashboard late (bench/README.md has the figures).
//!
//! One of the modules with `unsafe` code (Cargo.toml lists them and denies it everywhere
//! else): one call of `setpriority(2)` on the calling thread, which has no memory safety
//! conditions.
#![allow(unsafe_code)]

use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::oneshot;

/// The nice value of background threads: the redirects' threads (0) weigh about ten times as
/// much with the kernel's scheduler.
const NICE: i32 = 10;

/// How a thread is scheduled against the redirects' threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Priority {
    /// At [`NICE`]: work that may wait.
    Lower,
    /// As the redirects' threads.
    Usual,
}

/// Runs the future `work` makes to its end on a thread named `name`, at `priority`, on a runtime
/// of its own (whose sockets and timers the work then uses) with a local task set (so that the
/// work may use clients that are not `Send`, like `awc`'s). Threads it starts (SQLite's
/// connection workers, a blocking insert) inherit the priority.
pub fn spawn<W, F>(name: &str, priority: Priority, work: W) -> std::io::Result<()>
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
            if priority == Priority::Lower {
                lower_this_thread();
            }
            tokio::task::LocalSet::new().block_on(&runtime, work());
        })?;
    Ok(())
}

/// Work that runs for the server's life on a thread of its own (see [`spawn`]), ended when
/// asked or when this handle is dropped. It is ended inside its own runtime: a pooled
/// connection it holds is given back there. Dropped with the runtime that started it, as a
/// test's runtime drops its tasks, it would be given back where no runtime is, and sqlx aborts
/// the process then ("this functionality requires a Tokio context").
pub struct Stoppable {
    stop: Mutex<Option<oneshot::Sender<()>>>,
    done: Mutex<Option<oneshot::Receiver<()>>>,
}

/// Starts `work` as [`spawn`] does, to run until it ends or is stopped.
pub fn start<W, F>(name: &str, priority: Priority, work: W) -> std::io::Result<Stoppable>
where
    W: FnOnce() -> F + Send + 'static,
    F: std::future::Future<Output = ()>,
{
    let (stop, stopped) = oneshot::channel::<()>();
    let (finished, done) = oneshot::channel();
    spawn(name, priority, move || async move {
        tokio::select! {
            () = work() => {}
            _ = stopped => {}
        }
        let _ = finished.send(());
    })?;
    Ok(Stoppable {
        stop: Mutex::new(Some(stop)),
        done: Mutex::new(Some(done)),
    })
}

impl Stoppable {
    /// Ends the work where it is (as a crash would: what it had under way is rolled back or
    /// done again) and waits a moment for its thread to let go of its connections.
    pub async fn stop(&self) {
        self.ask_to_stop();
        let done = self.done.lock().expect("done").take();
        if let Some(done) = done {
            let _ = tokio::time::timeout(Duration::from_secs(5), done).await;
        }
    }

    fn ask_to_stop(&self) {
        if let Some(stop) = self.stop.lock().expect("stop").take() {
            let _ = stop.send(());
        }
    }
}

impl Drop for Stoppable {
    fn drop(&mut self) {
        self.ask_to_stop();
    }
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
