//! Where a run's term vectors come from, cheapest first:
//!
//! 1. the **bundled vectors** of a bundled vocabulary (`vectors/<list>.vec`, made at build time
//!    by `scripts/vectors.sh`; see `embed::bundle`): public data, downloaded once per page and
//!    kept by the browser's HTTP cache like the model;
//! 2. **this page session's memory**: vectors the model computed in an earlier run of this page
//!    (a user's own list, or English terms beyond the bundled head), for the same model and
//!    vocabulary. In memory only, never stored: *which* terms a corpus matched is private;
//! 3. **this browser's cache** (IndexedDB, [`super::store`]): vectors of terms a DP release made
//!    public;
//! 4. **the model**, loaded only if something is left (with the helper workers).
//!
//! The model need not be loaded at all when the bundled vectors cover every term: the run's
//! report then names the bundled model by the checksum in `models/SHA256SUMS`, which must be
//! the one the vectors were made with.

use std::collections::HashMap;
use std::rc::Rc;

use dpkps_core::embed::bundle::VectorFile;
use dpkps_embed::onnx::BUNDLED_MODEL;
use dpkps_core::embed::{Embed, TermEmbeddings};
use dpkps_core::protocol::{Event, Stage};
use dpkps_core::input::public_vocab::{Bundled, PublicVocabulary, TermId};

use super::assets::fetch_bytes;
use super::control::{at, now_ms, post, progress, seconds_since, Stop};
use super::helpers::embed_share::embed_batches;
use super::helpers::pool::Pool;
use super::helpers_for;
use super::model::{ensure_model, Model, BUNDLED_MODEL_NAME, ROWS_PER_MESSAGE};
use super::store::Store;

/// Vectors the model computed in this page session, for one model and one vocabulary (another
/// model or list replaces them). Memory only.
pub struct LiveCache {
    model: String,
    /// How the model's term batches were laid out (`OnnxEmbedder::rows_key`): vectors computed
    /// another way are not mixed with these.
    rows: String,
    vocab: String,
    emb: TermEmbeddings,
}

/// Most vectors kept in [`LiveCache`] (~1.5 KB each, so at most ~150 MB): a bound on the
/// worker's memory. It covers an own list of 100,000 terms whole (`super::background` embeds
/// the list in its order up to this bound); of a longer list (the page takes up to 64 MiB,
/// millions of terms, which would need gigabytes of f32 vectors), the terms beyond it are
/// embedded in each run that needs them.
pub const LIVE_CACHE_MAX: usize = 100_000;

/// The output dimension of the bundled model (all-MiniLM-L6-v2), recorded in a release that
/// embedded nothing (a histogram sampler without smoothing), so that such a run fetches
/// neither the model nor the bundled vectors.
const BUNDLED_MODEL_DIM: usize = 384;

impl LiveCache {
    /// The memory for `model` and `vocab`; one for another model or list is dropped.
    pub fn slot<'a>(live: &'a mut Option<LiveCache>, model: &str, rows: &str, vocab: &str, dim: usize) -> &'a mut LiveCache {
        if !live.as_ref().is_some_and(|l| l.model == model && l.rows == rows && l.vocab == vocab && l.emb.dim() == dim) {
            *live = None;
        }
        live.get_or_insert_with(|| LiveCache { model: model.to_string(), rows: rows.to_string(), vocab: vocab.to_string(), emb: TermEmbeddings::new(dim) })
    }

    pub fn contains(&self, id: TermId) -> bool {
        self.emb.contains(id)
    }

    pub fn len(&self) -> usize {
        self.emb.len()
    }

    pub fn is_full(&self) -> bool {
        self.emb.len() >= LIVE_CACHE_MAX
    }

    /// Keeps `v` as the vector of `id` unless the memory is full (then false).
    pub fn keep(&mut self, id: TermId, v: &[f32]) -> Result<bool, dpkps_core::embed::EmbedError> {
        if self.is_full() && !self.emb.contains(id) {
            return Ok(false);
        }
        self.emb.insert(id, v)?;
        Ok(true)
    }
}

/// What the embedding step needs from the worker's state.
pub struct Sources<'a> {
    pub model: &'a mut Option<Model>,
    pub helpers: &'a mut Option<Pool>,
    /// Bundled vectors per bundled list, fetched once (None: not available, embed live).
    pub vectors: &'a mut HashMap<Bundled, Option<Rc<VectorFile>>>,
    pub live: &'a mut Option<LiveCache>,
}

