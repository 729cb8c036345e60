//! Reading a private corpus: CSV/TSV, JSONL, or plain-text files, streamed.
//!
//! Readers never hold the whole input: records are parsed one at a time into reused buffers
//! and handed to a sink as [`DocRef`]s, so the caller decides what to keep (the pipeline keeps
//! only the matched term ids of each document, not its text). [`Corpus::read`] is the
//! convenience sink that collects documents, for small inputs and tests.
//!
//! Every error names the file and the line (and, for CSV, the record) where it happened.
//! Empty documents (nothing but whitespace) are counted in [`IngestStats`] and skipped.
//! A record over [`limits::RECORD_BYTES`], or a load of more than [`limits::DOCUMENTS`]
//! documents, is refused where it happens, before it is held ([`limits`] says why).
//!
//! The corpus fingerprint ([`corpus_key`]) is a SHA-256 over the SORTED per-document hashes
//! ([`doc_hash`], SHA-256 of each text): the same multiset of documents gives the same key
//! whatever the order of the rows and however they are split into files, so neither opens a
//! fresh privacy budget. Labels are left out on purpose: choosing another label column (or
//! none) for the same documents must not either. It keys the privacy ledger, so that
//! re-running on the same corpus adds to what was spent; the CLI and the app both take it from
//! here. It is a function of private data and is only ever stored locally, keyed with this
//! machine's local secret first (`crate::ledger::local_key`); it is never part of a released artefact. The per-document hashes stay in memory ([`CorpusKeys`]); the ledger's
//! overlap check stores only a small keyed sketch of them (`crate::ledger::overlap`).
//!
//! Ledgers written before this key existed are keyed by the older, order-sensitive hash
//! ([`CorpusKeys::legacy`], SHA-256 over the texts in order); it is still computed so that such
//! a ledger is found and moved under the new key instead of silently starting from zero.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::base::hex;

pub mod limits;

use limits::{column_list, human, utf16_bom, Bounded, Limits};

/// One document as handed to a sink; borrowed from the reader's buffers.
#[derive(Debug, Clone, Copy)]
pub struct DocRef<'a> {
    pub text: &'a str,
    pub label: Option<&'a str>,
    /// The person the document is about ([`Fields::person`]): private, never released.
    pub person: Option<&'a str>,
}

/// One owned document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Document {
    pub text: String,
    pub label: Option<String>,
}

/// The input formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Csv,
    Tsv,
    Jsonl,
    /// The whole input is one document.
    Txt,
}

impl Format {
    /// Guesses the format from a file name's extension.
    pub fn from_path(path: &str) -> Option<Format> {
        let lower = path.to_ascii_lowercase();
        let ext = lower.rsplit_once('.').map(|(_, e)| e)?;
        match ext {
            "csv" => Some(Format::Csv),
            "tsv" | "tab" => Some(Format::Tsv),
            "jsonl" | "ndjson" => Some(Format::Jsonl),
            "txt" | "text" => Some(Format::Txt),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Format::Csv => "CSV",
            Format::Tsv => "TSV",
            Format::Jsonl => "JSONL",
            Format::Txt => "text",
        }
    }
}

/// Which fields hold the text and the (optional) label.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Fields {
    /// Column (CSV/TSV) or field (JSONL) holding the document text. Required for those formats.
    pub text: Option<String>,
    /// Column or field holding the class label; `None` for an unlabelled corpus.
    pub label: Option<String>,
    /// Column or field holding the person (patient) a document is about: when set, the privacy
    /// unit is the person, not the document (`crate::input::matched::MatchedCorpus::units`), and
    /// every document needs one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub person: Option<String>,
}

/// Counts gathered while reading. These are exact counts of private data: they are shown to
/// the curator, never released as if they were differentially private.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IngestStats {
    /// Records read (rows, JSON lines, or files), empty ones included.
    pub records: u64,
    /// Documents handed on (non-empty).
    pub documents: u64,
    /// Records whose text was empty or whitespace only; counted and skipped.
    pub empty_skipped: u64,
    /// Documents without a label (empty label cell, JSON null), when a label field is set.
    pub unlabelled: u64,
    /// Documents per label.
    pub classes: BTreeMap<String, u64>,
    /// Bytes of document text handed on.
    pub text_bytes: u64,
}

