//! The utility check (`Evaluate`, `EvaluateTuning`): `crate::eval` run in the worker, with the
//! run's embedding sources, and counted in the corpus's ledger when it reads the private corpus.

use web_sys::File;

use super::control::{at, checkpoint, iso_now, now_ms, progress, Stop};
use super::load::read_matched;
use super::store::Store;
use super::{sources, Loaded, State};
use crate::dp::SecureRng;
use crate::dp::summary::KeyphraseSampler;
use crate::protocol::{Event, FileInfo, RunSettings, Stage};

/// The utility check of `crate::eval` on the loaded corpus, or on a separate tuning file read
/// with the same columns and vocabulary: all the samplers, 3 seeds, 20% held out. On the loaded
/// corpus its figures are NOT differentially private (they are computed on the private
/// documents): nothing is released, but the check is counted in the corpus's ledger before its
/// figures are shown (tuning on private data; the privacy report states it). A check on a
/// tuning file reads nothing of the private corpus and is not counted.
pub async fn evaluate(state: &mut State, settings: &RunSettings, tuning: Option<(FileInfo, File)>) -> Result<Event, Stop> {
    use crate::eval::classifier::SoftmaxParams;
    use crate::eval::{EvalParams, Evaluation, Task};
    let State { loaded, model, helpers, vectors, live, .. } = state;
    let Some(Loaded { corpus: private, vocab, fields, .. }) = loaded.as_ref() else {
        return Err(Stop::Failed(None, "load a corpus first".into()));
    };
    let tuning_corpus = match &tuning {
        Some((info, file)) => Some(read_matched(std::slice::from_ref(info), std::slice::from_ref(file), fields, vocab, Stage::Evaluate)?),
        None => None,
    };
    let corpus = tuning_corpus.as_ref().unwrap_or(private);
    if corpus.stats.classes.len() < 2 {
        return Err(Stop::Failed(Some(Stage::Evaluate), "the utility check needs a label column with at least two classes".into()));
    }
    if let Some(p) = settings.check(Some(vocab.len())).first() {
        return Err(Stop::Failed(None, p.message.clone()));
    }
    let params = EvalParams {
        // Labels too rare to split (a one-document clinic) are left out rather than failing
        // the whole check; this figure is for the curator only and releases nothing.
        task: Task::MinClassDocs { min: crate::eval::split::MIN_CLASS_DOCS },
        holdout: 0.2,
        seeds: vec![0, 1, 2],
        vocab: settings.vocab_params(),
        eps_kde: settings.eps_kde,
        len: settings.len,
        features: Some(settings.features),
        kde_terms_per_doc: settings.len,
        per_class: settings.per_class,
        // Markov keeps (N+1)·N counts per class: left out where that exceeds the release cap.
        samplers: KeyphraseSampler::ALL
            .into_iter()
            .filter(|&sampler| {
                crate::dp::summary::SummaryParams { sampler, ..settings.kde_params() }
                    .check_release_size(settings.top_n, corpus.stats.classes.len())
                    .is_ok()
            })
            .collect(),
        no_dp_arms: false,
        bandwidth: settings.bandwidth,
        smoothing: settings.smoothing,
        class_counts_epsilon: None,
        candidates: Default::default(),
        classifier: SoftmaxParams::default(),
        include_noise_classes: false,
    };
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
    if tuning.is_none() {
        // Counted before the figures are shown; without a ledger they are not shown.
        let mut id = [0u8; 8];
        rng.fill(&mut id);
        // Arms not scored (every class noise-dominated) were compared too: their releases were
        // built from the documents, and "nothing to generate" is itself a figure.
        let mut arms: Vec<&str> = report.arms.iter().map(|a| a.arm.as_str()).chain(report.nothing_to_train.iter().map(|a| a.arm.as_str())).collect();
        arms.sort_unstable();
        arms.dedup();
        let check = crate::ledger::UtilityCheck { id: crate::corpus::hex(&id), when: iso_now(), settings_compared: arms.len() };
        let store = store.ok_or_else(|| Stop::Failed(Some(Stage::Evaluate), "browser storage is unavailable: the check cannot be recorded, so its figures are not shown".into()))?;
        let fp = private.fingerprint.clone();
        store
            .update_ledger(move |b| {
                b.record_check(&fp, check);
                Ok(())
            })
            .await
            .map_err(at(Stage::Evaluate))?;
    }
    Ok(Event::Evaluated(report))
}
