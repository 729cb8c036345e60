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
/// differentially private, but they are computed on the tuning file: nothing of the private
/// corpus is read, nothing is counted against it.
pub async fn evaluate(state: &mut State, settings: &RunSettings, tuning: (FileInfo, File)) -> Result<Event, Stop> {
    use dpkps_core::eval::{EvalParams, Evaluation, Task};
    let State { loaded, model, helpers, vectors, live, .. } = state;
    let Some(Loaded { vocab, fields, .. }) = loaded.as_ref() else {
        return Err(Stop::Failed(None, "load a corpus first".into()));
    };
    let (info, file) = &tuning;
    let tuning_corpus = read_matched(std::slice::from_ref(info), std::slice::from_ref(file), fields, vocab, Stage::Evaluate)?;
    let corpus = &tuning_corpus;
    if corpus.stats.classes.len() < 2 {
        return Err(Stop::Failed(Some(Stage::Evaluate), "the utility check needs a label column with at least two classes".into()));
    }
    if let Some(p) = settings.check(Some(vocab.len())).first() {
        return Err(Stop::Failed(None, p.message.clone()));
    }
    // Labels too rare to split are left out rather than failing the whole check; samplers
    // whose release would exceed the cap (Markov keeps (N+1)·N counts per class) are left out.
    let samplers = dpkps_core::eval::dp_check::CheckParams::every_sampler(settings, corpus.stats.classes.len()).samplers;
    let params = EvalParams::of_run_settings(settings, Task::MinClassDocs { min: dpkps_core::eval::split::MIN_CLASS_DOCS }, 0.2, vec![0, 1, 2], samplers);
    let mut rng = SecureRng::from_os().map_err(|e| Stop::Failed(None, e.to_string()))?;
    let mut clock = now_ms();
    progress(Stage::Evaluate, 0, 1);
    let ev = Evaluation::prepare(corpus, vocab, params, &mut rng, &mut |_, _, _| {}).map_err(at(Stage::Evaluate))?;
    let store = Store::open().await.ok();
    let sources = sources::Sources { model, helpers, vectors, live };
    let emb = sources::embeddings(sources, vocab, &ev.terms_to_embed(), store.as_ref(), &mut clock).await?.emb;
    checkpoint(&mut clock).await?;
    let report = ev
        .run(&emb, &mut rng, &mut |_, done, total| progress(Stage::Evaluate, done as u64, total as u64))
        .map_err(at(Stage::Evaluate))?;
    Ok(Event::Evaluated(report))
}
