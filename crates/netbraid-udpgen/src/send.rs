//! The sender: CBR (one datagram every size·8/rate, the payload rate as
//! iperf's -b) or the simulator's on-off process, on absolute deadlines.
//! When the process wakes late it sends what was due at once, so the mean
//! rate holds even when the scheduler does not.

use std::io;
use std::net::UdpSocket;

use netbraid_linkemu::rt;
use netbraid_sim::app::{OnOffDistribution, OnOffGaps};
use netbraid_sim::engine::time::serialisation_time;
use netbraid_sim::engine::RandomStream;
use serde::{Deserialize, Serialize};

use crate::socket;
use crate::HEADER_BYTES;

#[derive(Debug, Deserialize)]
pub struct SenderConfig {
    pub flow_id: u32,
    pub dst: String,
    pub port: u16,
    /// Local address to send from (which interface of a multi-homed host).
    #[serde(default)]
    pub bind: Option<String>,
    /// CLOCK_REALTIME, ns.
    pub start_ns: u64,
    pub stop_ns: u64,
    pub rate_bps: u64,
    /// UDP payload bytes per datagram (at least the header's 20).
    pub packet_bytes: u32,
    /// "cbr" or "on_off".
    pub kind: String,
    #[serde(default)]
    pub burst_ns: Option<u64>,
    #[serde(default)]
    pub idle_ns: Option<u64>,
    #[serde(default = "exponential")]
    pub distribution: String,
    #[serde(default = "default_shape")]
    pub shape: f64,
    pub seed: u64,
    pub out: String,
}

fn exponential() -> String {
    "exponential".into()
}

fn default_shape() -> f64 {
    1.5
}

#[derive(Debug, Serialize)]
pub struct SenderReport {
    pub packets_sent: u64,
    pub bytes_sent: u64,
    /// Datagrams the kernel refused (e.g. no buffer space): sent and lost.
    pub send_errors: u64,
    /// Datagrams sent more than 1 ms after their due time: how far the
    /// scheduler kept the sender from its timetable.
    pub late: u64,
}

/// What to wait after each datagram.
enum Timetable {
    Cbr(u64),
    OnOff(OnOffGaps),
}

impl Timetable {
    fn next_gap(&mut self) -> u64 {
        match self {
            Timetable::Cbr(interval) => *interval,
            Timetable::OnOff(gaps) => gaps.next_gap(),
        }
    }
}

fn timetable(cfg: &SenderConfig) -> io::Result<Timetable> {
    let invalid = |m: String| io::Error::new(io::ErrorKind::InvalidInput, m);
    if cfg.rate_bps == 0 {
        return Err(invalid("rate_bps must be positive".into()));
    }
    if (cfg.packet_bytes as usize) < HEADER_BYTES {
        return Err(invalid(format!("packet_bytes must be at least {HEADER_BYTES}")));
    }
    match cfg.kind.as_str() {
        "cbr" => Ok(Timetable::Cbr(
            serialisation_time(cfg.packet_bytes, cfg.rate_bps).max(1),
        )),
        "on_off" => {
            let distribution = match cfg.distribution.as_str() {
                "exponential" => OnOffDistribution::Exponential,
                "pareto" if cfg.shape > 1.0 && cfg.shape.is_finite() => OnOffDistribution::Pareto { shape: cfg.shape },
                other => {
                    return Err(invalid(format!(
                        "distribution {other:?} (shape {}) is not exponential or pareto with shape > 1",
                        cfg.shape
                    )))
                }
            };
            let (Some(burst), Some(idle)) = (cfg.burst_ns, cfg.idle_ns) else {
                return Err(invalid("on_off needs burst_ns and idle_ns".into()));
            };
            let rng = RandomStream::new(cfg.seed, "udpgen:onoff");
            Ok(Timetable::OnOff(OnOffGaps::new(
                cfg.rate_bps,
                cfg.packet_bytes,
                burst,
                idle,
                distribution,
                rng,
            )))
        }
        other => Err(invalid(format!("kind {other:?} is not cbr or on_off"))),
    }
}

pub fn send(cfg: &SenderConfig) -> io::Result<SenderReport> {
    let mut table = timetable(cfg)?;
    let sock = UdpSocket::bind((cfg.bind.as_deref().unwrap_or("0.0.0.0"), 0))?;
    socket::set_buffer(&sock, false, 4 << 20);
    sock.connect((cfg.dst.as_str(), cfg.port))?;
    let _ = rt::tight_timer_slack();
    let mut datagram = vec![0u8; cfg.packet_bytes as usize];
    datagram[..4].copy_from_slice(&cfg.flow_id.to_be_bytes());
    let mut report = SenderReport {
        packets_sent: 0,
        bytes_sent: 0,
        send_errors: 0,
        late: 0,
    };
    // On-off waits an OFF time before its first burst, as in the simulator.
    let mut due = match &mut table {
        Timetable::Cbr(_) => cfg.start_ns,
        Timetable::OnOff(gaps) => cfg.start_ns.saturating_add(gaps.next_gap()),
    };
    while due < cfg.stop_ns {
        rt::sleep_until_realtime(due);
        let now = rt::realtime_ns();
        while due <= now && due < cfg.stop_ns {
            if now - due > 1_000_000 {
                report.late += 1;
            }
            datagram[4..12].copy_from_slice(&report.packets_sent.to_be_bytes());
            datagram[12..20].copy_from_slice(&rt::realtime_ns().to_be_bytes());
            if sock.send(&datagram).is_err() {
                report.send_errors += 1;
            }
            report.packets_sent += 1;
            due = due.saturating_add(table.next_gap());
        }
    }
    report.bytes_sent = report.packets_sent * cfg.packet_bytes as u64;
    Ok(report)
}
