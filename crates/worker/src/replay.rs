//! The replay check in the worker (`ReplayCheck`): the generated documents the page sends
//! (with the job's other answers from its audit log, `crate::ui::state::replay`), against
//! the loaded corpus (`dpkps_core::replay`).
//!
//! The worker drops every text after matching (`load`), so it reads the corpus files again:
//! the page keeps the `File` objects the curator chose (in the tab's memory, never stored)
//! and attaches them to the request. Each document goes through the index and is dropped, as
//! in the first read: memory is the index of the generated documents plus one slice of a
//! file, plus the hashes kept per private document (about 40 to 85 bytes each: see
//! `dpkps_core::replay`). The files must be the corpus that was loaded: the same documents (the fingerprint,
//! `dpkps_core::input::corpus::corpus_key`), read with the same columns; otherwise the check is refused.
//!
//! Like the first read, this is one synchronous pass per file: Cancel cannot stop it midway
//! (the page does not offer Cancel for it; it takes about as long as reading the corpus did).
//!
//! Privacy: the result is NOT DP and goes to the curator's screen only (see `dpkps_core::replay`).

use web_sys::File;

use super::control::{at, progress, Stop};
use super::files::BlobReader;
use super::load::format_of;
use super::{Loaded, State};
use dpkps_core::input::corpus::{self, Ingest};
use dpkps_core::protocol::{Event, FileInfo, Stage};
use dpkps_core::replay::{ReplayCheck, ReplayIndex, ReplayParams, SyntheticDoc};

pub fn check(state: &State, infos: &[FileInfo], files: &[File], documents: Vec<SyntheticDoc>, params: ReplayParams) -> Result<Event, Stop> {
    let stage = Stage::Replay;
    let Some(Loaded { corpus: loaded, fields, .. }) = state.loaded.as_ref() else {
        return Err(Stop::Failed(Some(stage), "load the corpus first: the check compares the generated documents with it".into()));
    };
    if infos.is_empty() || files.len() < infos.len() {
        return Err(Stop::Failed(Some(stage), "the corpus files were not given: choose them again and load the corpus".into()));
    }
    let mut index = ReplayIndex::new(documents, params).map_err(at(stage))?;
    let total: f64 = files.iter().take(infos.len()).map(|f| f.size()).sum();
    let mut ingest = Ingest::new(fields.label.is_some());
    let mut base = 0.0;
    progress(stage, 0, total as u64);
    for (info, file) in infos.iter().zip(files) {
        let format = format_of(&info.name)?;
        let mut report = |pos: f64| progress(stage, (base + pos) as u64, total as u64);
        let reader = BlobReader::new(file.clone(), &mut report).map_err(at(stage))?;
        corpus::stream(reader, &info.name, format, fields, None, &mut ingest, &mut |doc| index.add_private(doc.text)).map_err(at(stage))?;
        base += file.size();
    }
    // The loaded corpus's key is keyed (`dpkps_core::ledger::local_key`); these files' is not yet.
    let loaded_unkeyed = if loaded.keys.unkeyed.is_empty() { &loaded.fingerprint } else { &loaded.keys.unkeyed };
    if &ingest.fingerprint() != loaded_unkeyed {
        return Err(Stop::Failed(
            Some(stage),
            "these files are not the corpus that was loaded (other documents): load the corpus again, then check".into(),
        ));
    }
    Ok(Event::ReplayChecked(ReplayCheck { params, docs: index.finish() }))
}
