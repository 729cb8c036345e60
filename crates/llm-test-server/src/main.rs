//! `dpkps-llm-test-server`: a local OpenAI-compatible chat-completions server for the browser
//! tests. It writes a sentence from the keyphrases it receives, records every request, and can
//! be told to misbehave. Standard library only; one thread per connection; loopback only.
//!
//! ```text
//! dpkps-llm-test-server [--port N]      prints "listening http://127.0.0.1:PORT" on stdout
//! POST /v1/chat/completions             the model ("test-model")
//! GET  /v1/models                       {"data":[{"id":"test-model"}]}
//! POST /_control {"faults":["429","429-wait","500","timeout","garbage","empty","formula","huge","huge-stream","redirect","replay","ok"],
//!                 "delay_ms":0,"hold_ms":30000,"allow_origins":["http://127.0.0.1:8080"],"replay":"words"}
//!                                       faults are used up one per completion request, in order;
//!                                       "429-wait": a 429 asking for 30 s (Retry-After: 30)
//!                                       "huge": a 200 of 2 MiB (Content-Length says so);
//!                                       "huge-stream": the same, chunked, with no length;
//!                                       "redirect": a 307 to this server's /v1/chat/completions?redirected=1
//!                                       (a client that follows it sends the request again: recorded)
//!                                       "replay": a good document that also holds the words of
//!                                       "replay" (as a model repeating a private note would)
//!                                       allow_origins: answer only those browser origins (see below)
//! GET  /_requests                       every completion request so far (body, fault applied)
//! POST /_reset                          forget requests and faults
//! ```
//! Every response carries permissive CORS headers (`Access-Control-Allow-Origin: *`, which a
//! page opened from a file, origin `null`, also passes): the app calls from another origin. With
//! `allow_origins` set, a request whose `Origin` is not listed gets a bare 403 without CORS
//! headers, as Ollama answers an origin missing from OLLAMA_ORIGINS: the browser then refuses
//! the exchange, and the page must say which server setting is missing.

#[cfg(not(target_arch = "wasm32"))]
mod server {
    use std::collections::VecDeque;
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use serde_json::{json, Value};

    #[derive(Default)]
    struct Shared {
        requests: Vec<Value>,
        faults: VecDeque<String>,
        delay_ms: u64,
        hold_ms: u64,
        allow_origins: Option<Vec<String>>,
        /// The words a "replay" reply repeats.
        replay: String,
    }

    type State = Arc<Mutex<Shared>>;

    struct Request {
        method: String,
        path: String,
        headers: Vec<(String, String)>,
        body: String,
    }