/// Errors while reading a corpus, located and in plain words.
#[derive(Debug, thiserror::Error)]
pub enum CorpusError {
    #[error("{file}: the file is empty")]
    EmptyFile { file: String },
    #[error("{file}, line {line}: the text is not valid UTF-8 (byte {byte} of the line); save the file as UTF-8 and try again")]
    InvalidUtf8 { file: String, line: u64, byte: u64 },
    /// A byte-order mark of another encoding (`limits::utf16_bom`).
    #[error("{file}: the file is {encoding}, not UTF-8; save it as UTF-8 and try again")]
    NotUtf8Encoding { file: String, encoding: &'static str },
    #[error(
        "{file}, line {line}: this record (a row, or a JSON line) is over {}, the most one document may take here; \
         split it, or leave it out",
        human(*.max)
    )]
    RecordTooLarge { file: String, line: u64, max: u64 },
    #[error("{file}: the file is over {}, the most one document (a .txt file) may take here; split it, or leave it out", human(*.max))]
    TextFileTooLarge { file: String, max: u64 },
    #[error(
        "{file}, line {line}: more than {max} documents in this load, the most it may hold (each one stays in memory); \
         read a part of the corpus"
    )]
    TooManyDocuments { file: String, line: u64, max: u64 },
    #[error("{file}: there is no column named {column:?}; the columns are: {available}")]
    MissingColumn { file: String, column: String, available: String },
    #[error("{file}: {format} input needs the name of the {what} column")]
    FieldRequired { file: String, format: &'static str, what: &'static str },
    #[error("{file}, line {line} (record {record}): this row has {found} fields but the header has {expected}")]
    RaggedRow { file: String, line: u64, record: u64, expected: u64, found: u64 },
    #[error("{file}, line {line}: {message}")]
    Csv { file: String, line: u64, message: String },
    #[error("{file}, line {line}: not a valid JSON object ({message})")]
    BadJson { file: String, line: u64, message: String },
    #[error("{file}, line {line}: the field {field:?} is missing")]
    MissingField { file: String, line: u64, field: String },
    #[error("{file}, line {line}: the field {field:?} should be {expected}, but it is {found}")]
    WrongFieldType { file: String, line: u64, field: String, expected: &'static str, found: &'static str },
    #[error("{file}: could not read the file: {source}")]
    Io { file: String, source: std::io::Error },
    #[error("{file}: no documents: all {records} records have empty text")]
    NoDocuments { file: String, records: u64 },
    #[error(
        "{file}, line {line}: no person in {field:?}; with a person column every document needs one (a person's \
         documents are counted together, and a document without one could not be)"
    )]
    MissingPerson { file: String, line: u64, field: String },
    #[error("{file}: a person column needs CSV, TSV or JSONL input (a text file has no columns)")]
    PersonNeedsColumns { file: String },
    #[error("{file}: the files of one corpus must all have the person column, or none")]
    PersonColumnMismatch { file: String },
}

/// The keys of a corpus: the ledger key and what the overlap check needs. In memory only. The
/// ledger key is keyed with this machine's local secret before any ledger sees it
/// (`crate::ledger::local_key`, [`CorpusKeys::keyed`]). `Debug` prints neither the documents' hashes
/// nor the sketch key.
#[derive(Clone, Default)]
pub struct CorpusKeys {
    /// The order-insensitive ledger key ([`corpus_key`]).
    pub fingerprint: String,
    /// The older, order-sensitive key (SHA-256 over the texts in order), only to find a ledger
    /// recorded under it (`LedgerBook::adopt_legacy`).
    pub legacy: String,
    /// [`doc_hash`] of every document, in reading order. Never stored.
    pub doc_hashes: Vec<[u8; 32]>,
    /// The unkeyed ledger key, once `fingerprint` is keyed with the local secret
    /// (`crate::ledger::local_key`): only to find a ledger an older version recorded under it.
    pub unkeyed: String,
    /// The overlap sketches' key derived from the local secret (None: not keyed yet).
    pub sketch_key: Option<[u8; 32]>,
    /// [`person_hash`] of every distinct person, sorted (empty without a person column), for
    /// the persons' overlap sketch: new notes of the same patients link two extracts. Never
    /// stored.
    pub person_hashes: Vec<[u8; 32]>,
}

