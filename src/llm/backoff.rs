//! How long to wait between attempts. Whether to retry at all is [`super::LlmError::retryable`];
//! this is only the delay, a pure function of the attempt number and the server's Retry-After,
//! kept out of the transport (`ui/io/fetch.rs`, driven by `ui/state/generate/`) so it is tested natively.

/// Milliseconds to wait before attempt `attempt` (2, 3, …): the server's Retry-After if it
/// gave one (capped), else exponential backoff 0.5 s, 1 s, 2 s, … capped at 30 s.
pub fn backoff_ms(attempt: u32, retry_after_s: Option<f64>) -> f64 {
    if let Some(s) = retry_after_s.filter(|s| s.is_finite() && *s >= 0.0) {
        return (s * 1000.0).min(60_000.0);
    }
    (500.0 * 2f64.powi(attempt.saturating_sub(2) as i32)).min(30_000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_honours_retry_after() {
        assert_eq!(backoff_ms(2, None), 500.0);
        assert_eq!(backoff_ms(3, None), 1000.0);
        assert_eq!(backoff_ms(30, None), 30_000.0);
        assert_eq!(backoff_ms(2, Some(0.0)), 0.0);
        assert_eq!(backoff_ms(2, Some(1e9)), 60_000.0);
        assert_eq!(backoff_ms(2, Some(f64::NAN)), 500.0);
    }
}
