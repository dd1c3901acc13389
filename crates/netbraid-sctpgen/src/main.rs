//! `netbraid-sctpgen send|recv CONFIG_JSON`: the emu backend's SCTP traffic
//! on usrsctp (the FreeBSD SCTP stack in user space, over raw IPv4: run as
//! root, in the flow's network namespace).
//!
//! - `recv`: binds every local address given (a multihomed endpoint),
//!   prints `ready`, accepts one association and reads until the peer
//!   shuts down or `until_ns` passes; writes the bytes received in all, in
//!   the measurement window, and per 100 ms interval to `out` (JSON).
//! - `send`: binds its local addresses, connects to the peer's (the first
//!   is the primary path), waits for `start_ns`, writes messages of
//!   `message_bytes` until `stop_ns` (or `bytes`), reading every path's
//!   cwnd and smoothed RTT every 100 ms; writes them to `out`.
//!
//! Both also report the stack's own counters (chunks sent, retransmitted and
//! fast-retransmitted, T3 timeouts, SACKs, duplicate chunks received) over
//! the measurement window: one association per process, so the stack's
//! counters are the association's.
//!
//! CMT and its delayed-ACK fix are usrsctp's global switches
//! (`sctp_cmt_on_off`, `sctp_cmt_use_dac`), set before any socket exists.

mod usrsctp;

use std::net::Ipv4Addr;
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::Duration;

use libc::{c_int, c_void, sockaddr, sockaddr_in, socklen_t};
use serde::{Deserialize, Serialize};
use usrsctp::*;

const INTERVAL_NS: u64 = 100_000_000;

fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn sleep_until(t: u64) {
    let now = now_ns();
    if t > now {
        std::thread::sleep(Duration::from_nanos(t - now));
    }
}

fn fail(what: &str) -> ! {
    eprintln!("netbraid-sctpgen: {what}: {}", std::io::Error::last_os_error());
    std::process::exit(2)
}

fn sockaddr_of(addr: &str, port: u16) -> sockaddr_in {
    let ip: Ipv4Addr = addr.parse().unwrap_or_else(|_| {
        eprintln!("netbraid-sctpgen: {addr:?} is not an IPv4 address");
        std::process::exit(2)
    });
    sockaddr_in {
        sin_family: libc::AF_INET as u16,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(ip).to_be(),
        },
        sin_zero: [0; 8],
    }
}

/// The stack's counters that explain a transfer (see `stat`).
#[derive(Serialize, Default, Clone, Copy)]
struct StackCounters {
    data_chunks_sent: u64,
    retransmitted_chunks: u64,
    fast_retransmitted_chunks: u64,
    t3_timeouts: u64,
    sacks_received: u64,
    sacks_sent: u64,
    duplicate_chunks_received: u64,
}

/// Write a report as JSON to `out` (exit 2 if it cannot be written).
fn write_report(out: &str, report: &impl Serialize) {
    std::fs::write(out, serde_json::to_string(report).expect("plain numbers")).unwrap_or_else(|e| {
        eprintln!("netbraid-sctpgen: writing {out}: {e}");
        std::process::exit(2)
    });
}

/// CPU time this process has used (user + system, all its threads: the
/// stack's timer and receive threads too), seconds.
fn cpu_seconds() -> f64 {
    // SAFETY: an all-zero rusage is valid; getrusage fills it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: ru is writable.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(ru.ru_utime) + secs(ru.ru_stime)
}

fn stack_counters() -> StackCounters {
    let mut w = vec![0u32; stat::WORDS + 16]; // (margin: the copy is the library's)
                                              // SAFETY: w is writable for more words than the struct holds.
    unsafe { usrsctp_get_stat(w.as_mut_ptr()) };
    let at = |i: usize| w[i] as u64;
    StackCounters {
        data_chunks_sent: at(stat::SENDDATA),
        retransmitted_chunks: at(stat::SENDRETRANSDATA),
        fast_retransmitted_chunks: at(stat::SENDFASTRETRANS),
        t3_timeouts: at(stat::TIMODATA),
        sacks_received: at(stat::RECVSACKS),
        sacks_sent: at(stat::SENDSACKS),
        duplicate_chunks_received: at(stat::RECVDUPDATA),
    }
}

