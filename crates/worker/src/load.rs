//! Reading a corpus: the preview of its first file (`Inspect`), and the whole read and match
//! against the chosen public vocabulary (`Load`), which also opens the corpus's ledger. Also
//! used to read a tuning file with the same columns (`evaluate`).
//!
//! Privacy: only the matched corpus (term ids and labels) is kept, in [`super::State`]; the
//! text is read in one pass per file and not held.

use std::rc::Rc;

use web_sys::File;

use super::assets::bundled_vocab;
use super::control::{at, progress, Stop};
use super::store::Store;
use super::{files, Loaded, State, KEEP};
use dpkps_core::input::corpus::{Fields, Format};
use dpkps_core::input::matched::{MatchedCorpus, MatchingSink};
use dpkps_core::protocol::{limits, CorpusSummary, Event, FileInfo, Stage, VocabChoice};
use dpkps_core::input::public_vocab::{Matcher, PublicVocabulary};

/// Bytes of the first file shown in the preview.
const PREVIEW_BYTES: f64 = 64.0 * 1024.0;

pub(super) fn format_of(name: &str) -> Result<Format, Stop> {
    Format::from_path(name).ok_or_else(|| {
        Stop::Failed(
            Some(Stage::Read),
            format!("{name}: unknown kind of file; use .csv, .tsv, .jsonl or .txt (UTF-8 text)"),
        )
    })
}

pub fn inspect(infos: &[FileInfo], files: &[File]) -> Result<Event, Stop> {
    let (Some(info), Some(file)) = (infos.first(), files.first()) else {
        return Err(Stop::Failed(Some(Stage::Read), "no file was given".into()));
    };
    let format = format_of(&info.name)?;
    let (bytes, complete) = files::head(file, PREVIEW_BYTES).map_err(at(Stage::Read))?;
    let preview = dpkps_core::input::preview::preview(&bytes, &info.name, format, complete).map_err(at(Stage::Read))?;
    Ok(Event::Inspected(preview))
}

pub async fn load(
    state: &mut State,
    infos: &[FileInfo],
    files: &[File],
    fields: Fields,
    vocabulary: VocabChoice,
) -> Result<Event, Stop> {
    if infos.is_empty() || files.len() < infos.len() {
        return Err(Stop::Failed(Some(Stage::Read), "no file was given".into()));
    }
    state.loaded = None;
    // A corpus read again may carry other labels under the same texts (the fingerprint is of
    // the texts): its Ṽ is drawn anew.
    state.released_vocab = None;
    let vocab = match vocabulary {
        VocabChoice::Bundled { which } => bundled_vocab(state, which).await?,
        VocabChoice::Custom { name } => {
            let file = files.get(infos.len()).ok_or_else(|| Stop::Failed(Some(Stage::Read), "attach the term list".into()))?;
            let bytes = files::all(file, "a vocabulary", limits::VOCABULARY).map_err(at(Stage::Read))?;
            Rc::new(PublicVocabulary::parse(&name, &bytes).map_err(at(Stage::Read))?)
        }
    };
    let mut corpus = read_matched(infos, files, &fields, &vocab, Stage::Read)?;
    let (spent_before, earlier_runs) = match Store::open().await {
        Ok(store) => {
            // The ledger key and sketches, keyed with this browser's secret (`dpkps_core::ledger::local_key`).
            let local = super::local_key::local_keys(&store).await.map_err(at(Stage::Read))?;
            corpus.key_with(&local);
            // An older version's book is keyed whole with it, and a ledger under the oldest,
            // order-sensitive key moves to this one.
            let keys = corpus.keys.clone();
            let fp = corpus.fingerprint.clone();
            let ledger = store
                .update_ledger(move |b| {
                    b.key_with(&local).map_err(|e| e.to_string())?;
                    b.adopt_older(&keys);
                    Ok(b.ledger(&fp))
                })
                .await
                .map_err(at(Stage::Read))?;
            (ledger.total_epsilon(), ledger.runs.len())
        }
        Err(e) => return Err(Stop::Failed(Some(Stage::Read), e)),
    };
    let summary = CorpusSummary {
        documents: corpus.stats.documents,
        empty_skipped: corpus.stats.empty_skipped,
        docs_without_terms: corpus.docs_without_terms,
        classes: corpus.stats.classes.iter().map(|(k, v)| (k.clone(), *v)).collect(),
        unlabelled: corpus.stats.unlabelled,
        vocabulary: vocab.name.clone(),
        vocabulary_terms: vocab.len(),
        distinct_matched: corpus.distinct_terms(KEEP).len(),
        spent_before,
        earlier_runs,
        persons: corpus.persons.as_ref().map(|p| p.count),
    };
    let labelled = fields.label.is_some();
    state.loaded = Some(Loaded { corpus, vocab, labelled, fields });
    Ok(Event::Loaded(summary))
}

/// Reads and matches `files` (the first `infos.len()`), with progress under `stage`.
pub fn read_matched(infos: &[FileInfo], files: &[File], fields: &Fields, vocab: &PublicVocabulary, stage: Stage) -> Result<MatchedCorpus, Stop> {
    let matcher = Matcher::new(vocab).map_err(at(stage))?;
    let mut sink = MatchingSink::new(Some(&matcher), KEEP, fields.label.is_some());
    let total: f64 = files.iter().take(infos.len()).map(|f| f.size()).sum();
    let mut base = 0.0;
    for (info, file) in infos.iter().zip(files) {
        let format = format_of(&info.name)?;
        let mut report = |pos: f64| progress(stage, (base + pos) as u64, total as u64);
        let reader = files::BlobReader::new(file.clone(), &mut report).map_err(at(stage))?;
        sink.read(reader, &info.name, format, fields, None).map_err(at(stage))?;
        base += file.size();
    }
    let name = if infos.len() == 1 { infos[0].name.clone() } else { format!("{} files", infos.len()) };
    sink.finish(&name).map_err(at(stage))
}
