//! Clicks whose redirect was answered survive a crash of the process (`kill -9`, the OOM
//! killer): the handler appends each event to a journal file before it answers, and the next
//! start on the same port writes whatever a crashed process left there.
//!
//! The journal is memory-mapped files (`segment`): a click copied into one is in the kernel's
//! page cache, so it outlives the process without an `fsync` (a power cut is another matter).
//! Each HTTP worker thread appends to its own stripe, so the redirect pays one uncontended
//! lock, the line's encoding and a copy.
//!
//! Journals are numbered in generations. About once a second the writer closes the current
//! generation; once every event of a closed generation is stored in the database or in the
//! spool (or was dropped because the queue was full), its files are deleted. Each event carries
//! its key from here on, so an event that is both stored and replayed is stored once.

pub mod line;
mod segment;

use super::event::ClickEvent;
use crate::clickstore::row::EventKey;
use crate::metrics::stripe;
use segment::Segment;
use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// The journal and the spool hold visitors' addresses, agents, referrers and query strings:
/// their files are the service's alone.
pub const PRIVATE_FILE: u32 = 0o600;

const STRIPES: usize = crate::metrics::STRIPES;
/// Bytes per segment file: a fraction of a second of one worker's clicks at full speed (a click
/// is 300 to 2,500 bytes); unwritten parts take no disk space. Only each worker's current
/// segment is mapped, and what was written of it stays resident: at 8 MB the journal was 11–15
/// MB of the server's RSS at full speed, at 2 MB it is 3–4 MB, for a file made a few times a
/// second (bench/README.md).
const SEGMENT_BYTES: usize = 2 << 20;

/// The generation of events replayed from a crashed process's journals.
pub const RECOVERED: u32 = 0;

pub struct Journal {
    dir: PathBuf,
    /// Names this process's files, and (as the high bits of every event key) its events.
    prefix: String,
    instance: u64,
    generation: AtomicU32,
    stripes: [Slot; STRIPES],
    /// Events of each generation that were journaled but never reached the writer.
    dropped: Mutex<HashMap<u32, u64>>,
    /// Totals of the generations closed by a stripe moving on (the writer's close adds the
    /// rest).
    closed: Mutex<HashMap<u32, u64>>,
    failing: AtomicBool,
}

#[repr(align(128))]
struct Slot(Mutex<Stripe>);

#[derive(Default)]
struct Stripe {
    generation: u32,
    segment: Option<Segment>,
    /// Segments opened in this generation (each is a file).
    segments: u32,
    appended: u64,
    sequence: u64,
    line: Vec<u8>,
}

/// What a start found: the events of journals a crashed process left, and their files.
pub struct Leftover {
    pub events: Vec<ClickEvent>,
    pub files: Vec<PathBuf>,
}

impl Journal {
    /// The journal of the server on `port`, in `dir` (the spool directory). `instance` is
    /// random per process.
    pub fn new(dir: &Path, port: u16, instance: u64) -> Self {
        Self {
            dir: dir.to_path_buf(),
            prefix: format!("inklink-journal-{port}-{instance:016x}-"),
            instance,
            generation: AtomicU32::new(RECOVERED + 1),
            stripes: std::array::from_fn(|_| Slot(Mutex::default())),
            dropped: Mutex::default(),
            closed: Mutex::default(),
            failing: AtomicBool::new(false),
        }
    }

    /// Gives `event` its key and generation and appends it to this thread's journal.
    pub fn append(&self, event: &mut ClickEvent) {
        let index = stripe();
        let mut stripe = self.stripes[index].0.lock().expect("journal stripe");
        let generation = self.generation.load(Ordering::Acquire);
        if stripe.generation != generation {
            self.retire(&mut stripe);
            stripe.generation = generation;
        }
        stripe.sequence += 1;
        event.key = Some(EventKey::new(self.instance, index, stripe.sequence));
        event.generation = generation;
        let written = self.write(&mut stripe, index, event);
        match written {
            Ok(()) => {
                stripe.appended += 1;
                if self.failing.swap(false, Ordering::Relaxed) {
                    tracing::info!("the click journal is written again");
                }
            }
            Err(err) => {
                // The click is still queued; only a crash before it is stored would lose it.
                if !self.failing.swap(true, Ordering::Relaxed) {
                    tracing::error!(error = %err, dir = %self.dir.display(), "cannot write the click journal: clicks queued now are lost if the process crashes");
                }
            }
        }
    }

