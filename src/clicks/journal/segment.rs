//! A journal segment: a file of fixed length mapped into memory, so that appending a click is
//! a copy into the kernel's page cache, without a system call. A `write` per click cost the
//! redirect more than a microsecond (measured with `bench/redirect.sh`); the copy costs a page
//! fault per few thousand bytes.
//!
//! One of the modules with `unsafe` code (Cargo.toml lists them and denies it everywhere
//! else). Its one invariant: the file stays at least as long as the mapping while the mapping
//! lives.
//! [`Segment`] carries it: it creates the file itself (`create_new`, under a name that holds
//! this process's random instance id, in the spool directory, which is the server's own),
//! sets its length once, and never truncates it; deleting the file (as the journal does once
//! its clicks are stored) keeps the mapped pages valid until the mapping is dropped.
#![allow(unsafe_code)]

use memmap2::{MmapMut, MmapOptions};
use std::fs::OpenOptions;
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

pub struct Segment {
    map: MmapMut,
    used: usize,
}

impl Segment {
    /// Creates the file at `path` (it must not exist) with `len` bytes, all zero.
    pub fn create(path: &Path, len: usize) -> io::Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(super::PRIVATE_FILE)
            .open(path)?;
        file.set_len(len as u64)?;
        // SAFETY: see the module comment: this process created the file just now, gave it its
        // length, and never shortens it, so every byte of the mapping stays backed by the file.
        let map = unsafe { MmapOptions::new().len(len).map_mut(&file)? };
        Ok(Self { map, used: 0 })
    }

    /// Appends `bytes`; `false` (and nothing written) when they do not fit.
    pub fn append(&mut self, bytes: &[u8]) -> bool {
        let end = self.used + bytes.len();
        if end > self.map.len() {
            return false;
        }
        self.map[self.used..end].copy_from_slice(bytes);
        self.used = end;
        true
    }
}

/// The lines of a segment as a crashed process left it: up to the first zero byte (the part
/// never written), the last line possibly cut short.
pub fn written(bytes: &[u8]) -> &[u8] {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    &bytes[..end]
}
