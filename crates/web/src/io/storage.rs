//! `localStorage` (names the curator chose and a key she asked to remember; never data) and the
//! browser's persistent-storage grant for IndexedDB (the ledger, saved jobs).

use wasm_bindgen::{JsCast, JsValue};

pub fn local_storage() -> Option<web_sys::Storage> {
    web_sys::window().and_then(|w| w.local_storage().ok().flatten())
}

/// The value stored under `key`, if any.
pub fn get(key: &str) -> Option<String> {
    local_storage().and_then(|s| s.get_item(key).ok().flatten())
}

/// Stores `value` under `key` (`None`: removes it). Best effort: a full or disabled storage
/// only means it is not remembered.
pub fn set(key: &str, value: Option<&str>) {
    if let Some(s) = local_storage() {
        match value {
            Some(v) => {
                let _ = s.set_item(key, v);
            }
            None => {
                let _ = s.remove_item(key);
            }
        }
    }
}

/// `navigator.storage.persist()`: without it the browser may clear IndexedDB (the ledger) under
/// storage pressure. Asked at once; `done` gets whether storage is persistent.
pub fn request_persistence(done: impl FnOnce(bool) + 'static) {
    let call = |method: &str| -> Option<js_sys::Promise> {
        let nav = js_sys::Reflect::get(&js_sys::global(), &JsValue::from_str("navigator")).ok()?;
        let storage = js_sys::Reflect::get(&nav, &JsValue::from_str("storage")).ok().filter(|s| !s.is_undefined())?;
        let f: js_sys::Function = js_sys::Reflect::get(&storage, &JsValue::from_str(method)).ok()?.dyn_into().ok()?;
        f.call0(&storage).ok()?.dyn_into().ok()
    };
    let (persisted, persist) = (call("persisted"), call("persist"));
    leptos::task::spawn_local(async move {
        let already = match persisted {
            Some(p) => wasm_bindgen_futures::JsFuture::from(p).await.ok().and_then(|v| v.as_bool()).unwrap_or(false),
            None => false,
        };
        let granted = if already {
            true
        } else {
            match persist {
                Some(p) => wasm_bindgen_futures::JsFuture::from(p).await.ok().and_then(|v| v.as_bool()).unwrap_or(false),
                None => false,
            }
        };
        done(granted);
    });
}
