//! The non-DP utility check on a tuning file (`EvaluateTuning`): `dpkps_core::eval` run in the
//! worker, with the run's embedding sources. The check on the loaded corpus is the DP one
//! (`Request::DpCheck`, `super::run::dp_check`).

use web_sys::File;

use super::control::{at, checkpoint, now_ms, progress, Stop};
use super::load::read_matched;
use super::store::Store;
use super::{sources, Loaded, State};
use dpkps_core::dp::SecureRng;
use dpkps_core::protocol::{Event, FileInfo, RunSettings, Stage};

/// The utility check of `dpkps_core::eval` on a separate tuning file, read with the loaded corpus's
/// columns and vocabulary: all the samplers, 3 seeds, 20% held out. Its figures are NOT
/// differentially private. They are computed on the tuning file alone, but a file that shares
/// documents or persons with the loaded corpus, or with a corpus in the ledger, is tuning on
/// that corpus: the check is then recorded there (no ε), and the reports of its runs count it
/// ([`record_on_overlapping`]).
pub async fn evaluate(state: &mut State, settings: &RunSettings, tuning: (FileInfo, File)) -> Result<Event, Stop> {
    use dpkps_core::eval::{EvalParams, Evaluation, Task};
    let State { loaded, model, helpers, vectors, live, .. } = state;
    let Some(Loaded { vocab, fields, corpus: private, .. }) = loaded.as_ref() else {
        return Err(Stop::Failed(None, "load a corpus first".into()));
    };
    let (info, file) = &tuning;
    let mut tuning_corpus = read_matched(std::slice::from_ref(info), std::slice::from_ref(file), fields, vocab, Stage::Evaluate)?;
    // Without the ledger the check could not be recorded where the file overlaps: refused.
    let store = Store::open().await.map_err(at(Stage::Evaluate))?;
    let local = super::local_key::local_keys(&store).await.map_err(at(Stage::Evaluate))?;
    tuning_corpus.key_with(&local);
    let corpus = &tuning_corpus;
    if corpus.stats.classes.len() < 2 {
        return Err(Stop::Failed(Some(Stage::Evaluate), "the utility check needs a label column with at least two classes".into()));
    }
    if let Some(p) = settings.check().first() {
        return Err(Stop::Failed(None, p.message.clone()));
    }
    // Labels too rare to split are left out rather than failing the whole check; samplers
    // whose release would exceed the cap (Markov keeps (N+1)·N counts per class) are left out.
    let samplers = dpkps_core::eval::dp_check::CheckParams::every_sampler(settings, corpus.stats.classes.len(), settings.vocab_params().kept(vocab.len())).samplers;
    let params = EvalParams::of_run_settings(settings, Task::MinClassDocs { min: dpkps_core::eval::split::MIN_CLASS_DOCS }, 0.2, vec![0, 1, 2], samplers);
    let mut rng = SecureRng::from_os().map_err(|e| Stop::Failed(None, e.to_string()))?;
    let mut clock = now_ms();
    progress(Stage::Evaluate, 0, 1);
    let ev = Evaluation::prepare(corpus, vocab, params, &mut rng, &mut |_, _, _| {}).map_err(at(Stage::Evaluate))?;
    let sources = sources::Sources { model, helpers, vectors, live };
    let emb = sources::embeddings(sources, vocab, &ev.terms_to_embed(), Some(&store), &mut clock).await?.emb;
    checkpoint(&mut clock).await?;
    let mut report = ev
        .run(&emb, &mut rng, &mut |_, done, total| progress(Stage::Evaluate, done as u64, total as u64))
        .map_err(at(Stage::Evaluate))?;
    let compared = report.arms.iter().map(|a| a.arm.as_str()).collect::<std::collections::BTreeSet<_>>().len();
    let on = record_on_overlapping(&store, &corpus.keys, &private.keys, compared).await.map_err(at(Stage::Evaluate))?;
    if on > 0 {
        report.note = format!(
            "{} This tuning file shares documents or persons with {on} corpus(es) of this browser (the loaded one or one in the \
             ledger): the check is recorded there as a non-DP check, and their runs' reports count it. Tune on public data, \
             or on data that shares no patient with the corpus.",
            report.note
        );
    }
    Ok(Event::Evaluated(report))
}

/// Records the check (no ε) on every corpus the tuning file overlaps, the loaded one included
/// (`LedgerBook::record_tuning_check`). Returns how many.
async fn record_on_overlapping(
    store: &Store,
    tuning: &dpkps_core::input::corpus::CorpusKeys,
    loaded: &dpkps_core::input::corpus::CorpusKeys,
    settings_compared: usize,
) -> Result<usize, String> {
    let local = super::local_key::local_keys(store).await?;
    let mut id = [0u8; 8];
    getrandom::fill(&mut id).map_err(|e| e.to_string())?;
    let check = dpkps_core::ledger::UtilityCheck { id: dpkps_core::base::hex(&id), when: super::control::iso_now(), settings_compared };
    let (tuning, loaded) = (tuning.clone(), loaded.clone());
    store
        .update_ledger(move |b| {
            b.key_with(&local).map_err(|e| e.to_string())?;
            Ok(b.record_tuning_check(&tuning, Some(&loaded), &check).len())
        })
        .await
}