    fn write(&self, stripe: &mut Stripe, index: usize, event: &ClickEvent) -> io::Result<()> {
        stripe.line.clear();
        line::encode(event, &mut stripe.line);
        if let Some(segment) = &mut stripe.segment
            && segment.append(&stripe.line)
        {
            return Ok(());
        }
        // The first click of the generation, or the segment is full: the next one.
        stripe.segment = None;
        let path = self.path(stripe.generation, index, stripe.segments);
        stripe.segments += 1;
        let mut segment = Segment::create(&path, SEGMENT_BYTES.max(stripe.line.len()))?;
        segment.append(&stripe.line);
        stripe.segment = Some(segment);
        Ok(())
    }

    /// Hands a stripe's count for the generation it leaves to `closed`.
    fn retire(&self, stripe: &mut Stripe) {
        stripe.segment = None;
        stripe.segments = 0;
        if stripe.appended > 0 {
            *self
                .closed
                .lock()
                .expect("closed generations")
                .entry(stripe.generation)
                .or_default() += stripe.appended;
            stripe.appended = 0;
        }
    }

    /// An event journaled in `generation` was not queued (the queue was full).
    pub fn forget(&self, generation: u32) {
        *self
            .dropped
            .lock()
            .expect("dropped")
            .entry(generation)
            .or_default() += 1;
    }

    /// Closes the current generation and returns it with the number of its events, or `None`
    /// when nothing was journaled in it. No event is appended to it afterwards.
    pub fn close_generation(&self) -> Option<(u32, u64)> {
        let generation = self.generation.fetch_add(1, Ordering::AcqRel);
        for slot in &self.stripes {
            let mut stripe = slot.0.lock().expect("journal stripe");
            if stripe.generation == generation {
                self.retire(&mut stripe);
                stripe.generation = generation + 1;
            }
        }
        let total = self
            .closed
            .lock()
            .expect("closed generations")
            .remove(&generation)
            .unwrap_or(0);
        (total > 0).then_some((generation, total))
    }

    /// Events of `generation` that never reached the writer so far.
    pub fn dropped(&self, generation: u32) -> u64 {
        self.dropped
            .lock()
            .expect("dropped")
            .get(&generation)
            .copied()
            .unwrap_or(0)
    }

    /// Deletes the files of a generation whose every event is stored or spooled.
    pub fn remove_generation(&self, generation: u32) {
        self.dropped.lock().expect("dropped").remove(&generation);
        for path in files(&self.dir, &format!("{}{generation}-", self.prefix)) {
            remove(&path);
        }
    }

    /// At a clean shutdown, when every event is stored or spooled: nothing to replay.
    pub fn remove_all(&self) {
        for slot in &self.stripes {
            slot.0.lock().expect("journal stripe").segment = None;
        }
        for path in files(&self.dir, &self.prefix) {
            remove(&path);
        }
    }

    fn path(&self, generation: u32, stripe: usize, segment: u32) -> PathBuf {
        self.dir.join(format!(
            "{}{generation}-{stripe}-{segment}.journal",
            self.prefix
        ))
    }
}

/// The journals that an earlier process on `port` left in `dir` (it crashed, or its files
/// could not be removed), read whole. A line cut short by the crash is skipped.
pub fn leftover(dir: &Path, port: u16) -> io::Result<Leftover> {
    let files = files(dir, &format!("inklink-journal-{port}-"));
    let mut events = Vec::new();
    for path in &files {
        let bytes = std::fs::read(path)?;
        for line in segment::written(&bytes).split(|&b| b == b'\n') {
            if line.is_empty() {
                continue;
            }
            match line::decode(line) {
                Some(mut event) => {
                    event.generation = RECOVERED;
                    events.push(event);
                }
                None => {
                    tracing::warn!(path = %path.display(), "skipping an unreadable journal line")
                }
            }
        }
    }
    if !events.is_empty() {
        tracing::info!(
            events = events.len(),
            files = files.len(),
            "replaying the click journal of a process that did not stop cleanly"
        );
    }
    Ok(Leftover { events, files })
}

fn files(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| {
            path.file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| name.starts_with(prefix) && name.ends_with(".journal"))
        })
        .collect()
}

fn remove(path: &Path) {
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(err) if err.kind() == io::ErrorKind::NotFound => {}
        Err(err) => {
            tracing::warn!(error = %err, path = %path.display(), "cannot remove a click journal")
        }
    }
}