impl std::fmt::Debug for CorpusKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CorpusKeys").field("fingerprint", &self.fingerprint).field("documents", &self.doc_hashes.len()).finish_non_exhaustive()
    }
}

/// SHA-256 of one person's id (trimmed, as the person column is read; domain-separated from
/// [`doc_hash`], so that a person id and a document of the same text never collide).
pub fn person_hash(id: &str) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"dpkps person v1\0");
    h.update(id.as_bytes());
    h.finalize().into()
}

/// SHA-256 of one document's text (domain-separated).
pub fn doc_hash(text: &str) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"dpkps doc v1\0");
    h.update(text.as_bytes());
    h.finalize().into()
}

/// The ledger key of a corpus: SHA-256 over its documents' hashes in sorted order (duplicates
/// kept: a document twice is not the same corpus as once). Order-insensitive by construction.
pub fn corpus_key(doc_hashes: &[[u8; 32]]) -> String {
    let mut sorted = doc_hashes.to_vec();
    sorted.sort_unstable();
    let mut h = Sha256::new();
    h.update(b"dpkps corpus v2\0");
    h.update((sorted.len() as u64).to_le_bytes());
    for d in &sorted {
        h.update(d);
    }
    hex(&h.finalize())
}

/// Accumulates stats and the fingerprint while documents stream past.
#[derive(Clone)]
pub struct Ingest {
    pub stats: IngestStats,
    /// What this load may hold ([`limits`]).
    pub limits: Limits,
    /// The legacy, order-sensitive hash (see the module docs).
    hasher: Sha256,
    doc_hashes: Vec<[u8; 32]>,
    person_hashes: std::collections::BTreeSet<[u8; 32]>,
    label_field_set: bool,
}

impl Ingest {
    pub fn new(label_field_set: bool) -> Self {
        let mut hasher = Sha256::new();
        hasher.update(b"dpkps corpus v1\0");
        Ingest {
            stats: IngestStats::default(),
            limits: Limits::default(),
            hasher,
            doc_hashes: Vec::new(),
            person_hashes: Default::default(),
            label_field_set,
        }
    }

    /// The same with other caps (tests).
    pub fn with_limits(label_field_set: bool, limits: Limits) -> Self {
        Ingest { limits, ..Ingest::new(label_field_set) }
    }