/// A run's vectors and where they came from.
pub struct Embedded {
    pub emb: TermEmbeddings,
    pub bundled: usize,
    pub from_memory: usize,
    pub from_cache: usize,
    /// Terms the model embedded in this run.
    pub fresh: Vec<TermId>,
    /// The model the vectors belong to (name, SHA-256).
    pub model_name: String,
    pub model_checksum: String,
    /// Rows of the term batches the fresh vectors were embedded in (`dpkps_core::embed::rows`), and
    /// the model's `rows_key`.
    pub term_width: usize,
    pub rows_key: String,
}

impl Embedded {
    pub fn note(&self) -> String {
        let per_call = match (self.fresh.len(), self.term_width) {
            (0, _) => String::new(),
            (_, 1) => " (one a model call)".to_string(),
            (_, w) => format!(" (in batches of {w})"),
        };
        format!(
            "{} terms embedded here{per_call}; {} from the bundled vectors, {} from this session's memory, {} from this browser's cache",
            self.fresh.len(),
            self.bundled,
            self.from_memory,
            self.from_cache
        )
    }
}

thread_local! {
    /// The bundled model's SHA-256 once read: the page's files do not change under a running
    /// worker, so every later run reads it from here instead of fetching the list again.
    static BUNDLED_MODEL_SHA: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// The SHA-256 of the bundled model as listed in `models/SHA256SUMS` (None if unreadable; a
/// failed read is not remembered, so the next run tries again).
async fn bundled_model_sha() -> Option<String> {
    if let Some(sha) = BUNDLED_MODEL_SHA.with(|c| c.borrow().clone()) {
        return Some(sha);
    }
    let sums = fetch_bytes("models/SHA256SUMS").await.ok()?;
    let sums = String::from_utf8(sums).ok()?;
    let sha = sums.lines().find_map(|l| {
        let (sha, file) = l.split_once(char::is_whitespace)?;
        (file.trim().trim_start_matches('*') == BUNDLED_MODEL).then(|| sha.to_ascii_lowercase())
    })?;
    BUNDLED_MODEL_SHA.with(|c| *c.borrow_mut() = Some(sha.clone()));
    Some(sha)
}

/// The bundled vectors of `vocab` if it is a bundled list and they were made for exactly this
/// list (same checksum, hence same ids) and the model `model_sha`.
async fn bundled_vectors(
    vectors: &mut HashMap<Bundled, Option<Rc<VectorFile>>>,
    vocab: &PublicVocabulary,
    model_sha: &str,
) -> Option<Rc<VectorFile>> {
    let which = Bundled::parse_name(&vocab.name)?;
    if !vectors.contains_key(&which) {
        let name = which.file_name().trim_end_matches(".txt");
        // Missing or unreadable (an older build, the single-file page): embedded live instead.
        let file = match fetch_bytes(&format!("vectors/{name}.vec")).await {
            Ok(bytes) => VectorFile::parse(bytes).ok().map(Rc::new),
            Err(_) => None,
        };
        vectors.insert(which, file);
    }
    vectors.get(&which)?.clone().filter(|f| f.fits(model_sha, vocab))
}

/// The vectors of `ids` (see the module docs for the order of the sources). Posts the model
/// stage (loaded, already loaded, or not needed) and the embedding progress.
pub async fn embeddings(
    src: Sources<'_>,
    vocab: &PublicVocabulary,
    ids: &[TermId],
    store: Option<&Store>,
    clock: &mut f64,
) -> Result<Embedded, Stop> {
    let t_model = now_ms();
    let (mut name, mut checksum) = match src.model.as_ref() {
        Some(m) => (m.name.clone(), m.embedder.checksum().to_string()),
        None => (BUNDLED_MODEL_NAME.to_string(), bundled_model_sha().await.unwrap_or_default()),
    };
    if ids.is_empty() && !checksum.is_empty() {
        // Nothing to embed (a histogram sampler without smoothing): neither the bundled
        // vectors (19 MB for English) nor the model are fetched.
        let dim = src.model.as_ref().map_or(BUNDLED_MODEL_DIM, |m| m.embedder.dim());
        post(&Event::StageDone { stage: Stage::Model, seconds: seconds_since(t_model), note: "not needed: nothing to embed".into() });
        progress(Stage::Embed, 0, 0);
        return Ok(Embedded::without_model(TermEmbeddings::new(dim), 0, 0, name, checksum));
    }
    let (mut emb, bundled, from_memory) = at_hand(src.vectors, src.live.as_ref(), vocab, ids, &checksum).await?;
    let mut todo: Vec<TermId> = ids.iter().copied().filter(|&id| !emb.contains(id)).collect();
    if todo.is_empty() && emb.dim() > 0 {
        post(&Event::StageDone {
            stage: Stage::Model,
            seconds: seconds_since(t_model),
            note: "not needed: every vector was at hand".into(),
        });
        progress(Stage::Embed, 0, 0);
        return Ok(Embedded::without_model(emb, bundled, from_memory, name, checksum));
    }
    // The model is needed (or there is nothing to embed and no other source of the dimension).
    let m = load_model(src.model, src.live, todo.len(), from_memory > 0, t_model).await?;
    if m.embedder.checksum() != checksum {
        // models/SHA256SUMS does not name this model: only what it computes may be used.
        (name, checksum) = (m.name.clone(), m.embedder.checksum().to_string());
        if bundled > 0 || from_memory > 0 {
            return Err(Stop::Failed(Some(Stage::Model), format!("the loaded model is not the one of models/SHA256SUMS ({BUNDLED_MODEL}); reload the page")));
        }
    }
    if emb.dim() == 0 {
        emb = TermEmbeddings::new(m.embedder.dim());
    }
    let from_cache = match store {
        Some(s) => from_browser_cache(s, m, &checksum, vocab, &todo, &mut emb).await?,
        None => 0,
    };
    todo.retain(|&id| !emb.contains(id));
    let width = embed_terms(m, src.helpers, vocab, &todo, &mut emb, clock).await?;
    // Kept for the next run of this page (memory only), within a bound.
    let live = LiveCache::slot(src.live, &checksum, m.embedder.rows_key(), &vocab.checksum, emb.dim());
    for &id in &todo {
        if let Some(v) = emb.get(id) {
            if !live.keep(id, v).map_err(at(Stage::Embed))? {
                break;
            }
        }
    }
    Ok(Embedded { emb, bundled, from_memory, from_cache, fresh: todo, model_name: name, model_checksum: checksum, term_width: width, rows_key: m.embedder.rows_key().to_string() })
}

impl Embedded {
    /// Vectors all at hand: the model computed none (and may not be loaded).
    fn without_model(emb: TermEmbeddings, bundled: usize, from_memory: usize, model_name: String, model_checksum: String) -> Embedded {
        Embedded { emb, bundled, from_memory, from_cache: 0, fresh: Vec::new(), model_name, model_checksum, term_width: 1, rows_key: String::new() }
    }
}

/// The vectors of `ids` that need no model: from the bundled vectors of `vocab`, then from this
/// session's memory (if it holds vectors of the model `checksum` for this list). Returns them
/// (of dimension 0 if neither source had any) and how many came from each.
async fn at_hand(
    vectors: &mut HashMap<Bundled, Option<Rc<VectorFile>>>,
    live: Option<&LiveCache>,
    vocab: &PublicVocabulary,
    ids: &[TermId],
    checksum: &str,
) -> Result<(TermEmbeddings, usize, usize), Stop> {
    let file = if checksum.is_empty() { None } else { bundled_vectors(vectors, vocab, checksum).await };
    let mut emb = TermEmbeddings::new(file.as_ref().map_or(0, |f| f.dim()));
    let bundled = match &file {
        Some(f) => f.fill(ids, &mut emb).map_err(at(Stage::Embed))?,
        None => 0,
    };
    let mut from_memory = 0;
    if let Some(live) = live.filter(|l| l.model == checksum && l.vocab == vocab.checksum) {
        if emb.dim() == 0 {
            emb = TermEmbeddings::new(live.emb.dim());
        }
        for &id in ids {
            if !emb.contains(id) {
                if let Some(v) = live.emb.get(id) {
                    emb.insert(id, v).map_err(at(Stage::Embed))?;
                    from_memory += 1;
                }
            }
        }
    }
    Ok((emb, bundled, from_memory))
}

/// The model, loaded if it is not yet (`terms`: how many it is loaded for, for the stage's
/// note), and the model stage posted. Refused if vectors read from this session's memory
/// (`used_memory`) were computed with other rows than the model computes now.
async fn load_model<'m>(slot: &'m mut Option<Model>, live: &mut Option<LiveCache>, terms: usize, used_memory: bool, t_model: f64) -> Result<&'m mut Model, Stop> {
    let loaded_here = slot.is_none();
    let m = ensure_model(slot).await?;
    post(&Event::StageDone {
        stage: Stage::Model,
        seconds: seconds_since(t_model),
        note: if loaded_here { format!("{}, loaded for {terms} terms", m.name) } else { m.name.clone() },
    });
    // Vectors read from this session's memory were computed by an earlier load of this model:
    // with the same rows, or not at all (a term's vector must not depend on whether an earlier
    // run needed it).
    if used_memory && live.as_ref().is_some_and(|l| l.rows != m.embedder.rows_key()) {
        *live = None;
        return Err(Stop::Failed(Some(Stage::Model), "the model now computes differently from earlier in this page session; reload the page".into()));
    }
    Ok(m)
}

