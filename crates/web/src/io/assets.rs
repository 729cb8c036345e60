//! Checks that the bundled model, tokenizer and vocabularies are served by this page's origin
//! (or, in the single file dpkps.html, are inside the page: `dpkps_inpage`).

use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

use dpkps_core::input::public_vocab::{Bundled, PublicVocabulary};
use crate::text::group_thousands;

#[derive(Clone, Copy)]
pub enum Check {
    /// Only the size (HEAD request): the model is large and is loaded when it is needed.
    Size,
    /// Fetch and parse as a public vocabulary.
    Vocabulary(Bundled),
    /// Fetch and check it is JSON.
    Json,
}

#[derive(Clone, Copy)]
pub struct BundledAsset {
    pub title: &'static str,
    pub path: &'static str,
    pub check: Check,
}

pub const BUNDLED: [BundledAsset; 4] = [
    BundledAsset { title: "Sentence model (all-MiniLM-L6-v2, ONNX)", path: "models/all-MiniLM-L6-v2.int8w.onnx", check: Check::Size },
    BundledAsset { title: "Tokenizer", path: "models/tokenizer.json", check: Check::Json },
    BundledAsset { title: "Medical glossary (MeSH 2017)", path: "vocab/medical_mesh2017.txt", check: Check::Vocabulary(Bundled::Medical) },
    BundledAsset { title: "English dictionary (GloVe 6B)", path: "vocab/english_glove6b.txt", check: Check::Vocabulary(Bundled::English) },
];

#[derive(Clone, Debug, PartialEq)]
pub enum AssetState {
    Loading,
    Ready(String),
    Failed(String),
}

impl AssetState {
    pub fn describe(&self) -> String {
        match self {
            AssetState::Loading => "loading…".into(),
            AssetState::Ready(s) => s.clone(),
            AssetState::Failed(e) => format!("not available: {e}"),
        }
    }
}

/// Where the bundled files come from, in the page's words.
pub fn where_from() -> &'static str {
    if dpkps_inpage::has_assets() {
        "Inside this file (dpkps.html); nothing is fetched from anywhere."
    } else {
        "Loaded from this page's own address; nothing is fetched from the internet."
    }
}

fn megabytes(n: f64) -> String {
    format!("{:.1} MB", n / 1e6)
}

pub async fn check(asset: BundledAsset) -> AssetState {
    match check_inner(asset).await {
        Ok(s) => AssetState::Ready(s),
        Err(e) => AssetState::Failed(e),
    }
}

async fn check_inner(asset: BundledAsset) -> Result<String, String> {
    // The single file (dpkps.html) carries its assets inside: nothing to fetch.
    if let Some(blob) = dpkps_inpage::asset(asset.path).await {
        let blob = blob?;
        return match asset.check {
            Check::Size => Ok(format!("ready, {}", megabytes(blob.size()))),
            _ => parse(asset, &dpkps_inpage::bytes(&blob).await?),
        };
    }
    match asset.check {
        Check::Size => {
            let resp = fetch(asset.path, "HEAD").await?;
            let len = resp.headers().get("content-length").ok().flatten().and_then(|v| v.parse::<f64>().ok());
            // Consume the (empty) body so the request completes instead of being aborted.
            bytes(resp).await?;
            Ok(len.map_or("available".into(), |n| format!("ready, {}", megabytes(n))))
        }
        Check::Json | Check::Vocabulary(_) => parse(asset, &bytes(fetch(asset.path, "GET").await?).await?),
    }
}

/// The check of a fetched JSON file or vocabulary.
fn parse(asset: BundledAsset, bytes: &[u8]) -> Result<String, String> {
    match asset.check {
        Check::Vocabulary(which) => {
            let v = PublicVocabulary::parse_bundled(which, bytes).map_err(|e| e.to_string())?;
            Ok(format!("ready, {} terms", group_thousands(v.len())))
        }
        _ => {
            serde_json::from_slice::<serde_json::Value>(bytes).map_err(|e| format!("not valid JSON: {e}"))?;
            Ok(format!("ready, {}", megabytes(bytes.len() as f64)))
        }
    }
}

async fn fetch(path: &str, method: &str) -> Result<web_sys::Response, String> {
    let window = web_sys::window().ok_or("no window")?;
    let init = web_sys::RequestInit::new();
    init.set_method(method);
    let resp = JsFuture::from(window.fetch_with_str_and_init(path, &init))
        .await
        .map_err(|e| format!("request failed ({e:?})"))?;
    let resp: web_sys::Response = resp.dyn_into().map_err(|_| "not a response".to_string())?;
    if !resp.ok() {
        return Err(format!("HTTP {}", resp.status()));
    }
    Ok(resp)
}

async fn bytes(resp: web_sys::Response) -> Result<Vec<u8>, String> {
    let buf = JsFuture::from(resp.array_buffer().map_err(|e| format!("{e:?}"))?).await.map_err(|e| format!("{e:?}"))?;
    Ok(js_sys::Uint8Array::new(&buf).to_vec())
}
