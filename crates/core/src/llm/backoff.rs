//! How long to wait between attempts. Whether to retry at all is [`super::LlmError::retryable`];
//! this is only the delay: a pure function of the attempt number, the server's Retry-After and
//! a jitter drawn by the caller, kept out of the transports (`ui/io/fetch.rs`,
//! `cli/generate/http.rs`) so it is tested natively. The transports read the Retry-After
//! header with [`retry_after_s`], in either of its forms.
//!
//! Why jitter: up to 64 lanes share one endpoint. When it refuses them together (a 429 or a
//! restart), waits that are equal send them back together, again and again. A random part of
//! each wait (±25 % of the backoff; up to +25 % over a Retry-After, never less than the server
//! asked for) spreads them out. It comes from the system's random source
//! ([`random_jitter`]); tests pass their own.

/// Milliseconds to wait before attempt `attempt` (2, 3, …), with `jitter` in [0, 1]: the
/// server's Retry-After if it gave one (at most a minute), plus up to a quarter of it; else
/// exponential backoff 0.5 s, 1 s, 2 s, … capped at 30 s, times 0.75 to 1.25.
pub fn backoff_ms(attempt: u32, retry_after_s: Option<f64>, jitter: f64) -> f64 {
    let jitter = if jitter.is_finite() { jitter.clamp(0.0, 1.0) } else { 0.5 };
    if let Some(s) = retry_after_s.filter(|s| s.is_finite() && *s >= 0.0) {
        return (s * 1000.0).min(60_000.0) * (1.0 + 0.25 * jitter);
    }
    let base = (500.0 * 2f64.powi(attempt.saturating_sub(2).min(16) as i32)).min(30_000.0);
    base * (0.75 + 0.5 * jitter)
}

/// A jitter for [`backoff_ms`], uniform in [0, 1), from the system's random source
/// (`crypto.getRandomValues` in the browser); 0.5 (none) if it is unavailable.
pub fn random_jitter() -> f64 {
    let mut bytes = [0u8; 4];
    match getrandom::fill(&mut bytes) {
        Ok(()) => f64::from(u32::from_le_bytes(bytes)) / 4_294_967_296.0,
        Err(_) => 0.5,
    }
}

/// The seconds a `Retry-After` header asks for: its value either a number of seconds or an
/// HTTP date (RFC 9110 §10.2.3), then the seconds from `now_unix_s` to that date (0 if it has
/// passed). `None` for anything else.
pub fn retry_after_s(value: &str, now_unix_s: f64) -> Option<f64> {
    let v = value.trim();
    if let Ok(s) = v.parse::<f64>() {
        return (s.is_finite() && s >= 0.0).then_some(s);
    }
    http_date_unix_s(v).map(|t| (t as f64 - now_unix_s).max(0.0))
}

const MONTHS: [&str; 12] = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];

/// Seconds since 1970 of an HTTP date in any of the three forms a recipient must accept
/// (RFC 9110 §5.6.7): `Sun, 06 Nov 1994 08:49:37 GMT` (IMF-fixdate), `Sunday, 06-Nov-94
/// 08:49:37 GMT` (RFC 850) and `Sun Nov  6 08:49:37 1994` (asctime). The weekday is not
/// checked against the date; a two-digit year is 20yy below 70, else 19yy.
pub fn http_date_unix_s(value: &str) -> Option<i64> {
    let words: Vec<&str> = value.split([' ', ',']).filter(|w| !w.is_empty()).collect();
    let (day, month, year, time) = match words.as_slice() {
        [_, d, m, y, t, zone] if zone.eq_ignore_ascii_case("GMT") => (*d, *m, *y, *t),
        [_, dmy, t, zone] if zone.eq_ignore_ascii_case("GMT") => {
            let mut parts = dmy.split('-');
            let (d, m, y) = (parts.next()?, parts.next()?, parts.next()?);
            if parts.next().is_some() {
                return None;
            }
            (d, m, y, *t)
        }
        [_, m, d, t, y] => (*d, *m, *y, *t),
        _ => return None,
    };
    let day: u32 = day.parse().ok()?;
    let month = MONTHS.iter().position(|m| m.eq_ignore_ascii_case(month))? as u32 + 1;
    let year: i64 = match (year.len(), year.parse::<i64>().ok()?) {
        (2, y) if y < 70 => 2000 + y,
        (2, y) => 1900 + y,
        (4, y) => y,
        _ => return None,
    };
    let mut hms = time.split(':').map(|p| if p.len() == 2 { p.parse::<u32>().ok() } else { None });
    let (h, mi, s) = (hms.next()??, hms.next()??, hms.next()??);
    if hms.next().is_some() || h > 23 || mi > 59 || s > 60 || !(1970..=9999).contains(&year) {
        return None;
    }
    let days = days_since_1970(year, month, day)?;
    Some(days * 86_400 + i64::from(h * 3600 + mi * 60 + s))
}

