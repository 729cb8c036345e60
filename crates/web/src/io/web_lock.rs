//! Web Locks (`navigator.locks`): one exclusive lock per LLM job, shared by every tab and
//! window of this origin, so that two tabs never send the same job.

use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

use super::js_error;

fn lock_manager() -> Result<JsValue, String> {
    let none = || "this browser has no Web Locks (navigator.locks), so two tabs could send the same job twice".to_string();
    let navigator = js_sys::Reflect::get(&js_sys::global(), &JsValue::from_str("navigator")).map_err(|_| none())?;
    let locks = js_sys::Reflect::get(&navigator, &JsValue::from_str("locks")).map_err(|_| none())?;
    if locks.is_undefined() || locks.is_null() {
        return Err(none());
    }
    Ok(locks)
}

fn method(obj: &JsValue, name: &str) -> Result<js_sys::Function, String> {
    js_sys::Reflect::get(obj, &JsValue::from_str(name))
        .ok()
        .and_then(|f| f.dyn_into().ok())
        .ok_or_else(|| format!("navigator.locks.{name} is missing"))
}

/// A Web Lock held by this tab; released when dropped.
pub struct HeldLock {
    release: js_sys::Function,
}

impl Drop for HeldLock {
    fn drop(&mut self) {
        let _ = self.release.call0(&JsValue::NULL);
    }
}

/// Takes the exclusive Web Lock `name` if nobody holds it (`ifAvailable: true`); `Ok(None)`
/// when another tab, window or this one already does.
pub async fn try_lock(name: &str) -> Result<Option<HeldLock>, String> {
    let locks = lock_manager()?;
    let request = method(&locks, "request")?;
    let options = js_sys::Object::new();
    let _ = js_sys::Reflect::set(&options, &JsValue::from_str("mode"), &JsValue::from_str("exclusive"));
    let _ = js_sys::Reflect::set(&options, &JsValue::from_str("ifAvailable"), &JsValue::TRUE);
    // `answered` resolves with the release function (granted) or null (not available); the
    // lock is held until `held`, the promise the callback returns, is resolved.
    let mut answer: Option<js_sys::Function> = None;
    let answered = js_sys::Promise::new(&mut |resolve, _| answer = Some(resolve));
    let answer = answer.ok_or("internal: no resolver")?;
    let callback = wasm_bindgen::closure::Closure::once_into_js(move |lock: JsValue| -> JsValue {
        if lock.is_null() || lock.is_undefined() {
            let _ = answer.call1(&JsValue::NULL, &JsValue::NULL);
            return JsValue::UNDEFINED;
        }
        let mut release: Option<js_sys::Function> = None;
        let held = js_sys::Promise::new(&mut |resolve, _| release = Some(resolve));
        let _ = answer.call1(&JsValue::NULL, &release.map(JsValue::from).unwrap_or(JsValue::NULL));
        held.into()
    });
    let done = request
        .call3(&locks, &JsValue::from_str(name), &options, &callback)
        .map_err(|e| format!("the job's lock could not be requested: {}", js_error(&e)))?;
    let done: js_sys::Promise = done.dyn_into().map_err(|_| "navigator.locks.request gave no promise".to_string())?;
    // The request's promise settles only after release, or at once if the request fails.
    let first = js_sys::Promise::race(&js_sys::Array::of2(&answered, &done));
    let got = JsFuture::from(first).await.map_err(|e| format!("the job's lock: {}", js_error(&e)))?;
    Ok(got.dyn_into::<js_sys::Function>().ok().map(|release| HeldLock { release }))
}

/// Whether some tab or window holds the Web Lock `name` (read only: `navigator.locks.query`).
pub async fn lock_held(name: &str) -> bool {
    let Ok(locks) = lock_manager() else { return false };
    let Ok(query) = method(&locks, "query") else { return false };
    let Ok(p) = query.call0(&locks).and_then(|p| p.dyn_into::<js_sys::Promise>().map_err(JsValue::from)) else { return false };
    let Ok(snapshot) = JsFuture::from(p).await else { return false };
    let held = js_sys::Reflect::get(&snapshot, &JsValue::from_str("held")).unwrap_or(JsValue::UNDEFINED);
    js_sys::Array::from(&held).iter().any(|l| js_sys::Reflect::get(&l, &JsValue::from_str("name")).ok().and_then(|n| n.as_string()).as_deref() == Some(name))
}
