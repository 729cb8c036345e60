//! The endpoints the page may send to: the origins its Content-Security-Policy allows, and the
//! browser's own reading of an endpoint URL (a second look after `dpkps_core::llm`'s checks).

use dpkps_core::llm::LlmError;

/// The origins the page's Content-Security-Policy lets it connect to: its own, and the list
/// that scripts/csp.py wrote next to the policy (`<meta name="dpkps-allowed-endpoints">`, from
/// allowed-endpoints.txt). Read before sending, so that a refused endpoint gets a message that
/// says which file to edit instead of a bare "Failed to fetch".
pub fn allowed_endpoints() -> Vec<String> {
    let mut out = Vec::new();
    let Some(w) = web_sys::window() else { return out };
    if let Ok(origin) = w.location().origin() {
        out.push(origin);
    }
    let meta = w.document().and_then(|d| d.query_selector(r#"meta[name="dpkps-allowed-endpoints"]"#).ok().flatten());
    if let Some(content) = meta.and_then(|m| m.get_attribute("content")) {
        out.extend(content.split_whitespace().map(str::to_string));
    }
    out
}

/// The browser's own URL parser must see the same scheme, host and port as the checks did
/// (they refuse anything unusual, so this is a second look, not the rule).
pub fn browser_agrees(endpoint: &str) -> Result<(), LlmError> {
    let ours = dpkps_core::llm::EndpointUrl::parse(endpoint)?;
    let bad = || LlmError::BadEndpoint(endpoint.to_string());
    let theirs = web_sys::Url::new(endpoint.trim()).map_err(|_| bad())?;
    if theirs.origin() != ours.origin() || !theirs.username().is_empty() || !theirs.password().is_empty() {
        return Err(bad());
    }
    Ok(())
}
