//! Downloads: a Blob, an object URL, a click. In the curator's mode only DP outputs are
//! offered; in the recipient's mode, the recipient's own predictions and model.

use wasm_bindgen::JsCast;

use dpkps_core::protocol::{RunResult, TrainResult};

fn save(name: &str, mime: &str, text: &str) {
    save_part(name, mime, &wasm_bindgen::JsValue::from_str(text));
}

fn save_part(name: &str, mime: &str, part: &wasm_bindgen::JsValue) {
    let parts = js_sys::Array::of1(part);
    let opts = web_sys::BlobPropertyBag::new();
    opts.set_type(mime);
    let Ok(blob) = web_sys::Blob::new_with_u8_array_sequence_and_options(&parts, &opts) else { return };
    let Ok(url) = web_sys::Url::create_object_url_with_blob(&blob) else { return };
    if let Some(a) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.create_element("a").ok())
        .and_then(|a| a.dyn_into::<web_sys::HtmlAnchorElement>().ok())
    {
        a.set_href(&url);
        a.set_download(name);
        a.click();
    }
    // Revoke later: revoking at once can cancel the download in some browsers.
    let revoke = wasm_bindgen::closure::Closure::once_into_js(move || {
        let _ = web_sys::Url::revoke_object_url(&url);
    });
    if let Some(w) = web_sys::window() {
        let _ = w.set_timeout_with_callback_and_timeout_and_arguments_0(revoke.unchecked_ref(), 60_000);
    }
}

/// One JSON object per line: {"label", "keyphrases"}.
pub fn sequences_jsonl(r: &RunResult) {
    let mut out = String::new();
    for s in &r.sequences {
        out.push_str(&serde_json::to_string(s).unwrap_or_default());
        out.push('\n');
    }
    save("dpkps-sequences.jsonl", "application/x-ndjson", &out);
}

/// Columns label, keyphrases (joined with "; "), noise_dominated ("yes" for a class whose
/// release is noise-dominated).
pub fn sequences_csv(r: &RunResult) {
    let mut w = csv::Writer::from_writer(Vec::new());
    let _ = w.write_record(["label", "keyphrases", "noise_dominated"]);
    for s in &r.sequences {
        let flag = if s.noise_dominated { "yes" } else { "" };
        let _ = dpkps_core::llm::export::write_record(&mut w, [s.label.clone().unwrap_or_default(), s.keyphrases.join("; "), flag.to_string()]);
    }
    let bytes = w.into_inner().unwrap_or_default();
    save("dpkps-sequences.csv", "text/csv", &String::from_utf8_lossy(&bytes));
}

pub fn report(r: &RunResult) {
    save("dpkps-privacy-report.json", "application/json", &r.report);
}

pub fn corpus_jsonl(job: &dpkps_core::llm::Job) {
    save("dpkps-synthetic.jsonl", "application/x-ndjson", &job.corpus_jsonl());
}

pub fn corpus_csv(job: &dpkps_core::llm::Job) {
    save("dpkps-synthetic.csv", "text/csv", &job.corpus_csv());
}

/// The printable privacy report from its JSON.
pub fn report_html_of(report_json: &str) {
    match serde_json::from_str::<dpkps_core::run::report::PrivacyReport>(report_json) {
        Ok(r) => save("dpkps-privacy-report.html", "text/html", &r.to_html()),
        Err(e) => web_sys::console::warn_1(&format!("report unreadable: {e}").into()),
    }
}

/// The audit log, with the answers the replay check flagged withheld (`dpkps_core::llm::Withheld`).
pub fn audit_log(withheld: dpkps_core::llm::Withheld) {
    leptos::task::spawn_local(async move {
        match super::jobstore::audit_jsonl().await {
            Ok(text) => {
                let text = if withheld.is_empty() { text } else { dpkps_core::llm::withhold_answers(&text, &withheld) };
                save("dpkps-llm-audit.jsonl", "application/x-ndjson", &text)
            }
            Err(e) => web_sys::console::warn_1(&e.into()),
        }
    });
}

/// The privacy ledger, as exported (to import in another browser or keep with the data).
pub fn ledger(json: &str) {
    save("dpkps-ledger.json", "application/json", json);
}

/// The recipient's predictions for its unlabelled documents (text, label, probability), as
/// `dpkps train` writes them.
pub fn predictions_csv(r: &TrainResult) {
    save("predictions.csv", "text/csv", &r.predictions_csv);
}

pub fn predictions_jsonl(r: &TrainResult) {
    save("predictions.jsonl", "application/x-ndjson", &r.predictions_jsonl);
}

/// The trained classifier, which `dpkps predict --classifier` reads.
pub fn model(r: &TrainResult) {
    save_part("model.safetensors", "application/octet-stream", &js_sys::Uint8Array::from(&r.model[..]));
}
