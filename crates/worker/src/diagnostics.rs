//! The model's checks on this machine, on public terms only: that it embeds as the reference
//! does, on this worker and on every helper, and that the shipped bundled vectors match it
//! (`ModelCheck`); and how fast it embeds, alone and with the helpers (`Bench`).

use super::assets::{bundled_vocab, fetch_bytes};
use super::control::{at, now_ms, seconds_since, Stop};
use super::helpers::embed_share::embed_batches;
use super::helpers::pool::{self, Pool};
use super::helpers::wasm_memory_bytes;
use super::model::{ensure_model, ROWS_PER_MESSAGE};
use super::{helpers_for, ready_helpers, sources, State};
use dpkps_core::dp::SecureRng;
use dpkps_core::embed::Embed;
use dpkps_core::protocol::{BenchFigures, Event, Stage};
use dpkps_core::input::public_vocab::{Bundled, TermId};

/// Embeds the 20 reference terms shipped with the bundled model and compares with
/// sentence-transformers' vectors (`models/reference_embeddings.json`).
///
/// The terms go one per batch through the helper workers as well (started and waited for
/// here), so the check covers every worker that embeds in a run.
pub async fn model_check(state: &mut State) -> Result<Event, Stop> {
    let lists = [bundled_vocab(state, Bundled::Medical).await?, bundled_vocab(state, Bundled::English).await?];
    let State { model: slot, helpers, vectors, .. } = state;
    #[derive(serde::Deserialize)]
    struct Reference {
        terms: Vec<String>,
        emb: Vec<Vec<f32>>,
    }
    let bytes = fetch_bytes("models/reference_embeddings.json").await.map_err(at(Stage::Model))?;
    let r: Reference = serde_json::from_slice(&bytes).map_err(at(Stage::Model))?;
    let m = ensure_model(slot).await?;
    let batches: Vec<Vec<&str>> = r.terms.iter().map(|t| vec![t.as_str()]).collect();
    let pool = helpers_for(helpers, m, usize::MAX);
    let helper_count = ready_helpers(pool).await?;
    let mut got = vec![Vec::new(); batches.len()];
    let mut by_helpers = 0;
    let mut clock = now_ms();
    embed_batches(&mut m.embedder, helpers.as_mut(), &batches, 1, &mut clock, &mut |k, mut v, by_helper| {
        got[k] = v.pop().unwrap_or_default();
        by_helpers += usize::from(by_helper);
        Ok(())
    })
    .await
    .map_err(|e| match e {
        Stop::Failed(_, m) => Stop::Failed(Some(Stage::Model), m),
        other => other,
    })?;
    let mut worst = (f64::INFINITY, String::new());
    for ((term, want), have) in r.terms.iter().zip(&r.emb).zip(&got) {
        let dot: f64 = want.iter().zip(have).map(|(a, b)| f64::from(*a) * f64::from(*b)).sum();
        let na: f64 = want.iter().map(|a| f64::from(*a).powi(2)).sum::<f64>().sqrt();
        let nb: f64 = have.iter().map(|a| f64::from(*a).powi(2)).sum::<f64>().sqrt();
        let cos = if want.len() == have.len() { dot / (na * nb) } else { f64::NAN };
        if !(cos >= worst.0) {
            worst = (cos, term.clone());
        }
    }
    // The shipped bundled vectors against this model: random terms of each list.
    let mut rng = SecureRng::from_os().map_err(|e| Stop::Failed(Some(Stage::Model), e.to_string()))?;
    let (vectors_checked, vectors_worst_cosine, vectors_worst_term) =
        sources::check_bundled(m, helpers, vectors, &lists, 32, &mut rng).await.map_err(|e| match e {
            Stop::Failed(_, m) => Stop::Failed(Some(Stage::Model), m),
            other => other,
        })?;
    // The integer products' kernel, as this browser compiled it, against the plain product.
    let int_kernel_error = dpkps_embed::int_products::check_kernel().err();
    // And the attention kernel, against the plain attention.
    let attention_kernel_error = dpkps_embed::attention::check_kernel().err();
    Ok(Event::ModelChecked {
        terms: r.terms.len(),
        worst_cosine: worst.0,
        worst_term: worst.1,
        passed: worst.0 >= 0.999 && (vectors_checked == 0 || vectors_worst_cosine >= 0.995) && int_kernel_error.is_none() && attention_kernel_error.is_none(),
        helpers: helper_count,
        by_helpers,
        vectors_checked,
        vectors_worst_cosine,
        vectors_worst_term,
        term_width: m.embedder.term_width(),
        int_products: m.embedder.int_products(),
        int_kernel_error,
        attentions: m.embedder.attentions(),
        attention_kernel_error,
    })
}