impl StackCounters {
    fn since(&self, o: &StackCounters) -> StackCounters {
        StackCounters {
            data_chunks_sent: self.data_chunks_sent.saturating_sub(o.data_chunks_sent),
            retransmitted_chunks: self.retransmitted_chunks.saturating_sub(o.retransmitted_chunks),
            fast_retransmitted_chunks: self
                .fast_retransmitted_chunks
                .saturating_sub(o.fast_retransmitted_chunks),
            t3_timeouts: self.t3_timeouts.saturating_sub(o.t3_timeouts),
            sacks_received: self.sacks_received.saturating_sub(o.sacks_received),
            sacks_sent: self.sacks_sent.saturating_sub(o.sacks_sent),
            duplicate_chunks_received: self
                .duplicate_chunks_received
                .saturating_sub(o.duplicate_chunks_received),
        }
    }
}

/// The stack's counters at the window's start and stop, read by a thread
/// that sleeps until each.
type WindowCounters = Arc<Mutex<[Option<StackCounters>; 2]>>;

fn watch_counters(start_ns: u64, stop_ns: u64) -> WindowCounters {
    let w: WindowCounters = Arc::default();
    let w2 = w.clone();
    std::thread::spawn(move || {
        for (k, t) in [start_ns, stop_ns].into_iter().enumerate() {
            sleep_until(t);
            w2.lock().expect("no panics hold it")[k] = Some(stack_counters());
        }
    });
    w
}

/// The counters over the window (to now if it has not ended).
fn window_counters(w: &WindowCounters) -> StackCounters {
    let [start, stop] = *w.lock().expect("no panics hold it");
    stop.unwrap_or_else(stack_counters).since(&start.unwrap_or_default())
}

/// Common settings: the stack's switches and the socket buffers.
#[derive(Deserialize)]
struct Stack {
    cmt: bool,
    #[serde(default)]
    dac: bool,
    #[serde(default)]
    sndbuf: Option<u32>,
    #[serde(default)]
    rcvbuf: Option<u32>,
}

fn start_stack(stack: &Stack) -> *mut Socket {
    // SAFETY: the documented usrsctp set-up sequence; null callbacks select
    // the blocking socket API.
    unsafe {
        usrsctp_init(0, None, null());
        usrsctp_sysctl_set_sctp_cmt_on_off(stack.cmt as u32);
        usrsctp_sysctl_set_sctp_cmt_use_dac(stack.dac as u32);
        let so = usrsctp_socket(
            libc::AF_INET,
            libc::SOCK_STREAM,
            IPPROTO_SCTP,
            null(),
            null(),
            0,
            null_mut(),
        );
        if so.is_null() {
            fail("usrsctp_socket");
        }
        for (opt, value) in [(libc::SO_SNDBUF, stack.sndbuf), (libc::SO_RCVBUF, stack.rcvbuf)] {
            if let Some(v) = value {
                let v = v as c_int;
                let len = std::mem::size_of::<c_int>() as socklen_t;
                if usrsctp_setsockopt(so, libc::SOL_SOCKET, opt, &v as *const c_int as *const c_void, len) < 0 {
                    fail("setsockopt (buffer)");
                }
            }
        }
        so
    }
}

/// Bind every address with `port` (the first by bind, the rest added).
fn bind_all(so: *mut Socket, addrs: &[String], port: u16) {
    for (k, a) in addrs.iter().enumerate() {
        let sa = sockaddr_of(a, port);
        let p = &sa as *const sockaddr_in as *const sockaddr;
        // SAFETY: sa outlives the call; its length is that of sockaddr_in.
        let rc = unsafe {
            if k == 0 {
                usrsctp_bind(so, p, std::mem::size_of::<sockaddr_in>() as socklen_t)
            } else {
                usrsctp_bindx(so, p, 1, SCTP_BINDX_ADD_ADDR)
            }
        };
        if rc < 0 {
            fail(&format!("bind {a}:{port}"));
        }
    }
}

#[derive(Deserialize)]
struct RecvConfig {
    #[serde(flatten)]
    stack: Stack,
    local: Vec<String>,
    port: u16,
    window_start_ns: u64,
    window_stop_ns: u64,
    until_ns: u64,
    out: String,
}

#[derive(Serialize, Default)]
struct RecvReport {
    bytes_received: u64,
    window_bytes: u64,
    /// Bytes per 100 ms from the window's start (CLOCK_REALTIME bins).
    interval_bytes: Vec<u64>,
    window_counters: StackCounters,
    cpu_s: f64,
}