    /// Records one record; returns the document if it is non-empty (to be handed on), or
    /// `Err(())` when the load already holds [`Limits::documents`] (the caller says where).
    fn accept<'a>(&mut self, text: &'a str, label: Option<&'a str>, person: Option<&'a str>) -> Result<Option<DocRef<'a>>, ()> {
        self.stats.records += 1;
        if text.trim().is_empty() {
            self.stats.empty_skipped += 1;
            return Ok(None);
        }
        if self.stats.documents >= self.limits.documents {
            return Err(());
        }
        let label = label.filter(|l| !l.trim().is_empty());
        self.stats.documents += 1;
        self.stats.text_bytes += text.len() as u64;
        match label {
            Some(l) => *self.stats.classes.entry(l.to_string()).or_insert(0) += 1,
            None if self.label_field_set => self.stats.unlabelled += 1,
            None => {}
        }
        self.hasher.update((text.len() as u64).to_le_bytes());
        self.hasher.update(text.as_bytes());
        self.doc_hashes.push(doc_hash(text));
        let person = person.map(str::trim).filter(|p| !p.is_empty());
        if let Some(p) = person {
            self.person_hashes.insert(person_hash(p));
        }
        Ok(Some(DocRef { text, label, person }))
    }

    /// The error for a document past [`Limits::documents`], at `line` of `file`.
    fn too_many(&self, file: &str, line: u64) -> CorpusError {
        CorpusError::TooManyDocuments { file: file.to_string(), line, max: self.limits.documents }
    }

    /// The ledger key of what was read so far ([`corpus_key`]), as lowercase hex.
    pub fn fingerprint(&self) -> String {
        corpus_key(&self.doc_hashes)
    }

    /// Ends ingestion: fails if nothing usable was read.
    pub fn finish(self, file: &str) -> Result<(IngestStats, String), CorpusError> {
        let (stats, keys) = self.finish_keyed(file)?;
        Ok((stats, keys.fingerprint))
    }

    /// [`Ingest::finish`] with every key (the legacy one and the per-document hashes).
    pub fn finish_keyed(self, file: &str) -> Result<(IngestStats, CorpusKeys), CorpusError> {
        if self.stats.documents == 0 {
            if self.stats.records == 0 {
                return Err(CorpusError::EmptyFile { file: file.to_string() });
            }
            return Err(CorpusError::NoDocuments { file: file.to_string(), records: self.stats.records });
        }
        let keys = CorpusKeys {
            fingerprint: corpus_key(&self.doc_hashes),
            legacy: hex(&self.hasher.clone().finalize()),
            doc_hashes: self.doc_hashes,
            unkeyed: String::new(),
            sketch_key: None,
            person_hashes: self.person_hashes.into_iter().collect(),
        };
        Ok((self.stats, keys))
    }
}

/// serde_json's message without its own "at line 1 column N" (each JSONL line is parsed
/// alone, so its line would always be 1): the column, said plainly.
pub(crate) fn json_problem(e: &serde_json::Error) -> String {
    let msg = e.to_string();
    let what = msg.split(" at line ").next().unwrap_or(&msg);
    format!("{what}, at character {}", e.column())
}

/// Streams the documents of one input to `sink`, updating `ingest`.
///
/// `file` is only used in error messages. For [`Format::Txt`] the whole input is one document
/// and `txt_label` is its label (e.g. the name of its folder).
pub fn stream<R: Read>(
    reader: R,
    file: &str,
    format: Format,
    fields: &Fields,
    txt_label: Option<&str>,
    ingest: &mut Ingest,
    sink: &mut dyn FnMut(DocRef<'_>),
) -> Result<(), CorpusError> {
    match format {
        Format::Csv => stream_csv(reader, file, b',', fields, ingest, sink),
        Format::Tsv => stream_csv(reader, file, b'\t', fields, ingest, sink),
        Format::Jsonl => stream_jsonl(reader, file, fields, ingest, sink),
        Format::Txt if fields.person.is_some() => Err(CorpusError::PersonNeedsColumns { file: file.to_string() }),
        Format::Txt => stream_txt(reader, file, txt_label, ingest, sink),
    }
}

/// `doc`, refused if the corpus has a person column and the document names no person.
fn with_person<'a>(doc: DocRef<'a>, fields: &Fields, file: &str, line: u64) -> Result<DocRef<'a>, CorpusError> {
    match (&fields.person, doc.person) {
        (Some(field), None) => Err(CorpusError::MissingPerson { file: file.to_string(), line, field: field.clone() }),
        _ => Ok(doc),
    }
}

fn io_err(file: &str, source: std::io::Error) -> CorpusError {
    CorpusError::Io { file: file.to_string(), source }
}