/// Adds to `emb` the vectors of `todo` this browser's cache holds for the model `checksum` and
/// its rows; returns how many. An unreadable cache gives none: they are computed here instead.
async fn from_browser_cache(store: &Store, m: &Model, checksum: &str, vocab: &PublicVocabulary, todo: &[TermId], emb: &mut TermEmbeddings) -> Result<usize, Stop> {
    let mut cached = TermEmbeddings::new(m.embedder.dim());
    match store.cached_embeddings(checksum, m.embedder.rows_key(), vocab, todo, &mut cached).await {
        Ok(n) => {
            for &id in todo {
                if let Some(v) = cached.get(id) {
                    emb.insert(id, v).map_err(at(Stage::Embed))?;
                }
            }
            Ok(n)
        }
        Err(_) => Ok(0),
    }
}

/// Embeds `todo` with the model, here and on the helper workers, into `emb`, posting the
/// progress; returns the width of the term batches.
async fn embed_terms(
    m: &mut Model,
    helpers: &mut Option<Pool>,
    vocab: &PublicVocabulary,
    todo: &[TermId],
    emb: &mut TermEmbeddings,
    clock: &mut f64,
) -> Result<usize, Stop> {
    progress(Stage::Embed, 0, todo.len() as u64);
    // Term batches whose every row is a function of its own term (`dpkps_core::embed::rows`: which
    // terms are here follows the private corpus), a few a message to the helpers.
    let width = m.embedder.term_width();
    let batches = dpkps_core::embed::rows::term_batches(&m.embedder, width, todo, |id| vocab.term(id));
    let messages = dpkps_core::embed::rows::messages(batches, ROWS_PER_MESSAGE);
    let texts: Vec<Vec<&str>> = messages.iter().map(|msg| dpkps_core::embed::rows::message_texts(msg, |id| vocab.term(id))).collect();
    let messages: Vec<Vec<Option<TermId>>> = messages.into_iter().map(|m| m.concat()).collect();
    let pool = helpers_for(helpers, m, messages.len());
    let mut done = 0;
    embed_batches(&mut m.embedder, pool, &texts, width, clock, &mut |k, vecs, _| {
        for (row, v) in messages[k].iter().zip(&vecs) {
            if let Some(id) = *row {
                emb.insert(id, v).map_err(at(Stage::Embed))?;
                done += 1;
            }
        }
        progress(Stage::Embed, done as u64, todo.len() as u64);
        Ok(())
    })
    .await?;
    Ok(width)
}