fn recv(cfg: RecvConfig) {
    let so = start_stack(&cfg.stack);
    bind_all(so, &cfg.local, cfg.port);
    // SAFETY: a bound socket.
    if unsafe { usrsctp_listen(so, 1) } < 0 {
        fail("listen");
    }
    println!("ready");
    let total = Arc::new(AtomicU64::new(0));
    let window = Arc::new(AtomicU64::new(0));
    let bins: Arc<Vec<AtomicU64>> = Arc::new(
        (0..(cfg.window_stop_ns.saturating_sub(cfg.window_start_ns) / INTERVAL_NS + 1))
            .map(|_| AtomicU64::new(0))
            .collect(),
    );
    let counters = watch_counters(cfg.window_start_ns, cfg.window_stop_ns);
    // Whatever the peer does, the report is written by `until_ns`.
    let report = {
        let (total, window, bins, out) = (total.clone(), window.clone(), bins.clone(), cfg.out.clone());
        move || {
            let r = RecvReport {
                bytes_received: total.load(Ordering::Relaxed),
                window_bytes: window.load(Ordering::Relaxed),
                interval_bytes: bins.iter().map(|b| b.load(Ordering::Relaxed)).collect(),
                window_counters: window_counters(&counters),
                cpu_s: cpu_seconds(),
            };
            write_report(&out, &r);
        }
    };
    let deadline = cfg.until_ns;
    let watchdog = report.clone();
    std::thread::spawn(move || {
        sleep_until(deadline);
        watchdog();
        std::process::exit(0);
    });
    // SAFETY: a listening socket; the peer's address is not wanted.
    let conn = unsafe { usrsctp_accept(so, null_mut(), null_mut()) };
    if conn.is_null() {
        fail("accept");
    }
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let (mut infolen, mut infotype, mut flags) = (0 as socklen_t, 0u32, 0 as c_int);
        // SAFETY: buf is writable for its length; no address or info wanted.
        let n = unsafe {
            usrsctp_recvv(
                conn,
                buf.as_mut_ptr() as *mut c_void,
                buf.len(),
                null_mut(),
                null_mut(),
                null_mut(),
                &mut infolen,
                &mut infotype,
                &mut flags,
            )
        };
        if n <= 0 {
            break;
        }
        let (n, t) = (n as u64, now_ns());
        total.fetch_add(n, Ordering::Relaxed);
        if t >= cfg.window_start_ns && t < cfg.window_stop_ns {
            window.fetch_add(n, Ordering::Relaxed);
            bins[((t - cfg.window_start_ns) / INTERVAL_NS) as usize].fetch_add(n, Ordering::Relaxed);
        }
    }
    report();
}

#[derive(Deserialize)]
struct SendConfig {
    #[serde(flatten)]
    stack: Stack,
    local: Vec<String>,
    /// The peer's addresses, the primary first.
    remote: Vec<String>,
    port: u16,
    local_port: u16,
    start_ns: u64,
    stop_ns: u64,
    #[serde(default)]
    bytes: Option<u64>,
    message_bytes: usize,
    window_start_ns: u64,
    window_stop_ns: u64,
    out: String,
}

#[derive(Serialize, Default)]
struct PathSamples {
    addr: String,
    /// Per reading: (time ns, cwnd bytes, smoothed RTT ms).
    samples: Vec<(u64, u32, u32)>,
}

#[derive(Serialize, Default)]
struct SendReport {
    bytes_sent: u64,
    paths: Vec<PathSamples>,
    window_counters: StackCounters,
    cpu_s: f64,
}

fn read_paths(so: *mut Socket, id: AssocId, remote: &[String], port: u16, paths: &mut [PathSamples]) {
    let t = now_ns();
    for (k, addr) in remote.iter().enumerate() {
        // SAFETY: an all-zero sctp_paddrinfo is valid; the address to ask
        // about is written into it first.
        let mut info: PeerAddrInfo = unsafe { std::mem::zeroed() };
        let sa = sockaddr_of(addr, port);
        // SAFETY: sockaddr_storage is larger than sockaddr_in.
        unsafe { std::ptr::write(&mut info.address as *mut _ as *mut sockaddr_in, sa) };
        info.assoc_id = id;
        let mut len = std::mem::size_of::<PeerAddrInfo>() as socklen_t;
        // SAFETY: info is writable for len bytes.
        let rc = unsafe {
            usrsctp_opt_info(
                so,
                id,
                SCTP_GET_PEER_ADDR_INFO,
                &mut info as *mut _ as *mut c_void,
                &mut len,
            )
        };
        if rc == 0 {
            paths[k].samples.push((t, info.cwnd, info.srtt));
        }
    }
}