/// Terms/s at batch 1 and 32 on the first `terms` medical-glossary terms, plus load time.
pub async fn bench(state: &mut State, terms: usize) -> Result<Event, Stop> {
    let vocab = bundled_vocab(state, Bundled::Medical).await?;
    let State { model, helpers, .. } = state;
    *model = None;
    *helpers = None;
    let t0 = now_ms();
    let m = ensure_model(model).await?;
    let model_load_seconds = seconds_since(t0);
    let mut texts: Vec<&str> = (0..terms.min(vocab.len())).map(|i| vocab.term(i as TermId)).collect();
    // Batched as the pipeline batches them: similar lengths together (less padding).
    dpkps_core::embed::sort_for_batching(&m.embedder, &mut texts, |t| *t);
    let mut rate = |batch: usize| -> Result<f64, Stop> {
        let t0 = now_ms();
        for chunk in texts.chunks(batch) {
            m.embedder.embed(chunk).map_err(at(Stage::Embed))?;
        }
        Ok(texts.len() as f64 / seconds_since(t0))
    };
    let b1 = rate(1)?;
    let b32 = rate(32)?;
    // The longest run of terms of equal token count (at most 32), embedded 8 times as one batch.
    let same: Vec<&str> = {
        let mut best: &[&str] = &[];
        let key = |t: &&str| m.embedder.batch_key(t);
        for group in texts.chunk_by(|a, b| key(a) == key(b)) {
            if group.len() > best.len() {
                best = group;
            }
        }
        best.iter().take(32).copied().collect()
    };
    let t0 = now_ms();
    for _ in 0..8 {
        m.embedder.embed(&same).map_err(at(Stage::Embed))?;
    }
    let same_shape = (8 * same.len()) as f64 / seconds_since(t0);
    let tokens = |t: &[&str]| t.iter().map(|t| m.embedder.batch_key(t)).sum::<usize>() as f64 / t.len().max(1) as f64;
    let (mean_tokens, same_shape_tokens) = (tokens(&texts), tokens(&same));
    // The app's own path: term batches (`dpkps_core::embed::rows`), `ROWS_PER_MESSAGE` a message,
    // shared between this worker and the helpers, once they
    // have started and loaded the model (that time is reported apart).
    let t0 = now_ms();
    let count = pool::helpers_for_this_machine();
    let mut pool = if count > 0 { Pool::start(count, &m.bytes.0, &m.bytes.1, m.embedder.checksum()).ok() } else { None };
    let helpers_ready = ready_helpers(pool.as_mut()).await?;
    let helpers_start_seconds = seconds_since(t0);
    let t0 = now_ms();
    let width = m.embedder.term_width();
    let cut = dpkps_core::embed::rows::term_batches(&m.embedder, width, &texts, |t| t);
    let batches: Vec<Vec<&str>> = dpkps_core::embed::rows::messages(cut, ROWS_PER_MESSAGE).iter().map(|msg| dpkps_core::embed::rows::message_texts(msg, |t| t)).collect();
    let mut clock = t0;
    embed_batches(&mut m.embedder, pool.as_mut(), &batches, width, &mut clock, &mut |_, _, _| Ok(())).await?;
    let with_helpers = texts.len() as f64 / seconds_since(t0);
    let singles: Vec<Vec<&str>> = texts.iter().map(|t| vec![*t]).collect();
    let t0 = now_ms();
    embed_batches(&mut m.embedder, pool.as_mut(), &singles, 1, &mut clock, &mut |_, _, _| Ok(())).await?;
    let b1_with_helpers = texts.len() as f64 / seconds_since(t0);
    *helpers = pool;
    Ok(Event::Benched(BenchFigures {
        helpers: helpers_ready,
        helpers_start_seconds,
        rows_with_helpers_terms_per_second: with_helpers,
        term_width: width,
        batch1_with_helpers_terms_per_second: b1_with_helpers,
        batch32_same_shape_terms_per_second: same_shape,
        mean_tokens,
        same_shape_tokens,
        model_load_seconds,
        terms: texts.len(),
        batch1_terms_per_second: b1,
        batch32_terms_per_second: b32,
        wasm_memory_bytes: wasm_memory_bytes(),
    }))
}
