//! What one load of a corpus may hold, and the reading guards that keep to it.
//!
//! Why these caps, and none on the total size: a corpus is streamed (the page reads 4 MiB
//! slices, the CLI a buffered file) and only what the mechanisms need stays, so its size on
//! disk does not matter; but the page's worker has a wasm32 heap of at most 4 GiB, and what a
//! load keeps grows with two things:
//! - one record read whole (a JSONL line, a CSV record, a `.txt` file): a 2 GiB line is held
//!   in full before it can be parsed, and its text again once decoded;
//! - the number of documents: each costs about 170 bytes that stay for the whole session (its
//!   32-byte hash for the ledger key, its label and its most used matched terms), so 2 GB of
//!   one-byte documents would need far more than the heap.
//!
//! Either way the worker would run out of memory and be restarted, the loaded corpus lost.
//! With the caps, reading stops at the record or the document that crosses them, with an error
//! that names the file and the line. The CLI reads through the same readers and keeps to the
//! same caps, so a corpus the page refuses is not one the command line accepts.
//!
//! The guards read no further than a record's cap (plus the CSV reader's own buffer), so a
//! huge record is refused before it is held.

use std::cell::Cell;
use std::io::Read;
use std::rc::Rc;

/// Bytes one record may take: a CSV/TSV row (every field), a JSONL line, a `.txt` file.
/// A long clinical note is tens of KiB; a book, a few MiB.
pub const RECORD_BYTES: u64 = 16 << 20;
/// Documents (non-empty records) one load may hold, all its files together: about 0.85 GB of
/// session memory at ~170 bytes each.
pub const DOCUMENTS: u64 = 5_000_000;

/// The caps of one load ([`super::Ingest`]); the defaults are [`RECORD_BYTES`] and
/// [`DOCUMENTS`] (smaller ones only in tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub record_bytes: u64,
    pub documents: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { record_bytes: RECORD_BYTES, documents: DOCUMENTS }
    }
}

/// `bytes` in words: "16 MiB", "1.5 KiB", "12 bytes".
pub fn human(bytes: u64) -> String {
    let (value, unit) = match bytes {
        b if b >= 1 << 30 => (b as f64 / (1u64 << 30) as f64, "GiB"),
        b if b >= 1 << 20 => (b as f64 / (1u64 << 20) as f64, "MiB"),
        b if b >= 1 << 10 => (b as f64 / 1024.0, "KiB"),
        b => return format!("{b} bytes"),
    };
    let text = format!("{value:.1}");
    format!("{} {unit}", text.trim_end_matches(".0"))
}

/// The encoding a byte-order mark at the start of `bytes` names, when it is one that is not
/// UTF-8 (Excel's "Unicode text" and Windows tools write UTF-16): said as such, rather than
/// "not valid UTF-8 at byte 1".
pub fn utf16_bom(bytes: &[u8]) -> Option<&'static str> {
    match bytes {
        [0xFF, 0xFE, 0, 0, ..] => Some("UTF-32 little-endian (it starts with the byte-order mark FF FE 00 00)"),
        [0xFF, 0xFE, ..] => Some("UTF-16 little-endian (it starts with the byte-order mark FF FE)"),
        [0xFE, 0xFF, ..] => Some("UTF-16 big-endian (it starts with the byte-order mark FE FF)"),
        [0, 0, 0xFE, 0xFF, ..] => Some("UTF-32 big-endian (it starts with the byte-order mark 00 00 FE FF)"),
        _ => None,
    }
}

/// Column names shown in a message: the first [`COLUMNS_SHOWN`], each cut to
/// [`COLUMN_CHARS`] characters, then how many more (a header can have thousands of cells,
/// or one cell of a megabyte).
pub fn column_list(names: &[String]) -> String {
    let mut shown: Vec<String> = names
        .iter()
        .take(COLUMNS_SHOWN)
        .map(|n| match n.char_indices().nth(COLUMN_CHARS) {
            Some((i, _)) => format!("{:?}…", &n[..i]),
            None => format!("{n:?}"),
        })
        .collect();
    if names.len() > COLUMNS_SHOWN {
        shown.push(format!("and {} more", names.len() - COLUMNS_SHOWN));
    }
    shown.join(", ")
}

pub const COLUMNS_SHOWN: usize = 20;
pub const COLUMN_CHARS: usize = 40;

/// The error a [`Bounded`] reader returns once a record has run past its cap; the CSV reader
/// hands it back inside its I/O error.
#[derive(Debug)]
pub(super) struct RecordCut;

impl std::fmt::Display for RecordCut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a record is over the size cap")
    }
}

impl std::error::Error for RecordCut {}

/// Whether `e` is a [`Bounded`] reader's refusal.
pub(super) fn is_cut(e: &std::io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<RecordCut>())
}

/// A reader for the CSV parser, which reads a record into its own buffer however long it is:
/// it refuses to deliver more than `cap` bytes past the start of the current record (set with
/// [`Bounded::mark`] after each one) plus `slack` (what the parser may have read ahead).
pub(super) struct Bounded<R> {
    inner: R,
    delivered: u64,
    start: Rc<Cell<u64>>,
    cap: u64,
}

/// Moves a [`Bounded`] reader's record start; held by the loop that reads the records.
#[derive(Clone)]
pub(super) struct Mark(Rc<Cell<u64>>);

impl Mark {
    /// The next record starts at byte `offset` of the input.
    pub(super) fn set(&self, offset: u64) {
        self.0.set(offset);
    }
}

impl<R: Read> Bounded<R> {
    /// `cap`: bytes a record may take; `slack`: the parser's read-ahead.
    pub(super) fn new(inner: R, cap: u64, slack: u64) -> (Bounded<R>, Mark) {
        let start = Rc::new(Cell::new(0));
        (Bounded { inner, delivered: 0, start: start.clone(), cap: cap.saturating_add(slack) }, Mark(start))
    }
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let allowed = self.start.get().saturating_add(self.cap).saturating_sub(self.delivered);
        if allowed == 0 && !buf.is_empty() {
            return Err(std::io::Error::other(RecordCut));
        }
        let want = buf.len().min(usize::try_from(allowed).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        self.delivered += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_in_words() {
        assert_eq!(human(RECORD_BYTES), "16 MiB");
        assert_eq!(human(1536), "1.5 KiB");
        assert_eq!(human(12), "12 bytes");
        assert_eq!(human(2 << 30), "2 GiB");
    }

    #[test]
    fn a_bounded_reader_stops_past_the_cap_from_the_mark() {
        let (mut r, mark) = Bounded::new(&[7u8; 100][..], 10, 0);
        let mut buf = [0u8; 64];
        assert_eq!(r.read(&mut buf).unwrap(), 10);
        let e = r.read(&mut buf).unwrap_err();
        assert!(is_cut(&e), "{e}");
        mark.set(10);
        assert_eq!(r.read(&mut buf).unwrap(), 10, "a new record, a new allowance");
        assert!(!is_cut(&std::io::Error::other("another error")));
    }
}