fn send(cfg: SendConfig) {
    let so = start_stack(&cfg.stack);
    bind_all(so, &cfg.local, cfg.local_port);
    let remote: Vec<sockaddr_in> = cfg.remote.iter().map(|a| sockaddr_of(a, cfg.port)).collect();
    let mut id: AssocId = 0;
    // SAFETY: `remote` is a packed array of sockaddr_in, as connectx wants.
    if unsafe { usrsctp_connectx(so, remote.as_ptr() as *const sockaddr, remote.len() as c_int, &mut id) } < 0 {
        fail("connectx");
    }
    let report = Arc::new(Mutex::new(SendReport {
        bytes_sent: 0,
        paths: cfg
            .remote
            .iter()
            .map(|a| PathSamples {
                addr: a.clone(),
                samples: Vec::new(),
            })
            .collect(),
        window_counters: StackCounters::default(),
        cpu_s: 0.0,
    }));
    let counters = watch_counters(cfg.window_start_ns, cfg.window_stop_ns);
    // The report is written once the sending stops; and if the stack has not
    // let go of the process (a send blocked on a stalled association, a
    // close that lingers) a little after `stop_ns`, from what it has then.
    let finish = {
        let (report, out, once) = (report.clone(), cfg.out.clone(), Arc::new(Once::new()));
        move || {
            once.call_once(|| {
                let mut r = report.lock().expect("no panics hold it");
                r.window_counters = window_counters(&counters);
                r.cpu_s = cpu_seconds();
                write_report(&out, &*r);
            })
        }
    };
    let watchdog = finish.clone();
    let deadline = cfg.stop_ns + 3_000_000_000;
    std::thread::spawn(move || {
        sleep_until(deadline);
        watchdog();
        std::process::exit(0);
    });
    sleep_until(cfg.start_ns);
    let msg = vec![0u8; cfg.message_bytes.max(1)];
    let mut next_read = now_ns();
    let mut sent = 0u64;
    loop {
        let t = now_ns();
        if t >= cfg.stop_ns || cfg.bytes.is_some_and(|b| sent >= b) {
            break;
        }
        if t >= next_read {
            read_paths(
                so,
                id,
                &cfg.remote,
                cfg.port,
                &mut report.lock().expect("no panics hold it").paths,
            );
            next_read = t + INTERVAL_NS;
        }
        let len = cfg.bytes.map_or(msg.len() as u64, |b| (b - sent).min(msg.len() as u64)) as usize;
        // SAFETY: msg is readable for len bytes; the association's default
        // destination (its primary, or CMT's choice) is used.
        let n = unsafe {
            usrsctp_sendv(
                so,
                msg.as_ptr() as *const c_void,
                len,
                null(),
                0,
                null(),
                0,
                SCTP_SENDV_NOINFO,
                0,
            )
        };
        if n < 0 {
            fail("sendv");
        }
        sent += n as u64;
        report.lock().expect("no panics hold it").bytes_sent = sent;
    }
    finish();
    // SAFETY: the socket is ours; shutdown lets the receiver see the end.
    unsafe {
        usrsctp_shutdown(so, libc::SHUT_WR);
        usrsctp_close(so);
        for _ in 0..50 {
            if usrsctp_finish() == 0 {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = || -> ! {
        eprintln!("usage: netbraid-sctpgen send|recv CONFIG_JSON");
        std::process::exit(2)
    };
    if args.len() != 3 {
        usage();
    }
    let bad = |e: serde_json::Error| -> ! {
        eprintln!("netbraid-sctpgen: config: {e}");
        std::process::exit(2)
    };
    match args[1].as_str() {
        "recv" => recv(serde_json::from_str(&args[2]).unwrap_or_else(|e| bad(e))),
        "send" => send(serde_json::from_str(&args[2]).unwrap_or_else(|e| bad(e))),
        _ => usage(),
    }
}