/// Days from 1970-01-01 to `year-month-day`, or `None` if there is no such day.
fn days_since_1970(year: i64, month: u32, day: u32) -> Option<i64> {
    let leap = |y: i64| (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    const LENGTHS: [u32; 12] = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    let length = LENGTHS[month as usize - 1] + u32::from(month == 2 && leap(year));
    if day == 0 || day > length {
        return None;
    }
    let years: i64 = (1970..year).map(|y| if leap(y) { 366 } else { 365 }).sum();
    let months: u32 = LENGTHS[..month as usize - 1].iter().sum::<u32>() + u32::from(month > 2 && leap(year));
    Some(years + i64::from(months) + i64::from(day) - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_honours_retry_after() {
        // Jitter 0.5 is the middle: the backoff as it is, a Retry-After an eighth more.
        assert_eq!(backoff_ms(2, None, 0.5), 500.0);
        assert_eq!(backoff_ms(3, None, 0.5), 1000.0);
        assert_eq!(backoff_ms(30, None, 0.5), 30_000.0);
        assert_eq!(backoff_ms(2, Some(0.0), 0.5), 0.0);
        assert_eq!(backoff_ms(2, Some(2.0), 0.0), 2000.0);
        assert_eq!(backoff_ms(2, Some(1e9), 0.0), 60_000.0);
        assert_eq!(backoff_ms(2, Some(f64::NAN), 0.5), 500.0);
        assert_eq!(backoff_ms(u32::MAX, None, 0.5), 30_000.0);
    }

    #[test]
    fn the_jitter_spreads_waits_within_a_quarter_and_never_under_the_servers_ask() {
        for attempt in 2..12 {
            let base = backoff_ms(attempt, None, 0.5);
            assert_eq!((backoff_ms(attempt, None, 0.0), backoff_ms(attempt, None, 1.0)), (0.75 * base, 1.25 * base));
        }
        assert_eq!((backoff_ms(2, Some(10.0), 0.0), backoff_ms(2, Some(10.0), 1.0)), (10_000.0, 12_500.0));
        assert_eq!(backoff_ms(2, Some(60.0), 1.0), 75_000.0, "capped before the jitter: a minute's lanes spread too");
        assert_eq!(backoff_ms(3, None, f64::NAN), 1000.0);
        assert_eq!(backoff_ms(3, None, 7.0), 1250.0);
        // The system's random source: within [0, 1), and not one value.
        let draws: Vec<f64> = (0..64).map(|_| random_jitter()).collect();
        assert!(draws.iter().all(|j| (0.0..1.0).contains(j)), "{draws:?}");
        assert!(draws.iter().any(|j| *j != draws[0]), "{draws:?}");
        let waits: Vec<f64> = draws.iter().map(|j| backoff_ms(4, None, *j)).collect();
        assert!(waits.iter().all(|w| (1500.0..2500.0).contains(w)), "{waits:?}");
    }

    #[test]
    fn retry_after_in_seconds_or_as_an_http_date() {
        // 1994-11-06 08:49:37 UTC, the RFC's example, in its three forms.
        let t = 784_111_777;
        for form in ["Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994", "sun, 06 nov 1994 08:49:37 gmt"] {
            assert_eq!(http_date_unix_s(form), Some(t), "{form}");
        }
        assert_eq!(http_date_unix_s("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(http_date_unix_s("Tue, 29 Feb 2028 12:00:00 GMT"), Some(1_835_438_400));
        assert_eq!(http_date_unix_s("Wed, 31 Dec 2025 23:59:59 GMT"), Some(1_767_225_599));
        for bad in ["", "soon", "Sun, 31 Feb 2025 00:00:00 GMT", "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Nov 1994 08:49:37 CET",
                    "Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 06 Nov 1994 8:49:37 GMT", "Sun, 06-Nov-94-1 08:49:37 GMT"] {
            assert_eq!(http_date_unix_s(bad), None, "{bad}");
        }
        assert_eq!(retry_after_s(" 120 ", 0.0), Some(120.0));
        assert_eq!(retry_after_s("1.5", 0.0), Some(1.5));
        assert_eq!(retry_after_s("-3", 0.0), None);
        assert_eq!(retry_after_s("Sun, 06 Nov 1994 08:50:07 GMT", t as f64), Some(30.0));
        assert_eq!(retry_after_s("Sun, 06 Nov 1994 08:49:37 GMT", t as f64 + 5.0), Some(0.0), "a date passed: at once");
        assert_eq!(retry_after_s("tomorrow", 0.0), None);
    }
}
