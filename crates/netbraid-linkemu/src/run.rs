//! The running emulator: per link direction, a reader thread takes packets
//! from the ingress TUN and asks the shaper for a verdict; a writer thread
//! holds each admitted packet until its delivery time and writes it to the
//! egress TUN. Deliveries are in FIFO order, so one sleeping writer suffices.

use std::fs::File;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;

use serde::Serialize;

use crate::config::{Config, DirectionConfig};
use crate::rt;
use crate::shaper::{DirectionCounters, Shaper, Verdict};

/// Shared state of one direction, read by the stats writer.
pub struct Direction {
    pub shaper: Mutex<Shaper>,
    /// Writes the egress device refused (for example while it was down).
    pub write_errors: AtomicU64,
}

#[derive(Serialize)]
struct DirectionStats {
    #[serde(flatten)]
    counters: DirectionCounters,
    write_errors: u64,
}

#[derive(Serialize)]
struct LinkStats {
    ab: DirectionStats,
    ba: DirectionStats,
}

#[derive(Serialize)]
pub struct Stats {
    links: std::collections::BTreeMap<String, LinkStats>,
    /// Whether SCHED_FIFO and 1 ns timer slack were granted.
    realtime: bool,
    timer_slack: bool,
}

pub struct Emulator {
    links: Vec<(String, Arc<Direction>, Arc<Direction>)>,
    pub realtime: bool,
    pub timer_slack: bool,
}

fn thread_setup(priority: i32) -> (bool, bool) {
    let slack = rt::tight_timer_slack().is_ok();
    let fifo = priority > 0 && rt::realtime(priority).is_ok();
    (fifo, slack)
}

fn spawn_direction(
    name: String,
    cfg: &DirectionConfig,
    seed: u64,
    mut ingress: File,
    mut egress: File,
    priority: i32,
) -> (Arc<Direction>, bool, bool) {
    let shaper = Shaper::new(
        cfg.rate_bps,
        cfg.delay_ns,
        cfg.jitter_ns,
        cfg.limit(),
        cfg.loss_model(),
        seed,
        &name,
    );
    let dir = Arc::new(Direction {
        shaper: Mutex::new(shaper),
        write_errors: AtomicU64::new(0),
    });
    let (tx, rx) = mpsc::channel::<(u64, Vec<u8>)>();
    let (granted_tx, granted_rx) = mpsc::channel();

    let reader_dir = Arc::clone(&dir);
    thread::Builder::new()
        .name(format!("rd {name}"))
        .spawn(move || {
            let _ = granted_tx.send(thread_setup(priority));
            let mut buf = vec![0u8; 65_536];
            loop {
                let n = match ingress.read(&mut buf) {
                    Ok(0) => return,
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => return,
                };
                let now = rt::now_ns();
                let verdict = reader_dir.shaper.lock().unwrap().offer(now, n as u32);
                if let Verdict::Deliver { at } = verdict {
                    if tx.send((at, buf[..n].to_vec())).is_err() {
                        return;
                    }
                }
            }
        })
        .expect("spawn reader");

    let writer_dir = Arc::clone(&dir);
    thread::Builder::new()
        .name(format!("wr {name}"))
        .spawn(move || {
            thread_setup(priority);
            for (at, packet) in rx {
                rt::sleep_until(at);
                if egress.write(&packet).is_err() {
                    writer_dir.write_errors.fetch_add(1, Ordering::Relaxed);
                }
            }
        })
        .expect("spawn writer");

    let (fifo, slack) = granted_rx.recv().unwrap_or((false, false));
    (dir, fifo, slack)
}

impl Emulator {
    /// Create every TUN device, then start forwarding. Devices are created
    /// before any thread starts, so a failure leaves nothing running.
    pub fn start(cfg: &Config) -> Result<Emulator, String> {
        let mut devices = Vec::new();
        for l in &cfg.links {
            let open = |dev: &str| {
                crate::tun::create(dev).map_err(|e| {
                    format!(
                        "link {}: cannot create TUN device {dev}: {e} (needs root or CAP_NET_ADMIN and /dev/net/tun)",
                        l.name
                    )
                })
            };
            devices.push((open(&l.a_dev)?, open(&l.b_dev)?));
        }
        let mut links = Vec::new();
        let (mut realtime, mut timer_slack) = (true, true);
        for (l, (a, b)) in cfg.links.iter().zip(devices) {
            let clone = |f: &File| f.try_clone().map_err(|e| format!("link {}: {e}", l.name));
            let (a2, b2) = (clone(&a)?, clone(&b)?);
            let (ab, f1, s1) = spawn_direction(format!("{}/ab", l.name), &l.ab, cfg.seed, a, b2, cfg.realtime_priority);
            let (ba, f2, s2) = spawn_direction(format!("{}/ba", l.name), &l.ba, cfg.seed, b, a2, cfg.realtime_priority);
            realtime &= f1 && f2;
            timer_slack &= s1 && s2;
            links.push((l.name.clone(), ab, ba));
        }
        Ok(Emulator {
            links,
            realtime,
            timer_slack,
        })
    }

    pub fn stats(&self) -> Stats {
        let read = |d: &Direction| DirectionStats {
            counters: d.shaper.lock().unwrap().counters,
            write_errors: d.write_errors.load(Ordering::Relaxed),
        };
        Stats {
            links: self
                .links
                .iter()
                .map(|(n, ab, ba)| {
                    (
                        n.clone(),
                        LinkStats {
                            ab: read(ab),
                            ba: read(ba),
                        },
                    )
                })
                .collect(),
            realtime: self.realtime,
            timer_slack: self.timer_slack,
        }
    }

    /// Write the counters to `path` atomically (temporary file, then rename),
    /// so a reader never sees half a file.
    pub fn write_stats(&self, path: &str) -> std::io::Result<()> {
        let tmp = format!("{path}.tmp");
        std::fs::write(&tmp, serde_json::to_vec_pretty(&self.stats()).expect("serialisable"))?;
        std::fs::rename(tmp, path)
    }
}