/// The bundled vectors against the live model: `per_list` random terms of each bundled list
/// whose vectors fit the loaded model, embedded here and on the helpers. Returns how many were
/// compared and the lowest cosine with its term.
pub async fn check_bundled(
    m: &mut Model,
    helpers: &mut Option<Pool>,
    vectors: &mut HashMap<Bundled, Option<Rc<VectorFile>>>,
    vocabs: &[Rc<PublicVocabulary>],
    per_list: usize,
    rng: &mut dpkps_core::dp::SecureRng,
) -> Result<(usize, f64, String), Stop> {
    let checksum = m.embedder.checksum().to_string();
    let mut pairs: Vec<(String, Vec<f32>)> = Vec::new();
    for vocab in vocabs {
        let Some(file) = bundled_vectors(vectors, vocab, &checksum).await else { continue };
        for _ in 0..per_list.min(file.len()) {
            let mut b = [0u8; 8];
            rng.fill(&mut b);
            let id = (u64::from_le_bytes(b) % file.len() as u64) as TermId;
            if let Some(v) = file.get(id) {
                pairs.push((vocab.term(id).to_string(), v));
            }
        }
    }
    let batches: Vec<Vec<&str>> = pairs.chunks(8).map(|c| c.iter().map(|(t, _)| t.as_str()).collect()).collect();
    let mut got: Vec<Vec<Vec<f32>>> = vec![Vec::new(); batches.len()];
    let mut clock = now_ms();
    embed_batches(&mut m.embedder, helpers.as_mut(), &batches, 1, &mut clock, &mut |k, v, _| {
        got[k] = v;
        Ok(())
    })
    .await?;
    // No vectors (the single file, an older build): 0 checked, and no NaN, which JSON writes as
    // null and the page could not read back as a number.
    let mut worst = (if pairs.is_empty() { 0.0 } else { 1.0 }, String::new());
    for ((term, shipped), live) in pairs.iter().zip(got.iter().flatten()) {
        let c = dpkps_core::embed::bundle::cosine(shipped, live);
        if !(c >= worst.0) {
            worst = (c, term.clone());
        }
    }
    Ok((pairs.len(), worst.0, worst.1))
}
