//! The document benchmark (`BenchDocs`, benchmark page only): documents embedded one per model
//! call, as the recipient's sets and the vote's private documents are, on this worker alone and
//! with its helpers; where a document's model call spends its time (`dpkps_embed::profile`); and,
//! on request, plans of fixed shapes. `tests/e2e/bench_docs.mjs` sends it the documents that
//! `dpkps bench docs --write` measured natively.

use super::control::{at, now_ms, seconds_since, Stop};
use super::helpers::embed_share::embed_batches;
use super::helpers::wasm_memory_bytes;
use super::model::ensure_model;
use super::{helpers_for, ready_helpers, State};
use dpkps_core::embed::Embed;
use dpkps_core::protocol::{BenchDocSet, DocBenchFigures, DocBenchSet, Event, Stage};

pub async fn bench_docs(state: &mut State, sets: &[BenchDocSet], profile: usize, plans: bool) -> Result<Event, Stop> {
    let State { model, helpers, .. } = state;
    let m = ensure_model(model).await?;
    let pool = helpers_for(helpers, m, usize::MAX);
    let helper_count = ready_helpers(pool).await?;
    let mut out = Vec::new();
    for set in sets {
        let texts: Vec<&str> = set.texts.iter().map(String::as_str).collect();
        let tokens = texts.iter().map(|t| m.embedder.batch_key(t)).sum::<usize>() as f64 / texts.len().max(1) as f64;
        let t0 = now_ms();
        for t in &texts {
            std::hint::black_box(m.embedder.embed(&[t]).map_err(at(Stage::Embed))?);
        }
        let alone = texts.len() as f64 / seconds_since(t0);
        let singles: Vec<Vec<&str>> = texts.iter().map(|t| vec![*t]).collect();
        let t0 = now_ms();
        let mut clock = t0;
        embed_batches(&mut m.embedder, helpers.as_mut(), &singles, 1, &mut clock, &mut |_, _, _| Ok(())).await?;
        let shared = texts.len() as f64 / seconds_since(t0);
        let table = if profile > 0 {
            let refs: Vec<&str> = texts.iter().take(profile).copied().collect();
            dpkps_embed::profile::profile(&m.embedder, &refs, &now_ms).map_err(at(Stage::Embed))?.table()
        } else {
            String::new()
        };
        let plans = if plans {
            let long = tokens >= 250.0;
            let shapes: &[(usize, Option<usize>)] = if long { &[(1, None), (1, Some(256)), (4, Some(256))] } else { &[(1, None), (1, Some(256))] };
            dpkps_embed::profile::compare_plans(&m.bytes.0, &m.embedder, &texts, shapes, &now_ms).map_err(at(Stage::Embed))?
        } else {
            Vec::new()
        };
        out.push(DocBenchSet { name: set.name.clone(), documents: texts.len(), tokens_per_document: tokens, alone_per_second: alone, with_helpers_per_second: shared, profile: table, plans });
    }
    let scope: web_sys::WorkerGlobalScope = wasm_bindgen::JsCast::unchecked_into(js_sys::global());
    Ok(Event::BenchedDocs(DocBenchFigures { helpers: helper_count, cores: scope.navigator().hardware_concurrency() as usize, sets: out, wasm_memory_bytes: wasm_memory_bytes() }))
}