/// Line number (1-based) and byte within that line of a byte offset into `bytes`.
fn locate(bytes: &[u8], offset: usize) -> (u64, u64) {
    let before = &bytes[..offset.min(bytes.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() as u64 + 1;
    let col = before.iter().rev().take_while(|&&b| b != b'\n').count() as u64 + 1;
    (line, col)
}

fn strip_bom(bytes: &[u8]) -> &[u8] {
    bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes)
}

fn stream_csv<R: Read>(
    reader: R,
    file: &str,
    delimiter: u8,
    fields: &Fields,
    ingest: &mut Ingest,
    sink: &mut dyn FnMut(DocRef<'_>),
) -> Result<(), CorpusError> {
    let format = if delimiter == b'\t' { "TSV" } else { "CSV" };
    let text_col = fields
        .text
        .as_deref()
        .ok_or(CorpusError::FieldRequired { file: file.to_string(), format, what: "text" })?;
    // The parser holds a record whole, however long: the input reaches it through a reader
    // that stops a record at the cap (plus the parser's own read-ahead).
    let cap = ingest.limits.record_bytes;
    let (bounded, mark) = Bounded::new(reader, cap, CSV_BUFFER as u64);
    let mut rdr = csv::ReaderBuilder::new()
        .delimiter(delimiter)
        .has_headers(true)
        .flexible(false)
        .buffer_capacity(CSV_BUFFER)
        .from_reader(bounded);
    let too_large = |line: u64| CorpusError::RecordTooLarge { file: file.to_string(), line, max: cap };
    // Headers are read as bytes so that a non-UTF-8 header gets our located error.
    let headers = match rdr.byte_headers() {
        Ok(h) => h.clone(),
        Err(e) if cut(&e) => return Err(too_large(1)),
        Err(e) => return Err(csv_error(file, e)),
    };
    if let Some(encoding) = headers.get(0).and_then(utf16_bom) {
        return Err(CorpusError::NotUtf8Encoding { file: file.to_string(), encoding });
    }
    if headers.is_empty() || (headers.len() == 1 && headers[0].is_empty()) {
        return Err(CorpusError::EmptyFile { file: file.to_string() });
    }
    if headers.as_slice().len() as u64 > cap {
        return Err(too_large(1));
    }
    let mut names = Vec::with_capacity(headers.len());
    for (i, h) in headers.iter().enumerate() {
        let h = if i == 0 { strip_bom(h) } else { h };
        match std::str::from_utf8(h) {
            Ok(s) => names.push(s.trim().to_string()),
            Err(e) => {
                return Err(CorpusError::InvalidUtf8 { file: file.to_string(), line: 1, byte: e.valid_up_to() as u64 + 1 })
            }
        }
    }
    let find = |col: &str| -> Result<usize, CorpusError> {
        names.iter().position(|n| n == col.trim()).ok_or_else(|| CorpusError::MissingColumn {
            file: file.to_string(),
            column: col.to_string(),
            available: column_list(&names),
        })
    };
    let text_idx = find(text_col)?;
    let label_idx = fields.label.as_deref().map(find).transpose()?;
    let person_idx = fields.person.as_deref().map(find).transpose()?;

    let mut record = csv::ByteRecord::new();
    loop {
        // Where the next record starts: its line for a message, its byte for the cap.
        let next = rdr.position().clone();
        mark.set(next.byte());
        match rdr.read_byte_record(&mut record) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) if cut(&e) => return Err(too_large(next.line())),
            Err(e) => return Err(csv_error(file, e)),
        }
        let line = record.position().map_or(0, |p| p.line());
        if record.as_slice().len() as u64 > cap {
            return Err(too_large(line));
        }
        let cell = |idx: usize| -> Result<&str, CorpusError> {
            let raw = record.get(idx).unwrap_or_default();
            std::str::from_utf8(raw).map_err(|e| CorpusError::InvalidUtf8 {
                file: file.to_string(),
                line,
                byte: e.valid_up_to() as u64 + 1,
            })
        };
        let text = cell(text_idx)?;
        let label = label_idx.map(cell).transpose()?;
        let person = person_idx.map(cell).transpose()?;
        match ingest.accept(text, label, person) {
            Ok(Some(doc)) => sink(with_person(doc, fields, file, line)?),
            Ok(None) => {}
            Err(()) => return Err(ingest.too_many(file, line)),
        }
    }
    Ok(())
}

/// The CSV parser's buffer: what it may read past the end of a record.
const CSV_BUFFER: usize = 64 * 1024;

/// Whether a CSV error is the [`Bounded`] reader's refusal.
fn cut(e: &csv::Error) -> bool {
    matches!(e.kind(), csv::ErrorKind::Io(io) if limits::is_cut(io))
}

