//! The overflow of the writer's backlog while the database is away: an append-only file of
//! JSON lines, read back from the front once the database returns. Rows carry their event
//! key, so a file replayed twice (a crash between insert and truncate) stores nothing twice.

use super::event::EventRow;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

pub struct Spool {
    path: PathBuf,
    /// Byte offset of the first row not yet stored.
    read_offset: u64,
    pending: u64,
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
        })
    }

    pub fn pending(&self) -> u64 {
        self.pending
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn append(&mut self, rows: &[EventRow]) -> io::Result<()> {
        append_rows(&self.path, rows)?;
        self.pending += rows.len() as u64;
        Ok(())
    }

    /// Up to `max` rows from the front, and the offset just past them (for [`Self::consume`]).
    pub fn peek(&self, max: usize) -> io::Result<(Vec<EventRow>, u64)> {
        let mut file = File::open(&self.path)?;
        file.seek(SeekFrom::Start(self.read_offset))?;
        let mut reader = BufReader::new(file);
        let mut rows = Vec::with_capacity(max.min(self.pending as usize));
        let mut offset = self.read_offset;
        let mut line = String::new();
        while rows.len() < max {
            line.clear();
            let read = reader.read_line(&mut line)?;
            if read == 0 {
                break;
            }
            offset += read as u64;
            match serde_json::from_str(line.trim_end()) {
                Ok(row) => rows.push(row),
                // A line cut short by a crash mid-write: nothing in it can be recovered.
                Err(err) => tracing::warn!(error = %err, "skipping an unreadable spool line"),
            }
        }
        Ok((rows, offset))
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

    /// Puts `rows` before everything still pending (at shutdown, the in-memory backlog is
    /// older than the spool's contents), rewriting the file.
    pub fn prepend(&mut self, rows: &[EventRow]) -> io::Result<()> {
        let tmp = self.path.with_extension("tmp");
        let mut out = BufWriter::new(File::create(&tmp)?);
        for row in rows {
            serde_json::to_writer(&mut out, row)?;
            out.write_all(b"\n")?;
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
        self.pending += rows.len() as u64;
        Ok(())
    }
}

/// Fails unless a spool file can be written in `dir` (made if missing).
/// Appends `rows` to the file at `path` as JSON lines (the spool's format), on disk before
/// it returns.
pub fn append_rows(path: &Path, rows: &[EventRow]) -> io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let file = OpenOptions::new()
        .create(true)
        .read(true)
        .append(true)
        .open(path)?;
    let torn = ends_mid_line(&file)?;
    let mut out = BufWriter::new(file);
    if torn {
        // A crash cut the last line short: end it, so that it does not swallow the first
        // row appended now (it is skipped as unreadable when read back).
        out.write_all(b"\n")?;
    }
    for row in rows {
        serde_json::to_writer(&mut out, row)?;
        out.write_all(b"\n")?;
    }
    out.into_inner()
        .map_err(|err| err.into_error())?
        .sync_data()
}

pub fn check_dir(dir: &Path) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let probe = dir.join(format!(".inklink-write-test-{}", std::process::id()));
    let written = File::create(&probe).and_then(|mut file| file.write_all(b"\n"));
    let _ = std::fs::remove_file(&probe);
    written
}

/// Whether the file's last byte is not a line end (a write cut short by a crash).
fn ends_mid_line(file: &File) -> io::Result<bool> {
    use std::os::unix::fs::FileExt;
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(false);
    }
    let mut last = [0u8];
    file.read_exact_at(&mut last, len - 1)?;
    Ok(last[0] != b'\n')
}
