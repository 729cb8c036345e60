//! The in-process OpenAI-compatible server the `generate` tests talk to: it answers each
//! document's request as its queued faults say (errors, delays, redirects, replies that repeat a
//! private span) and records what it saw.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The API key the tests give the CLI (and the server expects, where a test asks).
pub(super) const KEY: &str = "sk-test-0123456789abcdef";

/// What the server does with one request.
#[derive(Clone, Debug)]
pub(super) enum Fault {
    /// 429 with `Retry-After: s`.
    TooMany(u32),
    Status(u16),
    /// Answers (well) only after this many milliseconds.
    Slow(u64),
    /// Answers with the keyphrases alone, as a bare list: not a document.
    List,
    /// A 200 whose body is this many bytes (more than any reply of the job's max tokens).
    Huge(usize),
    /// 307 to this URL.
    Redirect(String),
    /// This status with this body, as the server wrote it (bytes a terminal may act on).
    Body(u16, String),
    /// 429 with `Retry-After` as an HTTP date this many seconds ahead.
    TooManyUntil(u64),
    /// Answers well, with these words in the note (a private document's, replayed).
    Replay(&'static str),
}

/// One completion request as the server saw it.
#[derive(Clone, Debug)]
pub(super) struct Seen {
    pub(super) doc: usize,
    pub(super) at: Instant,
    pub(super) authorization: Option<String>,
}

#[derive(Default)]
pub(super) struct State {
    pub(super) faults: HashMap<usize, VecDeque<Fault>>,
    pub(super) seen: Vec<Seen>,
    pub(super) delay_ms: u64,
    pub(super) in_flight: usize,
    pub(super) max_in_flight: usize,
}

/// An OpenAI-compatible `POST /v1/chat/completions` on 127.0.0.1, one thread per connection.
/// A request is for document `i` when its prompt holds the keyphrase `kp{i}x`.
pub(super) struct Server {
    pub(super) url: String,
    pub(super) state: Arc<Mutex<State>>,
}

impl Server {
    pub(super) fn start() -> Server {
        let listener = TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(State::default()));
        let s = state.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let s = s.clone();
                std::thread::spawn(move || handle(stream, &s));
            }
        });
        Server { url, state }
    }

    pub(super) fn fault(&self, doc: usize, faults: &[Fault]) {
        self.state.lock().unwrap().faults.insert(doc, faults.iter().cloned().collect());
    }

    pub(super) fn delay(&self, ms: u64) {
        self.state.lock().unwrap().delay_ms = ms;
    }

    pub(super) fn seen(&self) -> Vec<Seen> {
        self.state.lock().unwrap().seen.clone()
    }

    /// Waits until no request has been in flight, and none has arrived, for `quiet` on end. After
    /// a client is killed, a request it had sent just before may still be read and recorded by
    /// its connection's thread: a count taken at once would miss it and lay it at the door of
    /// whichever client runs next.
    pub(super) fn settle(&self, quiet: Duration) {
        let t0 = Instant::now();
        // When the server was last seen busy or with a new request, and how many it had seen.
        let (mut since, mut seen) = (t0, usize::MAX);
        loop {
            let (busy, n) = {
                let s = self.state.lock().unwrap();
                (s.in_flight > 0, s.seen.len())
            };
            if busy || n != seen {
                (since, seen) = (Instant::now(), n);
            } else if since.elapsed() >= quiet {
                return;
            }
            assert!(t0.elapsed() < Duration::from_secs(60), "the test server never settled");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Requests per document.
    pub(super) fn counts(&self) -> BTreeMap<usize, usize> {
        let mut c = BTreeMap::new();
        for s in self.seen() {
            *c.entry(s.doc).or_default() += 1;
        }
        c
    }
}

pub(super) fn handle(mut stream: TcpStream, state: &Mutex<State>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let mut headers = HashMap::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    let len: usize = headers.get("content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
    let mut body = vec![0u8; len];
    reader.read_exact(&mut body).unwrap();
    let body: Value = serde_json::from_slice(&body).unwrap();
    let prompt = body["messages"].as_array().unwrap().last().unwrap()["content"].as_str().unwrap().to_string();
    let doc = (0..1000).find(|i| prompt.contains(&format!("kp{i}x"))).expect("a document's prompt");
    let (fault, delay) = {
        let mut s = state.lock().unwrap();
        s.seen.push(Seen { doc, at: Instant::now(), authorization: headers.get("authorization").cloned() });
        s.in_flight += 1;
        s.max_in_flight = s.max_in_flight.max(s.in_flight);
        (s.faults.get_mut(&doc).and_then(VecDeque::pop_front), s.delay_ms)
    };
    std::thread::sleep(Duration::from_millis(delay));
    // In flight while the client waits for it: a slow reply is abandoned at the client's timeout.
    state.lock().unwrap().in_flight -= 1;
    let reply = |status: u16, extra: &str, body: &str| {
        format!("HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n{body}", body.len())
    };
    let ok = || {
        let text = format!("A note about {prompt}");
        reply(200, "", &serde_json::json!({ "choices": [{ "message": { "role": "assistant", "content": text } }] }).to_string())
    };
    let out = match fault {
        Some(Fault::TooMany(s)) => reply(429, &format!("Retry-After: {s}\r\n"), r#"{"error":"slow down"}"#),
        Some(Fault::Status(code)) => reply(code, "", r#"{"error":"no"}"#),
        Some(Fault::Slow(ms)) => {
            std::thread::sleep(Duration::from_millis(ms));
            ok()
        }
        Some(Fault::Huge(n)) => {
            let text = "word ".repeat(n / 5);
            reply(200, "", &serde_json::json!({ "choices": [{ "message": { "role": "assistant", "content": text } }] }).to_string())
        }
        Some(Fault::Redirect(to)) => reply(307, &format!("Location: {to}\r\n"), ""),
        Some(Fault::Body(code, body)) => reply(code, "", &body),
        Some(Fault::TooManyUntil(s)) => {
            let date = http_date(std::time::SystemTime::now() + Duration::from_secs(s));
            reply(429, &format!("Retry-After: {date}\r\n"), r#"{"error":"slow down"}"#)
        }
        Some(Fault::List) => {
            let text = format!("kp{doc}x; Heart Failure; Cough");
            reply(200, "", &serde_json::json!({ "choices": [{ "message": { "role": "assistant", "content": text } }] }).to_string())
        }
        Some(Fault::Replay(words)) => {
            let text = format!("A note about {prompt} The patient said that {words}, as before.");
            reply(200, "", &serde_json::json!({ "choices": [{ "message": { "role": "assistant", "content": text } }] }).to_string())
        }
        None => ok(),
    };
    let _ = stream.write_all(out.as_bytes());
}

/// `t` as an HTTP date (IMF-fixdate), as a server writes Retry-After.
pub(super) fn http_date(t: std::time::SystemTime) -> String {
    let secs = t.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let (mut days, rest) = (secs / 86_400, secs % 86_400);
    let weekday = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"][(days % 7) as usize];
    let leap = |y: u64| (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let mut year = 1970;
    while days >= if leap(year) { 366 } else { 365 } {
        days -= if leap(year) { 366 } else { 365 };
        year += 1;
    }
    let lengths = [31, if leap(year) { 29 } else { 28 }, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    let mut month = 0;
    while days >= lengths[month] {
        days -= lengths[month];
        month += 1;
    }
    let name = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"][month];
    format!("{weekday}, {:02} {name} {year} {:02}:{:02}:{:02} GMT", days + 1, rest / 3600, rest % 3600 / 60, rest % 60)
}