fn csv_error(file: &str, e: csv::Error) -> CorpusError {
    let line = e.position().map_or(0, |p| p.line());
    match e.into_kind() {
        csv::ErrorKind::Io(source) => io_err(file, source),
        csv::ErrorKind::UnequalLengths { pos, expected_len, len } => CorpusError::RaggedRow {
            file: file.to_string(),
            line: pos.as_ref().map_or(line, |p| p.line()),
            record: pos.as_ref().map_or(0, |p| p.record()),
            expected: expected_len,
            found: len,
        },
        csv::ErrorKind::Utf8 { pos, err } => CorpusError::InvalidUtf8 {
            file: file.to_string(),
            line: pos.as_ref().map_or(line, |p| p.line()),
            byte: err.valid_up_to() as u64 + 1,
        },
        other => CorpusError::Csv { file: file.to_string(), line, message: format!("{other:?}") },
    }
}

fn stream_jsonl<R: Read>(
    reader: R,
    file: &str,
    fields: &Fields,
    ingest: &mut Ingest,
    sink: &mut dyn FnMut(DocRef<'_>),
) -> Result<(), CorpusError> {
    let text_field = fields
        .text
        .as_deref()
        .ok_or(CorpusError::FieldRequired { file: file.to_string(), format: "JSONL", what: "text" })?;
    let mut reader = BufReader::with_capacity(1 << 16, reader);
    let mut buf = Vec::new();
    let mut line_no = 0u64;
    let mut saw_bytes = false;
    let cap = ingest.limits.record_bytes;
    loop {
        buf.clear();
        // At most the cap and the newline: a longer line is refused before it is held.
        let n = (&mut reader).take(cap + 1).read_until(b'\n', &mut buf).map_err(|e| io_err(file, e))?;
        if n == 0 {
            break;
        }
        saw_bytes = true;
        line_no += 1;
        if line_no == 1 {
            if let Some(encoding) = utf16_bom(&buf) {
                return Err(CorpusError::NotUtf8Encoding { file: file.to_string(), encoding });
            }
        }
        if n as u64 > cap && buf.last() != Some(&b'\n') {
            return Err(CorpusError::RecordTooLarge { file: file.to_string(), line: line_no, max: cap });
        }
        let bytes = if line_no == 1 { strip_bom(&buf) } else { &buf[..] };
        let line = std::str::from_utf8(bytes).map_err(|e| CorpusError::InvalidUtf8 {
            file: file.to_string(),
            line: line_no,
            byte: e.valid_up_to() as u64 + 1,
        })?;
        if line.trim().is_empty() {
            continue;
        }
        let value: serde_json::Value = serde_json::from_str(line)
            .map_err(|e| CorpusError::BadJson { file: file.to_string(), line: line_no, message: json_problem(&e) })?;
        let obj = value.as_object().ok_or_else(|| CorpusError::BadJson {
            file: file.to_string(),
            line: line_no,
            message: format!("the line is {}, not an object", json_kind(&value)),
        })?;
        let text = match obj.get(text_field) {
            None => {
                return Err(CorpusError::MissingField { file: file.to_string(), line: line_no, field: text_field.to_string() })
            }
            Some(serde_json::Value::String(s)) => s.as_str(),
            Some(serde_json::Value::Null) => "",
            Some(other) => {
                return Err(CorpusError::WrongFieldType {
                    file: file.to_string(),
                    line: line_no,
                    field: text_field.to_string(),
                    expected: "a string",
                    found: json_kind(other),
                })
            }
        };
        // Labels: any scalar, as written. Persons: a number by its whole value (12, 12.0 and
        // 1.2e1 are one person); a fraction is refused rather than guessed.
        let label = scalar_field(obj, fields.label.as_deref(), file, line_no, "a string, number or boolean", |v| match v {
            serde_json::Value::Number(_) | serde_json::Value::Bool(_) => Ok(v.to_string()),
            other => Err(json_kind(other)),
        })?;
        let person = scalar_field(obj, fields.person.as_deref(), file, line_no, "a string or a whole number", |v| match v {
            serde_json::Value::Number(n) => whole_number(n).ok_or("a fraction"),
            other => Err(json_kind(other)),
        })?;
        match ingest.accept(text, label.as_deref(), person.as_deref()) {
            Ok(Some(doc)) => sink(with_person(doc, fields, file, line_no)?),
            Ok(None) => {}
            Err(()) => return Err(ingest.too_many(file, line_no)),
        }
    }
    if !saw_bytes {
        return Err(CorpusError::EmptyFile { file: file.to_string() });
    }
    Ok(())
}

/// The optional `field` of a JSONL object: absent from the line → an error; null → None; a
/// string as it is; any other value through `other` (`Err`: what it is, refused as not
/// `expected`).
fn scalar_field<'v>(
    obj: &'v serde_json::Map<String, serde_json::Value>,
    field: Option<&str>,
    file: &str,
    line: u64,
    expected: &'static str,
    other: impl Fn(&serde_json::Value) -> Result<String, &'static str>,
) -> Result<Option<std::borrow::Cow<'v, str>>, CorpusError> {
    let Some(field) = field else { return Ok(None) };
    match obj.get(field) {
        None => Err(CorpusError::MissingField { file: file.to_string(), line, field: field.to_string() }),
        Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::String(s)) => Ok(Some(std::borrow::Cow::Borrowed(s.as_str()))),
        Some(v) => other(v).map(|s| Some(std::borrow::Cow::Owned(s))).map_err(|found| CorpusError::WrongFieldType {
            file: file.to_string(),
            line,
            field: field.to_string(),
            expected,
            found,
        }),
    }
}

