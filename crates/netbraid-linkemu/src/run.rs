//! The running emulator: per link direction, a reader thread takes packets
//! from the ingress TUN and asks the shaper for a verdict; a writer thread
//! holds each admitted packet until its delivery time and writes it to the
//! egress TUN. Deliveries are in FIFO order, so one sleeping writer suffices.
//! The writer counts the packets it could not write on time.

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

/// A delivery this much after its due time counts as late: the accuracy
/// target for the one-way delay's 99th percentile is within 1 ms.
pub const LATE_NS: u64 = 1_000_000;

/// Shared state of one direction, read by the stats writer.
pub struct Direction {
    pub shaper: Mutex<Shaper>,
    /// Writes the egress device refused (for example while it was down).
    pub write_errors: AtomicU64,
    /// Packets written more than `LATE_NS` after their delivery time: the
    /// machine did not keep up (CPU, scheduling), so the link was not
    /// emulated faithfully.
    pub late_packets: AtomicU64,
    pub max_late_ns: AtomicU64,
}

#[derive(Serialize)]
struct DirectionStats {
    #[serde(flatten)]
    counters: DirectionCounters,
    write_errors: u64,
    late_packets: u64,
    max_late_ns: u64,
    /// Of `forwarded_*`, what was still queued or being serialised when
    /// the counters were read.
    unsent_packets: u64,
    unsent_bytes: u64,
    /// Of `queue_wait_ns`, the waits still to come when read.
    queue_wait_ahead_ns: u64,
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
    /// When the counters were read (ns since the Unix epoch), so a reader
    /// that asked for a snapshot (SIGUSR1) knows it has the new one and at
    /// what instant the counters held.
    taken_ns: u64,
}

pub struct Emulator {
    links: Vec<(String, Arc<Direction>, Arc<Direction>)>,
    pub realtime: bool,
    pub timer_slack: bool,
}

/// How every direction's threads run (from the configuration).
#[derive(Clone, Copy)]
struct Threads {
    priority: i32,
    forward_only: bool,
    coalesce_ns: u64,
}

fn thread_setup(priority: i32) -> (bool, bool) {
    let slack = rt::tight_timer_slack().is_ok();
    let fifo = priority > 0 && rt::realtime(priority).is_ok();
    (fifo, slack)
}

/// Largest packet a TUN device hands over (its MTU is at most 65535).
const MAX_PACKET: usize = 65_536;

/// Read one packet into `buf` (at least `MAX_PACKET` long); its length, or
/// None when the device is gone.
fn read_packet(dev: &mut File, buf: &mut [u8]) -> Option<usize> {
    loop {
        match dev.read(buf) {
            Ok(0) => return None,
            Ok(n) => return Some(n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return None,
        }
    }
}

fn spawn_direction(
    name: String,
    cfg: &DirectionConfig,
    seed: u64,
    mut ingress: File,
    mut egress: File,
    threads: Threads,
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
        late_packets: AtomicU64::new(0),
        max_late_ns: AtomicU64::new(0),
    });
    let priority = threads.priority;
    let (granted_tx, granted_rx) = mpsc::channel();
    if threads.forward_only {
        let fwd_dir = Arc::clone(&dir);
        thread::Builder::new()
            .name(format!("fw {name}"))
            .spawn(move || {
                let _ = granted_tx.send(thread_setup(priority));
                let mut buf = vec![0u8; MAX_PACKET];
                while let Some(n) = read_packet(&mut ingress, &mut buf) {
                    if egress.write(&buf[..n]).is_err() {
                        fwd_dir.write_errors.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
            .expect("spawn forwarder");
        let (fifo, slack) = granted_rx.recv().unwrap_or((false, false));
        return (dir, fifo, slack);
    }
    // Admitted packets are copied out of the read buffer and go to the
    // writer; their buffers come back to the reader, so no packet costs an
    // allocation (and the two threads never meet in the allocator) once the
    // pool has grown to the backlog.
    let (tx, rx) = mpsc::channel::<(u64, Vec<u8>)>();
    let (spare_tx, spare_rx) = mpsc::channel::<Vec<u8>>();

    let reader_dir = Arc::clone(&dir);
    thread::Builder::new()
        .name(format!("rd {name}"))
        .spawn(move || {
            let _ = granted_tx.send(thread_setup(priority));
            let mut buf = vec![0u8; MAX_PACKET];
            while let Some(n) = read_packet(&mut ingress, &mut buf) {
                let now = rt::now_ns();
                let verdict = reader_dir.shaper.lock().unwrap().offer(now, n as u32);
                if let Verdict::Deliver { at } = verdict {
                    let mut packet = spare_rx.try_recv().unwrap_or_default();
                    packet.clear();
                    packet.extend_from_slice(&buf[..n]);
                    if tx.send((at, packet)).is_err() {
                        return;
                    }
                }
            }
        })
        .expect("spawn reader");

    let writer_dir = Arc::clone(&dir);
    let coalesce_ns = threads.coalesce_ns;
    thread::Builder::new()
        .name(format!("wr {name}"))
        .spawn(move || {
            thread_setup(priority);
            let mut last_wake = 0u64;
            for (at, packet) in rx {
                // Packets due closer together than `coalesce_ns` share one
                // wake-up: at high rates waking the thread per packet cost
                // more than everything else together (bench/RESULTS.md). A
                // packet is then late by less than `coalesce_ns`, never early.
                let mut now = rt::now_ns();
                if at > now {
                    rt::sleep_until(at.max(last_wake + coalesce_ns));
                    now = rt::now_ns();
                    last_wake = now;
                }
                if egress.write(&packet).is_err() {
                    writer_dir.write_errors.fetch_add(1, Ordering::Relaxed);
                }
                let late = now.saturating_sub(at);
                if late > LATE_NS {
                    writer_dir.late_packets.fetch_add(1, Ordering::Relaxed);
                    writer_dir.max_late_ns.fetch_max(late, Ordering::Relaxed);
                }
                let _ = spare_tx.send(packet);
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
        let threads = Threads {
            priority: cfg.realtime_priority,
            forward_only: cfg.forward_only,
            coalesce_ns: cfg.coalesce_ns,
        };
        for (l, (a, b)) in cfg.links.iter().zip(devices) {
            let clone = |f: &File| f.try_clone().map_err(|e| format!("link {}: {e}", l.name));
            let (a2, b2) = (clone(&a)?, clone(&b)?);
            let (ab, f1, s1) = spawn_direction(format!("{}/ab", l.name), &l.ab, cfg.seed, a, b2, threads);
            let (ba, f2, s2) = spawn_direction(format!("{}/ba", l.name), &l.ba, cfg.seed, b, a2, threads);
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
        // every direction is read as of one instant: packets queued after it
        // depart after it, so they count as unsent
        let now = rt::now_ns();
        let taken_ns = rt::realtime_ns();
        let read = |d: &Direction| {
            let shaper = d.shaper.lock().unwrap();
            let (unsent_packets, unsent_bytes) = shaper.unsent(now);
            DirectionStats {
                counters: shaper.counters,
                write_errors: d.write_errors.load(Ordering::Relaxed),
                late_packets: d.late_packets.load(Ordering::Relaxed),
                max_late_ns: d.max_late_ns.load(Ordering::Relaxed),
                unsent_packets,
                unsent_bytes,
                queue_wait_ahead_ns: shaper.wait_ahead(now),
            }
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
            taken_ns,
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