    fn read_request(stream: &mut TcpStream) -> Option<Request> {
        let mut reader = BufReader::new(stream.try_clone().ok()?);
        let mut line = String::new();
        reader.read_line(&mut line).ok()?;
        let mut parts = line.split_whitespace();
        let method = parts.next()?.to_string();
        let path = parts.next()?.to_string();
        let mut headers = Vec::new();
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).ok()? == 0 {
                break;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
            }
        }
        let len: usize = headers.iter().find(|(k, _)| k == "content-length").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
        let mut body = vec![0u8; len];
        reader.read_exact(&mut body).ok()?;
        Some(Request { method, path, headers, body: String::from_utf8_lossy(&body).into_owned() })
    }

    fn respond(stream: &mut TcpStream, status: u16, reason: &str, content_type: &str, body: &str, extra: &str) {
        let head = format!(
            "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
             Access-Control-Allow-Origin: *\r\nAccess-Control-Allow-Headers: authorization, content-type\r\n\
             Access-Control-Allow-Methods: GET, POST, OPTIONS\r\nAccess-Control-Expose-Headers: retry-after\r\n\
             {extra}Connection: close\r\n\r\n",
            body.len()
        );
        let _ = stream.write_all(head.as_bytes());
        let _ = stream.write_all(body.as_bytes());
        let _ = stream.flush();
    }

    /// The "model": a sentence that uses every keyphrase of the last user message.
    fn write_document(body: &Value) -> String {
        let last_user = body["messages"]
            .as_array()
            .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
            .and_then(|m| m["content"].as_str())
            .unwrap_or("");
        let line = last_user.lines().find(|l| l.to_lowercase().contains("keyphrase")).unwrap_or(last_user);
        let list = line.rsplit_once(':').map_or(line, |(_, r)| r).trim().trim_end_matches('.');
        // The app's template separates keyphrases with "; " (a keyphrase may hold a comma); a
        // custom template without a semicolon is read as a comma-separated list.
        let sep = if list.contains(';') { ';' } else { ',' };
        let phrases: Vec<&str> = list.split(sep).map(str::trim).filter(|p| !p.is_empty()).collect();
        let seen = match phrases.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("The patient was seen for {} and {last}.", rest.join(", ")),
            Some((last, _)) => format!("The patient was seen for {last}."),
            None => "The patient was seen.".into(),
        };
        // Prose of a few sentences, so that the app's reply check keeps it at once.
        format!(
            "{seen} The history was taken in full, and the examination was unremarkable apart from the findings \
             above. Each finding was discussed with the patient, who asked sensible questions about what comes next. \
             A plan was agreed, with a review in four weeks and advice to return sooner if anything changes."
        )
    }

    /// A chat completion of 2 MiB.
    fn huge_reply() -> String {
        json!({ "choices": [{ "index": 0, "message": { "role": "assistant", "content": "word ".repeat((2 << 20) / 5) } }] }).to_string()
    }

    fn completion(stream: &mut TcpStream, req: &Request, state: &State) {
        let body: Value = serde_json::from_str(&req.body).unwrap_or(Value::Null);
        let (fault, delay, hold, replay) = {
            let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
            let fault = s.faults.pop_front().unwrap_or_else(|| "ok".into());
            let authorization = req.headers.iter().any(|(k, _)| k == "authorization");
            s.requests.push(json!({ "body": req.body, "fault": fault, "authorization": authorization, "path": req.path }));
            (fault, s.delay_ms, s.hold_ms, s.replay.clone())
        };
        std::thread::sleep(Duration::from_millis(delay));
        match fault.as_str() {
            "429" => respond(stream, 429, "Too Many Requests", "application/json", r#"{"error":"slow down"}"#, "Retry-After: 0\r\n"),
            // A long wait before the retry: Stop must not wait it out.
            "429-wait" => respond(stream, 429, "Too Many Requests", "application/json", r#"{"error":"slow down"}"#, "Retry-After: 30\r\n"),
            "500" => respond(stream, 500, "Internal Server Error", "text/plain", "boom", ""),
            "garbage" => respond(stream, 200, "OK", "application/json", "<html>not a completion", ""),
            "empty" => respond(stream, 200, "OK", "application/json", r#"{"choices":[]}"#, ""),
            "timeout" => std::thread::sleep(Duration::from_millis(hold)),
            // More than any reply of the app's max tokens: the app stops reading it.
            "huge" => respond(stream, 200, "OK", "application/json", &huge_reply(), ""),
            "huge-stream" => {
                let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\
                            Access-Control-Allow-Origin: *\r\nConnection: close\r\n\r\n";
                let _ = stream.write_all(head.as_bytes());
                for chunk in huge_reply().as_bytes().chunks(64 * 1024) {
                    if stream.write_all(format!("{:x}\r\n", chunk.len()).as_bytes()).and_then(|()| stream.write_all(chunk)).and_then(|()| stream.write_all(b"\r\n")).is_err() {
                        return; // the client stopped reading
                    }
                }
                let _ = stream.write_all(b"0\r\n\r\n");
            }
            "redirect" => {
                let host = req.headers.iter().find(|(k, _)| k == "host").map_or("127.0.0.1", |(_, v)| v.as_str());
                let to = format!("Location: http://{host}/v1/chat/completions?redirected=1\r\n");
                respond(stream, 307, "Temporary Redirect", "text/plain", "", &to)
            }
            _ => {
                // "formula": a reply a spreadsheet would run as a formula (the CSV download
                // must neutralise it).
                let text = match fault.as_str() {
                    "formula" => format!("=HYPERLINK(\"http://127.0.0.1:9/x\",\"open\") {}", write_document(&body)),
                    // A private note's words, repeated: the page's replay check must flag it.
                    "replay" => format!("{} The patient's own account: {replay}.", write_document(&body)),
                    _ => write_document(&body),
                };
                let reply = json!({
                    "id": "chatcmpl-test", "object": "chat.completion", "model": body["model"],
                    "choices": [{ "index": 0, "finish_reason": "stop", "message": { "role": "assistant", "content": text } }],
                    "usage": { "prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0 }
                });
                respond(stream, 200, "OK", "application/json", &reply.to_string(), "");
            }
        }
    }

    fn handle(mut stream: TcpStream, state: State) {
        let Some(req) = read_request(&mut stream) else { return };
        let path = req.path.split('?').next().unwrap_or("").to_string();
        let origin = req.headers.iter().find(|(k, _)| k == "origin").map(|(_, v)| v.clone());
        let refused = {
            let s = state.lock().unwrap_or_else(|e| e.into_inner());
            matches!((&s.allow_origins, &origin), (Some(list), Some(o)) if !list.contains(o))
        };
        if refused && !path.starts_with("/_") {
            let _ = stream.write_all(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            let _ = stream.flush();
            return;
        }
        match (req.method.as_str(), path.as_str()) {
            ("OPTIONS", _) => respond(&mut stream, 204, "No Content", "text/plain", "", ""),
            ("POST", "/v1/chat/completions") => completion(&mut stream, &req, &state),
            ("GET", "/v1/models") => respond(
                &mut stream,
                200,
                "OK",
                "application/json",
                r#"{"object":"list","data":[{"id":"test-model","object":"model"}]}"#,
                "",
            ),
            ("POST", "/_control") => {
                let v: Value = serde_json::from_str(&req.body).unwrap_or(Value::Null);
                let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
                s.faults = v["faults"].as_array().map_or_else(VecDeque::new, |a| {
                    a.iter().filter_map(|f| f.as_str().map(str::to_string)).collect()
                });
                s.delay_ms = v["delay_ms"].as_u64().unwrap_or(0);
                s.hold_ms = v["hold_ms"].as_u64().unwrap_or(30_000);
                s.allow_origins = v["allow_origins"]
                    .as_array()
                    .map(|a| a.iter().filter_map(|o| o.as_str().map(str::to_string)).collect());
                s.replay = v["replay"].as_str().unwrap_or_default().to_string();
                respond(&mut stream, 200, "OK", "application/json", "{}", "");
            }
            ("GET", "/_requests") => {
                let s = state.lock().unwrap_or_else(|e| e.into_inner());
                respond(&mut stream, 200, "OK", "application/json", &Value::from(s.requests.clone()).to_string(), "");
            }
            ("POST", "/_reset") => {
                *state.lock().unwrap_or_else(|e| e.into_inner()) = Shared { hold_ms: 30_000, ..Shared::default() };
                respond(&mut stream, 200, "OK", "application/json", "{}", "");
            }
            _ => respond(&mut stream, 404, "Not Found", "text/plain", "not found", ""),
        }
    }

    pub fn main() {
        let args: Vec<String> = std::env::args().collect();
        let port = args.iter().position(|a| a == "--port").and_then(|i| args.get(i + 1)).and_then(|p| p.parse::<u16>().ok()).unwrap_or(0);
        let listener = match TcpListener::bind(("127.0.0.1", port)) {
            Ok(l) => l,
            Err(e) => {
                eprintln!("cannot listen on 127.0.0.1:{port}: {e}");
                std::process::exit(1);
            }
        };
        let addr = listener.local_addr().map(|a| a.to_string()).unwrap_or_default();
        println!("listening http://{addr}");
        let _ = std::io::stdout().flush();
        let state: State = Arc::new(Mutex::new(Shared { hold_ms: 30_000, ..Shared::default() }));
        for stream in listener.incoming().flatten() {
            let state = state.clone();
            std::thread::spawn(move || handle(stream, state));
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn reads_every_keyphrase_of_the_apps_prompt_whole() {
            let p = dpkps_core::llm::prompt::PromptSettings::default();
            let keyphrases = vec!["Amino Acids, Peptides, and Proteins".to_string(), "Cough".into(), "Rheumatoid Arthritis".into()];
            let messages = p.messages(&keyphrases, Some("cardiology"));
            let doc = write_document(&json!({ "messages": messages }));
            assert!(doc.starts_with("The patient was seen for Amino Acids, Peptides, and Proteins, Cough and Rheumatoid Arthritis. "), "{doc}");
            // Prose that uses every keyphrase: the app keeps it without asking again.
            let check = dpkps_core::llm::check_reply(&doc, &keyphrases, &[]);
            assert!(check.usable() && check.used == 3, "{check:?}");
            let custom = json!({ "messages": [{ "role": "user", "content": "keyphrases: a, b" }] });
            assert!(write_document(&custom).starts_with("The patient was seen for a and b. "));
        }

        /// Sends one HTTP request to a fresh server on a free port; the raw response.
        fn exchange(state: &State, request: &str) -> String {
            let listener = TcpListener::bind(("127.0.0.1", 0)).expect("bind");
            let addr = listener.local_addr().expect("addr");
            let state = state.clone();
            let server = std::thread::spawn(move || {
                if let Ok((stream, _)) = listener.accept() {
                    handle(stream, state);
                }
            });
            let mut client = TcpStream::connect(addr).expect("connect");
            client.write_all(request.as_bytes()).expect("write");
            let mut reply = String::new();
            client.read_to_string(&mut reply).expect("read");
            server.join().expect("server thread");
            reply
        }

        #[test]
        fn faults_are_used_in_order_and_429_wait_asks_for_30_seconds() {
            let state: State = Arc::new(Mutex::new(Shared { hold_ms: 30_000, ..Shared::default() }));
            let control = r#"{"faults":["429-wait","429"]}"#;
            let reply = exchange(&state, &format!("POST /_control HTTP/1.1\r\nContent-Length: {}\r\n\r\n{control}", control.len()));
            assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
            let body = r#"{"model":"test-model","messages":[{"role":"user","content":"keyphrases: a, b"}]}"#;
            let completion = format!("POST /v1/chat/completions HTTP/1.1\r\nContent-Length: {}\r\n\r\n{body}", body.len());
            let replies: Vec<String> = (0..3).map(|_| exchange(&state, &completion)).collect();
            assert!(replies[0].starts_with("HTTP/1.1 429") && replies[0].contains("\r\nRetry-After: 30\r\n"), "{}", replies[0]);
            assert!(replies[1].starts_with("HTTP/1.1 429") && replies[1].contains("\r\nRetry-After: 0\r\n"), "{}", replies[1]);
            assert!(replies[2].starts_with("HTTP/1.1 200") && replies[2].contains("A plan was agreed"), "{}", replies[2]);
            let faults: Vec<Value> = state.lock().expect("state").requests.iter().map(|r| r["fault"].clone()).collect();
            assert_eq!(faults, vec![json!("429-wait"), json!("429"), json!("ok")]);
        }
    }
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    server::main();
}

#[cfg(target_arch = "wasm32")]
fn main() {}
