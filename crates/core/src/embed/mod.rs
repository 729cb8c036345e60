//! Term embeddings: the table the DP-KDE and the samplers read.
//!
//! Filled by the sentence model (`dpkps_embed::onnx`, the same code natively and in the worker), from its
//! precomputed table for a bundled vocabulary ([`bundle`]) or, in tests and benchmarks, by
//! synthetic vectors. Embeddings of public vocabulary terms are not private; a table built for the
//! matched terms of a corpus reveals which terms occur and stays in memory.

pub mod bundle;
pub mod rows;

use std::collections::HashMap;

use crate::input::public_vocab::TermId;

#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    #[error("an embedding has {got} dimensions, expected {expected}")]
    Dimension { expected: usize, got: usize },
    #[error("an embedding contains a value that is not a finite number")]
    NotFinite,
    #[error("the embedding model could not be used: {0}")]
    Model(String),
}

/// Embeddings of vocabulary terms, `dim` floats each.
#[derive(Debug, Clone, Default)]
pub struct TermEmbeddings {
    dim: usize,
    data: Vec<f32>,
    index: HashMap<TermId, u32>,
}

impl TermEmbeddings {
    pub fn new(dim: usize) -> Self {
        TermEmbeddings { dim, data: Vec::new(), index: HashMap::new() }
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// Adds (or replaces) the embedding of a term.
    pub fn insert(&mut self, id: TermId, v: &[f32]) -> Result<(), EmbedError> {
        if v.len() != self.dim {
            return Err(EmbedError::Dimension { expected: self.dim, got: v.len() });
        }
        if v.iter().any(|x| !x.is_finite()) {
            return Err(EmbedError::NotFinite);
        }
        match self.index.get(&id) {
            Some(&row) => self.data[row as usize * self.dim..][..self.dim].copy_from_slice(v),
            None => {
                self.index.insert(id, (self.data.len() / self.dim.max(1)) as u32);
                self.data.extend_from_slice(v);
            }
        }
        Ok(())
    }

    pub fn get(&self, id: TermId) -> Option<&[f32]> {
        self.index.get(&id).map(|&row| &self.data[row as usize * self.dim..][..self.dim])
    }

    pub fn contains(&self, id: TermId) -> bool {
        self.index.contains_key(&id)
    }
}

/// A sentence-embedding model: texts in, one `dim()`-float vector per text out.
pub trait Embed {
    fn dim(&self) -> usize;
    /// A checksum identifying the model (for caches and the privacy report).
    fn checksum(&self) -> &str;
    fn embed(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;
    /// What a text costs the model, for grouping texts of equal cost into a batch: every text in
    /// a batch is padded to the longest, so the key must be the padded quantity. The default is
    /// the byte length; a model that tokenises says how many tokens it will see (a chemical name
    /// is many more tokens per byte than an English phrase, so bytes group badly).
    fn batch_key(&self, text: &str) -> usize {
        text.len()
    }
    /// Rows of the term batches this model is run on for short terms ([`rows::batch_width`]):
    /// [`rows::TERM_BATCH`] where a row's vector was found to depend on that row alone (given
    /// the batch's shape and the row's position), else 1, one term per model call, which any
    /// model satisfies.
    fn term_width(&self) -> usize {
        1
    }
}

/// Puts `items` in batching order: ascending `model.batch_key` of their text, so that a batch
/// of consecutive items wastes little on padding. Stable, hence deterministic.
pub fn sort_for_batching<'a, T>(model: &dyn Embed, items: &mut [T], text: impl Fn(&T) -> &'a str) {
    items.sort_by_cached_key(|t| model.batch_key(text(t)));
}

/// Embeds the given terms of `vocab` in term batches ([`rows`]: every row a function of its
/// own text), calling `progress(done, total)` about every 64 terms and at the end (not at all
/// for no terms).
///
/// `ids` often depends on the private corpus (the terms a run needs), while every mechanism's
/// sensitivity treats a vector as a function of its public term alone: [`rows`] says how the
/// batches keep it so. The same rule everywhere also gives a term the same vector in a run and
/// in a later `dpkps sample` of its release (on the same engine and machine).
pub fn embed_terms(
    vocab: &crate::input::public_vocab::PublicVocabulary,
    ids: &[TermId],
    model: &mut dyn Embed,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<TermEmbeddings, EmbedError> {
    let mut out = TermEmbeddings::new(model.dim());
    let mut todo: Vec<TermId> = ids.iter().copied().filter(|&id| (id as usize) < vocab.len()).collect();
    todo.sort_unstable();
    todo.dedup();
    let width = model.term_width();
    let (mut done, mut told) = (0, 0);
    for batch in rows::term_batches(&*model, width, &todo, |id| vocab.term(id)) {
        let texts = rows::batch_texts(&batch, |id| vocab.term(id));
        for (row, v) in batch.iter().zip(&rows::embed_rows(model, &texts, width)?) {
            if let Some(id) = *row {
                out.insert(id, v)?;
                done += 1;
            }
        }
        if done - told >= 64 || done == todo.len() {
            progress(done, todo.len());
            told = done;
        }
    }
    Ok(out)
}
