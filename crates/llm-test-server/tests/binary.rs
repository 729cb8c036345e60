//! The built server as the browser tests start it (tests/e2e/harness.mjs): it prints where it
//! listens, then answers there. Being an integration test, it also has `cargo test` build the
//! binary itself (`CARGO_BIN_EXE_…`, in the target folder's `debug/`), which the end-to-end
//! tests run: scripts/test.sh needs no separate `cargo build` for it.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};

#[test]
fn the_binary_listens_where_it_says_and_lists_its_model() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_dpkps-llm-test-server"))
        .args(["--port", "0"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the server");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("its first line");
    let reply = line.trim().strip_prefix("listening http://").map(|addr| {
        let mut s = std::net::TcpStream::connect(addr).expect("connect where it said");
        write!(s, "GET /v1/models HTTP/1.1\r\nHost: {addr}\r\n\r\n").expect("send");
        let mut reply = String::new();
        s.read_to_string(&mut reply).expect("read until it closes");
        reply
    });
    let _ = child.kill();
    let _ = child.wait();
    let reply = reply.unwrap_or_else(|| panic!("no address in its first line: {line:?}"));
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    assert!(reply.contains(r#""data":[{"id":"test-model","object":"model"}]"#), "{reply}");
}
