//! The receiver: counts datagrams, bytes, reordering and one-way delay
//! (kernel receive time − the sender's stamp; both CLOCK_REALTIME, which
//! namespaces share) until `until_ns`.

use std::io;
use std::net::UdpSocket;

use netbraid_linkemu::rt;
use serde::{Deserialize, Serialize};

use crate::socket;
use crate::HEADER_BYTES;

/// IPv4 + UDP header bytes: arrival rates are reported at the IP level.
const IP_UDP_HEADER: u64 = 28;

#[derive(Debug, Deserialize)]
pub struct ReceiverConfig {
    pub port: u16,
    /// The measurement window [window_start_ns, window_stop_ns), CLOCK_REALTIME.
    pub window_start_ns: u64,
    pub window_stop_ns: u64,
    pub until_ns: u64,
    pub out: String,
}

#[derive(Debug, Default, Serialize)]
pub struct ReceiverReport {
    pub packets_received: u64,
    pub bytes_received: u64,
    pub window_packets: u64,
    pub window_bytes: u64,
    pub reordered: u64,
    pub delay_p50_s: Option<f64>,
    pub delay_p99_s: Option<f64>,
    pub delay_min_s: Option<f64>,
    pub delay_max_s: Option<f64>,
    pub delay_mean_s: Option<f64>,
    /// IP-level rate between the first and the last arrival.
    pub arrival_rate_bps: Option<f64>,
}

/// The q-quantile as the smallest value with at least q of the sample at
/// or below it.
fn quantile(sorted: &[i64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let k = ((q * sorted.len() as f64).ceil() as usize)
        .saturating_sub(1)
        .min(sorted.len() - 1);
    Some(sorted[k] as f64 / 1e9)
}

/// Bind, call `ready` with the local port once listening, then receive
/// until `until_ns`.
pub fn receive(cfg: &ReceiverConfig, ready: impl FnOnce(u16)) -> io::Result<ReceiverReport> {
    let sock = UdpSocket::bind(("0.0.0.0", cfg.port))?;
    socket::set_buffer(&sock, true, 8 << 20);
    socket::enable_timestamps(&sock)?;
    ready(sock.local_addr()?.port());
    let mut r = ReceiverReport::default();
    let mut buf = vec![0u8; 65536];
    let mut delays: Vec<i64> = Vec::new();
    let mut max_seq: Option<u64> = None;
    let (mut first, mut last) = (None::<u64>, 0u64);
    let mut bytes_after_first = 0u64;
    loop {
        let now = rt::realtime_ns();
        if now >= cfg.until_ns {
            break;
        }
        let wait_ms = ((cfg.until_ns - now) / 1_000_000).clamp(1, 500) as i32;
        if !socket::wait_readable(&sock, wait_ms)? {
            continue;
        }
        while let Some((n, stamp)) = socket::receive_stamped(&sock, &mut buf)? {
            if n < HEADER_BYTES {
                continue;
            }
            let t = stamp.unwrap_or_else(rt::realtime_ns);
            let seq = u64::from_be_bytes(buf[4..12].try_into().unwrap());
            let sent_at = u64::from_be_bytes(buf[12..20].try_into().unwrap());
            r.packets_received += 1;
            r.bytes_received += n as u64;
            match max_seq {
                Some(m) if seq < m => r.reordered += 1,
                _ => max_seq = Some(seq),
            }
            delays.push(t as i64 - sent_at as i64);
            if first.is_none() {
                first = Some(t);
            } else {
                bytes_after_first += n as u64 + IP_UDP_HEADER;
            }
            last = t;
            if cfg.window_start_ns <= t && t < cfg.window_stop_ns {
                r.window_packets += 1;
                r.window_bytes += n as u64;
            }
        }
    }
    delays.sort_unstable();
    r.delay_p50_s = quantile(&delays, 0.5);
    r.delay_p99_s = quantile(&delays, 0.99);
    r.delay_min_s = quantile(&delays, 0.0);
    r.delay_max_s = quantile(&delays, 1.0);
    if !delays.is_empty() {
        r.delay_mean_s = Some(delays.iter().map(|&d| d as f64).sum::<f64>() / delays.len() as f64 / 1e9);
    }
    if let Some(f) = first {
        if last > f {
            r.arrival_rate_bps = Some(bytes_after_first as f64 * 8e9 / (last - f) as f64);
        }
    }
    Ok(r)
}
