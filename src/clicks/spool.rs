//! The overflow of the writer's backlog while the database is away or behind: an append-only
//! file of lines, read back from the front once the database can take them. Every line
//! carries its event key, so a file replayed twice (a crash between insert and truncate)
//! stores nothing twice.
//!
//! A line is one of two kinds:
//! - a click as it was taken, in the click journal's line format ([`line`]): the overflow.
//!   It is enriched when it is read back. The overflow happens when the cores are busiest
//!   (the writer fell behind a burst of redirects), so writing it must cost as little as
//!   possible: encoding a journal line skips enriching the click and writing its 24-field
//!   row as JSON, and decoding it is cheaper than parsing that JSON back (bench/README.md
//!   has what it saved under `bench/redirect.sh`);
//! - an enriched row as a JSON object (starts with `{`): what memory held at shutdown, and
//!   every line that versions before this one wrote.

use super::event::ClickEvent;
use super::journal::{PRIVATE_FILE, line};
use crate::clickstore::row::EventRow;
use std::fs::{File, OpenOptions, Permissions};
use std::io::{self, BufRead, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

pub struct Spool {
    path: PathBuf,
    /// Byte offset of the first row not yet stored.
    read_offset: u64,
    pending: u64,
    /// Clicks were appended since the file was last synced (see [`Self::sync`]).
    unsynced: bool,
}

impl Spool {
    /// Opens the spool at `path`; rows left in it by an earlier run count as pending.
    pub fn open(path: &Path) -> io::Result<Self> {
        let pending = match File::open(path) {
            Ok(file) => BufReader::new(file).lines().count() as u64,
            Err(err) if err.kind() == io::ErrorKind::NotFound => 0,
            Err(err) => return Err(err),
        };
        if pending > 0 {
            tracing::info!(path = %path.display(), events = pending, "click events left in the spool by an earlier run will be written");
        }
        Ok(Self {
            path: path.to_path_buf(),
            read_offset: 0,
            pending,
            unsynced: false,
        })
    }

    pub fn pending(&self) -> u64 {
        self.pending
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends clicks as they were taken (as journal lines), to be enriched when read back.
    /// They are in the kernel's page cache when this returns, as their journal is: they
    /// outlive the process, and reach the disk by [`Self::sync`], which the writer calls
    /// before it deletes their journal. (Syncing every append, 200 times a second while the
    /// overflow lasts, cost the writer's thread, at the redirects' priority, a file-system
    /// commit each time.)
    pub fn append_clicks(&mut self, clicks: &[ClickEvent]) -> io::Result<()> {
        append_lines(&self.path, Durability::Later, |out| {
            let mut text = Vec::with_capacity(512);
            for click in clicks {
                write_click(out, click, &mut text)?;
            }
            Ok(())
        })?;
        self.unsynced = true;
        self.pending += clicks.len() as u64;
        Ok(())
    }

    /// Puts the clicks appended since the last sync on disk.
    pub fn sync(&mut self) -> io::Result<()> {
        if !self.unsynced {
            return Ok(());
        }
        match File::open(&self.path) {
            Ok(file) => file.sync_data()?,
            // Stored and removed since: nothing to keep.
            Err(err) if err.kind() == io::ErrorKind::NotFound => {}
            Err(err) => return Err(err),
        }
        self.unsynced = false;
        Ok(())
    }

    /// Up to `max` spooled clicks from the front, and the offset just past them (for
    /// [`Self::consume`]).
    pub fn peek(&self, max: usize) -> io::Result<(Vec<Spooled>, u64)> {
        let mut file = File::open(&self.path)?;
        file.seek(SeekFrom::Start(self.read_offset))?;
        let mut reader = BufReader::with_capacity(1 << 16, file);
        let mut read = Vec::with_capacity(max.min(self.pending as usize));
        let mut offset = self.read_offset;
        let mut text = Vec::new();
        while read.len() < max {
            text.clear();
            let len = reader.read_until(b'\n', &mut text)?;
            if len == 0 {
                break;
            }
            offset += len as u64;
            let text = text.strip_suffix(b"\n").unwrap_or(&text);
            // A line cut short by a crash mid-write: nothing in it can be recovered.
            match Spooled::parse(text) {
                Some(spooled) => read.push(spooled),
                None => tracing::warn!(
                    line = %String::from_utf8_lossy(&text[..text.len().min(200)]),
                    "skipping an unreadable spool line"
                ),
            }
        }
        Ok((read, offset))
    }

    /// Marks the rows before `offset` as stored; an emptied spool is removed.
    pub fn consume(&mut self, offset: u64, rows: u64) -> io::Result<()> {
        self.read_offset = offset;
        self.pending = self.pending.saturating_sub(rows);
        let len = std::fs::metadata(&self.path)?.len();
        if offset >= len {
            std::fs::remove_file(&self.path)?;
            self.read_offset = 0;
            self.pending = 0;
        }
        Ok(())
    }

    /// Puts `held` before everything still pending (at shutdown, the in-memory backlog is
    /// older than the spool's contents), rewriting the file.
    pub fn prepend(&mut self, held: &[Spooled]) -> io::Result<()> {
        let tmp = self.path.with_extension("tmp");
        let mut out = BufWriter::new(
            OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(PRIVATE_FILE)
                .open(&tmp)?,
        );
        let mut text = Vec::new();
        for spooled in held {
            spooled.write(&mut out, &mut text)?;
        }
        if let Ok(mut old) = File::open(&self.path) {
            old.seek(SeekFrom::Start(self.read_offset))?;
            let mut rest = Vec::new();
            old.read_to_end(&mut rest)?;
            out.write_all(&rest)?;
            if rest.last().is_some_and(|last| *last != b'\n') {
                out.write_all(b"\n")?;
            }
        }
        out.into_inner()
            .map_err(|err| err.into_error())?
            .sync_data()?;
        std::fs::rename(&tmp, &self.path)?;
        self.read_offset = 0;
        self.pending += held.len() as u64;
        Ok(())
    }
}

/// One line of the spool.
#[derive(Debug, PartialEq)]
pub enum Spooled {
    /// Enriched, ready to store (boxed: the memory queue holds mostly clicks, which are less
    /// than half a row's size).
    Row(Box<EventRow>),
    /// As taken on the redirect path: to be enriched.
    Click(ClickEvent),
}

impl Spooled {
    fn parse(text: &[u8]) -> Option<Self> {
        match text.first()? {
            b'{' => serde_json::from_slice(text)
                .ok()
                .map(|row| Self::Row(Box::new(row))),
            _ => line::decode(text).map(Self::Click),
        }
    }

    /// Writes its line (`text` is room for a click's).
    fn write(&self, out: &mut impl Write, text: &mut Vec<u8>) -> io::Result<()> {
        match self {
            Self::Row(row) => {
                serde_json::to_writer(&mut *out, row)?;
                out.write_all(b"\n")
            }
            Self::Click(click) => write_click(out, click, text),
        }
    }
}

fn write_click(out: &mut impl Write, click: &ClickEvent, text: &mut Vec<u8>) -> io::Result<()> {
    text.clear();
    line::encode(click, text);
    out.write_all(text)
}

/// Appends `rows` to the file at `path` as JSON lines (also the format of the file of rows
/// the database refused), on disk before it returns.
pub fn append_rows(path: &Path, rows: &[EventRow]) -> io::Result<()> {
    append_lines(path, Durability::OnAppend, |out| {
        for row in rows {
            serde_json::to_writer(&mut *out, row)?;
            out.write_all(b"\n")?;
        }
        Ok(())
    })
}

/// Whether appended lines are on disk when the append returns, or once synced later.
enum Durability {
    OnAppend,
    Later,
}

/// A directory inklink makes for the spool and the journal is the service's alone, as their
/// files are ([`PRIVATE_FILE`]).
const PRIVATE_DIR: u32 = 0o700;

/// Makes `dir` (and its missing parents) readable by the service alone; an existing directory
/// keeps its mode (the default spool directory is the working directory).
fn private_dir(dir: &Path) -> io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(PRIVATE_DIR)
        .create(dir)
}

/// Appends what `write` writes (whole lines) to the file at `path`.
fn append_lines(
    path: &Path,
    durability: Durability,
    write: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>,
) -> io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        private_dir(dir)?;
    }
    let file = OpenOptions::new()
        .create(true)
        .read(true)
        .append(true)
        .mode(PRIVATE_FILE)
        .open(path)?;
    let metadata = file.metadata()?;
    // A file an older version made readable by others is closed to them now.
    if metadata.permissions().mode() & 0o077 != 0 {
        file.set_permissions(Permissions::from_mode(PRIVATE_FILE))?;
    }
    let torn = ends_mid_line(&file, metadata.len())?;
    let mut out = BufWriter::new(file);
    if torn {
        // A crash cut the last line short: end it, so that it does not swallow the first
        // row appended now (it is skipped as unreadable when read back).
        out.write_all(b"\n")?;
    }
    write(&mut out)?;
    let file = out.into_inner().map_err(|err| err.into_error())?;
    match durability {
        Durability::OnAppend => file.sync_data(),
        Durability::Later => Ok(()),
    }
}

/// Fails unless a spool file can be written in `dir` (made if missing).
pub fn check_dir(dir: &Path) -> io::Result<()> {
    private_dir(dir)?;
    let probe = dir.join(format!(".inklink-write-test-{}", std::process::id()));
    let written = File::create(&probe).and_then(|mut file| file.write_all(b"\n"));
    let _ = std::fs::remove_file(&probe);
    written
}

/// Whether the file's last byte is not a line end (a write cut short by a crash).
fn ends_mid_line(file: &File, len: u64) -> io::Result<bool> {
    use std::os::unix::fs::FileExt;
    if len == 0 {
        return Ok(false);
    }
    let mut last = [0u8];
    file.read_exact_at(&mut last, len - 1)?;
    Ok(last[0] != b'\n')
}
