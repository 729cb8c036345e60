//! What this worker fetches from the page's address (or, in the single-file build, from inside
//! the page: `dpkps_inpage`): the bundled model, its reference vectors and checksums, the
//! bundled vocabularies and their vectors. Public data only; nothing of the corpus is sent.

use std::rc::Rc;

use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

use super::control::{at, scope, Stop};
use super::State;
use dpkps_core::protocol::Stage;
use dpkps_core::input::public_vocab::{Bundled, PublicVocabulary};

/// An asset relative to the page (`models/…`, `vocab/…`), or its in-page copy in the single file.
pub async fn fetch_bytes(path: &str) -> Result<Vec<u8>, String> {
    if let Some(blob) = dpkps_inpage::asset(path).await {
        return dpkps_inpage::bytes(&blob?).await;
    }
    let resp = JsFuture::from(scope().fetch_with_str(path))
        .await
        .map_err(|e| format!("{path}: could not be loaded from this page's address ({e:?})"))?;
    let resp: web_sys::Response = resp.dyn_into().map_err(|_| format!("{path}: not a response"))?;
    if !resp.ok() {
        return Err(format!("{path}: HTTP {}", resp.status()));
    }
    let buf = JsFuture::from(resp.array_buffer().map_err(|e| format!("{e:?}"))?).await.map_err(|e| format!("{e:?}"))?;
    Ok(js_sys::Uint8Array::new(&buf).to_vec())
}

/// A bundled vocabulary, fetched once per worker and kept in [`State`].
pub async fn bundled_vocab(state: &mut State, which: Bundled) -> Result<Rc<PublicVocabulary>, Stop> {
    if let Some(v) = state.vocabs.get(&which) {
        return Ok(v.clone());
    }
    let bytes = fetch_bytes(&format!("vocab/{}", which.file_name())).await.map_err(at(Stage::Read))?;
    let v = Rc::new(PublicVocabulary::parse_bundled(which, &bytes).map_err(at(Stage::Read))?);
    state.vocabs.insert(which, v.clone());
    Ok(v)
}
