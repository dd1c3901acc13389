//! What the proxy tells its operator: one JSON line per connection (and per
//! refusal), and live counters in Prometheus' text format.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use serde::Serialize;

use crate::socks5::Target;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Live counters (all since start, but `active`).
#[derive(Default)]
pub struct Counters {
    pub active: AtomicU64,
    pub accepted: AtomicU64,
    pub relayed: AtomicU64,
    pub refused: AtomicU64,
    pub failed: AtomicU64,
    /// Client to upstream.
    pub bytes_up: AtomicU64,
    /// Upstream to client.
    pub bytes_down: AtomicU64,
    pub resets: AtomicU64,
    pub timeouts: AtomicU64,
}

impl Counters {
    /// The text format; `held_bytes`: what the connections hold now of
    /// `--max-memory` (read from the budget).
    pub fn prometheus(&self, held_bytes: u64) -> String {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let mut out = String::new();
        let mut metric = |name: &str, kind: &str, help: &str, lines: &[(&str, u64)]| {
            out += &format!("# HELP netbraid_proxy_{name} {help}\n# TYPE netbraid_proxy_{name} {kind}\n");
            for (labels, v) in lines {
                out += &format!("netbraid_proxy_{name}{labels} {v}\n");
            }
        };
        metric(
            "connections_active",
            "gauge",
            "Connections being relayed or set up now.",
            &[("", g(&self.active))],
        );
        metric(
            "connections_total",
            "counter",
            "Connections accepted.",
            &[("", g(&self.accepted))],
        );
        metric(
            "memory_bytes",
            "gauge",
            "Bytes the connections hold now (read, not yet delivered), of --max-memory.",
            &[("", held_bytes)],
        );
        metric(
            "outcomes_total",
            "counter",
            "Connections ended, by outcome: relayed (reached the upstream), refused (by the allow-list, \
             authentication or a malformed request), failed (the upstream could not be reached).",
            &[
                ("{outcome=\"relayed\"}", g(&self.relayed)),
                ("{outcome=\"refused\"}", g(&self.refused)),
                ("{outcome=\"failed\"}", g(&self.failed)),
            ],
        );
        metric(
            "bytes_total",
            "counter",
            "Bytes relayed, by direction.",
            &[
                ("{direction=\"up\"}", g(&self.bytes_up)),
                ("{direction=\"down\"}", g(&self.bytes_down)),
            ],
        );
        metric(
            "resets_total",
            "counter",
            "Relayed connections ended by a reset on either leg.",
            &[("", g(&self.resets))],
        );
        metric(
            "timeouts_total",
            "counter",
            "Connections ended by the idle, handshake or connect timeout.",
            &[("", g(&self.timeouts))],
        );
        out
    }
}

/// One line of `--log-json`.
#[derive(Serialize, Debug, Default)]
pub struct Record {
    pub id: u64,
    /// "relayed", "refused" or "failed".
    pub outcome: &'static str,
    pub start_unix: f64,
    pub end_unix: f64,
    pub duration_s: f64,
    pub client: Option<SocketAddr>,
    pub listen: Option<SocketAddr>,
    pub mode: &'static str,
    /// What was asked for (a SOCKS5 name, an original destination, --to).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destination: Option<Target>,
    /// The address connected to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upstream: Option<SocketAddr>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<SocketAddr>,
    /// Client to upstream.
    pub bytes_up: u64,
    /// Upstream to client.
    pub bytes_down: u64,
    /// Why it ended, e.g. "closed", "client reset", "idle timeout",
    /// "not in --allow", "connect: Connection refused".
    pub reason: String,
}

/// Appends records to the `--log-json` file, one write per line.
pub struct RecordLog {
    file: Option<Mutex<File>>,
}

impl RecordLog {
    pub fn open(path: Option<&Path>) -> io::Result<RecordLog> {
        let file = match path {
            Some(p) => Some(Mutex::new(OpenOptions::new().create(true).append(true).open(p)?)),
            None => None,
        };
        Ok(RecordLog { file })
    }

    pub fn enabled(&self) -> bool {
        self.file.is_some()
    }

    pub fn write(&self, rec: &Record) {
        if let Some(f) = &self.file {
            let mut line = serde_json::to_vec(rec).expect("records serialise");
            line.push(b'\n');
            let mut f = f.lock().unwrap_or_else(|p| p.into_inner());
            if let Err(e) = f.write_all(&line) {
                eprintln!("netbraid proxy: cannot write --log-json: {e}");
            }
        }
    }
}

/// Serves the counters over HTTP/1.x at `/metrics` (and `/`), one request
/// per connection; a scraper sends nothing else.
pub async fn serve_metrics(
    listener: TcpListener,
    counters: std::sync::Arc<Counters>,
    held_bytes: impl Fn() -> u64 + Clone + Send + 'static,
) {
    loop {
        let Ok((mut s, _)) = listener.accept().await else {
            // Out of descriptors for a moment: wait rather than spin.
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let counters = counters.clone();
        let held_bytes = held_bytes.clone();
        tokio::spawn(async move {
            let mut req = Vec::with_capacity(512);
            let mut buf = [0u8; 512];
            let read = async {
                while !req.windows(4).any(|w| w == b"\r\n\r\n") && req.len() < 8192 {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return false,
                        Ok(n) => req.extend_from_slice(&buf[..n]),
                    }
                }
                true
            };
            if !matches!(tokio::time::timeout(Duration::from_secs(5), read).await, Ok(true)) {
                return;
            }
            let line = req.split(|&b| b == b'\r').next().unwrap_or_default();
            let path = line.split(|&b| b == b' ').nth(1).unwrap_or_default();
            let (status, body) = if line.starts_with(b"GET ") && (path == b"/metrics" || path == b"/") {
                ("200 OK", counters.prometheus(held_bytes()))
            } else {
                ("404 Not Found", "GET /metrics\n".to_string())
            };
            let head = format!(
                "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n",
                body.len()
            );
            let _ = s.write_all(head.as_bytes()).await;
            let _ = s.write_all(body.as_bytes()).await;
            let _ = s.shutdown().await;
        });
    }
}

pub fn is_loopback(addr: SocketAddr) -> bool {
    crate::allow::canonical(addr.ip()).is_loopback()
}
