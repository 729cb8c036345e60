//! The model that embeds terms: the bundled one (fetched on first use) or one the user attached
//! (`UseModel`). The helpers get a copy of its bytes ([`Model::bytes`]) to load their own. Its
//! checks (`ModelCheck`, `Bench`) are in [`super::diagnostics`], which reads the vectors'
//! sources too (`sources` needs the model, so the model needs nothing of `sources`).

use std::rc::Rc;

use web_sys::File;

use super::assets::fetch_bytes;
use super::control::{at, now_ms, progress, seconds_since, Stop};
use super::{files, State};
use dpkps_embed::onnx::{OnnxEmbedder, BUNDLED_MODEL};
use dpkps_core::embed::Embed;
use dpkps_core::protocol::{limits, Event, FileInfo, Stage};

/// Rows (of whole term batches, `dpkps_core::embed::rows`: one model call each, every row a function
/// of its own term) per message between this worker and its helpers. Sixteen keeps the helpers
/// busy: with one term a message, each waited for this worker to finish its own before getting
/// the next.
pub const ROWS_PER_MESSAGE: usize = 16;
pub use dpkps_embed::onnx::BUNDLED_MODEL_NAME;

pub struct Model {
    pub embedder: OnnxEmbedder,
    pub name: String,
    /// The model's and tokenizer's bytes, for helper workers (see [`super::helpers`]).
    pub bytes: Rc<(Vec<u8>, Vec<u8>)>,
}

/// `UseModel`: the model and tokenizer the user attached (`files`), in place of the current
/// one; the helpers holding the old one are let go.
pub fn use_model(state: &mut State, files: &[File], model: FileInfo, tokenizer: FileInfo) -> Result<Event, Stop> {
    let (m, t) = match (files.first(), files.get(1)) {
        (Some(m), Some(t)) => (m, t),
        _ => return Err(Stop::Failed(Some(Stage::Model), "attach the model and its tokenizer.json".into())),
    };
    let t0 = now_ms();
    let mb = files::all(m, "a model", limits::MODEL).map_err(at(Stage::Model))?;
    let tb = files::all(t, "a tokenizer", limits::TOKENIZER).map_err(at(Stage::Model))?;
    let embedder = OnnxEmbedder::from_bytes(&mb, &tb)
        .map_err(|e| Stop::Failed(Some(Stage::Model), format!("{}: {e}", model.name)))?;
    let ev = model_loaded(&embedder, format!("{} + {}", model.name, tokenizer.name), t0);
    state.model = Some(Model { embedder, name: model.name, bytes: Rc::new((mb, tb)) });
    state.helpers = None;
    Ok(ev)
}

pub async fn ensure_model(slot: &mut Option<Model>) -> Result<&mut Model, Stop> {
    if slot.is_none() {
        *slot = Some(load_bundled_model(true).await?);
    }
    slot.as_mut().ok_or_else(|| Stop::Failed(Some(Stage::Model), "no model".into()))
}

/// The bundled model, fetched and loaded (with the model stage's progress if `report`).
pub async fn load_bundled_model(report: bool) -> Result<Model, Stop> {
    if report {
        progress(Stage::Model, 0, 2);
    }
    let model = fetch_bytes(&format!("models/{BUNDLED_MODEL}")).await.map_err(at(Stage::Model))?;
    let tok = fetch_bytes("models/tokenizer.json").await.map_err(at(Stage::Model))?;
    if report {
        progress(Stage::Model, 1, 2);
    }
    let embedder = OnnxEmbedder::from_bytes(&model, &tok).map_err(at(Stage::Model))?;
    Ok(Model { embedder, name: BUNDLED_MODEL_NAME.into(), bytes: Rc::new((model, tok)) })
}

pub fn model_loaded(e: &OnnxEmbedder, name: String, t0: f64) -> Event {
    Event::ModelLoaded { name, dim: e.dim(), checksum: e.checksum().to_string(), seconds: seconds_since(t0) }
}
