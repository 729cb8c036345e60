//! Reading the curator's files inside the worker, a slice at a time.
//!
//! `FileReaderSync` exists only in workers: it reads a `Blob` slice synchronously, which lets
//! the core's streaming parsers (`std::io::Read`) run unchanged. Memory stays at one slice
//! plus what the parser keeps (term ids, not text), so a 200 MB file is fine.

use std::io::Read;

use web_sys::{File, FileReaderSync};

/// Bytes read per slice.
const SLICE: f64 = 4.0 * 1024.0 * 1024.0;

pub struct BlobReader<'p> {
    file: File,
    reader: FileReaderSync,
    pos: f64,
    buf: Vec<u8>,
    at: usize,
    /// Called with the bytes read so far after each slice.
    progress: &'p mut dyn FnMut(f64),
}

impl<'p> BlobReader<'p> {
    pub fn new(file: File, progress: &'p mut dyn FnMut(f64)) -> Result<Self, String> {
        let reader = FileReaderSync::new().map_err(|e| format!("cannot read files here: {e:?}"))?;
        Ok(BlobReader { file, reader, pos: 0.0, buf: Vec::new(), at: 0, progress })
    }
}

/// The first `max` bytes of a file (for the preview), and whether that is all of it.
pub fn head(file: &File, max: f64) -> Result<(Vec<u8>, bool), String> {
    let reader = FileReaderSync::new().map_err(|e| format!("cannot read files here: {e:?}"))?;
    let end = file.size().min(max);
    let blob = file.slice_with_f64_and_f64(0.0, end).map_err(|e| format!("{e:?}"))?;
    let buf = reader.read_as_array_buffer(&blob).map_err(|e| format!("{}: could not be read ({e:?})", file.name()))?;
    Ok((js_sys::Uint8Array::new(&buf).to_vec(), end >= file.size()))
}

/// The whole file (model, tokenizer, custom vocabulary, ledger), refused unread above `max`
/// bytes (`dpkps_core::protocol::limits`); `what` names it in the message.
pub fn all(file: &File, what: &str, max: u64) -> Result<Vec<u8>, String> {
    dpkps_core::protocol::limits::check(what, &file.name(), file.size() as u64, max)?;
    head(file, f64::INFINITY).map(|(b, _)| b)
}

impl Read for BlobReader<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.at == self.buf.len() {
            let size = self.file.size();
            if self.pos >= size {
                return Ok(0);
            }
            let end = (self.pos + SLICE).min(size);
            let blob = self
                .file
                .slice_with_f64_and_f64(self.pos, end)
                .map_err(|e| std::io::Error::other(format!("{e:?}")))?;
            let ab = self
                .reader
                .read_as_array_buffer(&blob)
                .map_err(|e| std::io::Error::other(format!("the browser could not read the file ({e:?})")))?;
            self.buf = js_sys::Uint8Array::new(&ab).to_vec();
            self.at = 0;
            self.pos = end;
            (self.progress)(self.pos);
        }
        let n = out.len().min(self.buf.len() - self.at);
        out[..n].copy_from_slice(&self.buf[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}
