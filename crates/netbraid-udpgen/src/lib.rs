//! netbraid-udpgen: the emu backend's UDP traffic, one process per role,
//! each run inside a namespace as `udpgen send|recv CONFIG-JSON`.
//!
//! Every datagram starts with a header (flow id u32, sequence u64, send time
//! u64 ns of CLOCK_REALTIME, all big-endian), so the receiver counts loss,
//! reordering and one-way delay; receive times are the kernel's
//! (SO_TIMESTAMPNS). The on-off process is the simulator's (ns-2's
//! Application/Traffic/Exponential and /Pareto), drawn from the same kind
//! of named seeded stream.
//!
//! Written in Rust because a sender in Python could not keep 345 Mb/s of
//! 1500-byte datagrams on a busy two-core machine.

mod recv;
mod send;
mod socket;

pub use recv::{receive, ReceiverConfig, ReceiverReport};
pub use send::{send, SenderConfig, SenderReport};

/// Header bytes at the start of every datagram.
pub const HEADER_BYTES: usize = 20;

const USAGE: &str = "usage: udpgen send|recv CONFIG-JSON

send: datagrams from start_ns until stop_ns (CLOCK_REALTIME);
recv: prints `ready`, counts arrivals until until_ns.
Each writes its report as JSON to the configuration's `out` file.";

/// Run with command-line `args` (without the program name); returns the
/// process exit status.
pub fn main_with_args(args: &[String]) -> i32 {
    let (role, json) = match args {
        [r, j] if r == "send" || r == "recv" => (r.as_str(), j.as_str()),
        _ => {
            eprintln!("{USAGE}");
            return 2;
        }
    };
    let result = if role == "send" {
        parse::<SenderConfig>(json).and_then(|cfg| {
            let report = send(&cfg).map_err(|e| format!("sender: {e}"))?;
            write_report(&cfg.out, &report)
        })
    } else {
        parse::<ReceiverConfig>(json).and_then(|cfg| {
            let report = receive(&cfg, |_| {
                println!("ready");
                let _ = std::io::Write::flush(&mut std::io::stdout());
            })
            .map_err(|e| format!("receiver: {e}"))?;
            write_report(&cfg.out, &report)
        })
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("udpgen: {e}");
            1
        }
    }
}

fn parse<T: serde::de::DeserializeOwned>(json: &str) -> Result<T, String> {
    serde_json::from_str(json).map_err(|e| format!("bad configuration: {e}"))
}

fn write_report<T: serde::Serialize>(path: &str, report: &T) -> Result<(), String> {
    let text = serde_json::to_string(report).map_err(|e| e.to_string())?;
    std::fs::write(path, text).map_err(|e| format!("cannot write {path}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use netbraid_linkemu::rt;
    use std::sync::mpsc;

    fn sender(port: u16, kind: &str, start_ns: u64, stop_ns: u64, rate_bps: u64, packet_bytes: u32) -> SenderConfig {
        SenderConfig {
            flow_id: 7,
            dst: "127.0.0.1".into(),
            port,
            bind: None,
            start_ns,
            stop_ns,
            rate_bps,
            packet_bytes,
            kind: kind.into(),
            burst_ns: None,
            idle_ns: None,
            distribution: "exponential".into(),
            shape: 1.5,
            seed: 1,
            out: String::new(),
        }
    }

    #[test]
    fn cbr_over_loopback_keeps_its_timetable_and_loses_nothing() {
        // 20 Mb/s of 1000-byte payloads: one every 400 µs, so 0.5 s holds
        // exactly 1250 due times; loopback with an 8 MB buffer drops none.
        let start = rt::realtime_ns() + 100_000_000;
        let stop = start + 500_000_000;
        let (tx, rx) = mpsc::channel();
        let recv = std::thread::spawn(move || {
            let cfg = ReceiverConfig {
                port: 0,
                window_start_ns: start,
                window_stop_ns: stop,
                until_ns: stop + 200_000_000,
                out: String::new(),
            };
            receive(&cfg, |port| tx.send(port).unwrap()).unwrap()
        });
        let port = rx.recv().unwrap();
        let sent = send(&sender(port, "cbr", start, stop, 20_000_000, 1000)).unwrap();
        let got = recv.join().unwrap();
        assert_eq!(sent.packets_sent, 1250);
        assert_eq!(sent.send_errors, 0);
        assert_eq!(got.packets_received, 1250);
        assert_eq!(got.bytes_received, 1250 * 1000);
        assert_eq!(got.reordered, 0);
        // loopback: far below a millisecond unless the machine stalls
        assert!(
            got.delay_p50_s.unwrap() >= 0.0 && got.delay_p50_s.unwrap() < 1e-3,
            "{:?}",
            got.delay_p50_s
        );
        // the arrival rate follows the sender's rate (IP level: +28 B per datagram)
        let expected = 20e6 * 1028.0 / 1000.0;
        let rate = got.arrival_rate_bps.unwrap();
        assert!((rate / expected - 1.0).abs() < 0.05, "{rate}");
    }

    #[test]
    fn bad_configurations_are_refused_with_the_field_named() {
        let now = rt::realtime_ns();
        for (cfg, field) in [
            (sender(9, "cbr", now, now, 0, 1000), "rate_bps"),
            (sender(9, "cbr", now, now, 1_000_000, 10), "packet_bytes"),
            (sender(9, "poisson", now, now, 1_000_000, 1000), "kind"),
            (sender(9, "on_off", now, now, 1_000_000, 1000), "burst_ns"),
        ] {
            let e = send(&cfg).unwrap_err();
            assert!(e.to_string().contains(field), "{e}");
        }
        assert_eq!(main_with_args(&["send".into(), "{}".into()]), 1);
        assert_eq!(main_with_args(&["both".into(), "{}".into()]), 2);
    }
}