/// A JSON number as a whole number's digits, if it is one.
fn whole_number(n: &serde_json::Number) -> Option<String> {
    match (n.as_i64(), n.as_u64(), n.as_f64()) {
        (Some(i), _, _) => Some(i.to_string()),
        (_, Some(u), _) => Some(u.to_string()),
        (_, _, Some(f)) if f.fract() == 0.0 && f.abs() < 9.0e15 => Some(format!("{}", f as i64)),
        _ => None,
    }
}

fn json_kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

fn stream_txt<R: Read>(
    reader: R,
    file: &str,
    label: Option<&str>,
    ingest: &mut Ingest,
    sink: &mut dyn FnMut(DocRef<'_>),
) -> Result<(), CorpusError> {
    let cap = ingest.limits.record_bytes;
    let mut bytes = Vec::new();
    reader.take(cap + 1).read_to_end(&mut bytes).map_err(|e| io_err(file, e))?;
    if bytes.len() as u64 > cap {
        return Err(CorpusError::TextFileTooLarge { file: file.to_string(), max: cap });
    }
    if let Some(encoding) = utf16_bom(&bytes) {
        return Err(CorpusError::NotUtf8Encoding { file: file.to_string(), encoding });
    }
    let body = strip_bom(&bytes);
    let text = std::str::from_utf8(body).map_err(|e| {
        let (line, byte) = locate(body, e.valid_up_to());
        CorpusError::InvalidUtf8 { file: file.to_string(), line, byte }
    })?;
    match ingest.accept(text, label, None) {
        Ok(Some(doc)) => sink(doc),
        Ok(None) => {}
        Err(()) => return Err(ingest.too_many(file, 1)),
    }
    Ok(())
}

/// A corpus held in memory: for small inputs, previews and tests.
#[derive(Debug, Clone)]
pub struct Corpus {
    pub documents: Vec<Document>,
    pub stats: IngestStats,
    pub fingerprint: String,
}

impl Corpus {
    /// Reads one input completely into memory.
    pub fn read<R: Read>(reader: R, file: &str, format: Format, fields: &Fields) -> Result<Corpus, CorpusError> {
        let mut ingest = Ingest::new(fields.label.is_some());
        let mut documents = Vec::new();
        stream(reader, file, format, fields, None, &mut ingest, &mut |d| {
            documents.push(Document { text: d.text.to_string(), label: d.label.map(str::to_string) })
        })?;
        let (stats, fingerprint) = ingest.finish(file)?;
        Ok(Corpus { documents, stats, fingerprint })
    }
}

#[cfg(test)]
mod tests;
