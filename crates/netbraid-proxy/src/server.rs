//! Accepting, choosing each connection's destination, reaching it, and
//! relaying both directions until both have ended; then one record.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use socket2::{Domain, SockRef, Socket, Type};
use tokio::net::{TcpListener, TcpStream};
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};

use crate::config::{Config, Mode};
use crate::deadline::{Deadlines, Fired, Phase, Watchlist};
use crate::leg;
use crate::observe::{Counters, Record, RecordLog};
use crate::relay::{self, Direction, Leg, Stop};
use crate::socks5::{self, reply, Parse, Target};

/// File descriptors per connection: two sockets and two pipes.
const FDS_PER_CONNECTION: usize = 6;

struct Shared {
    cfg: Config,
    counters: Arc<Counters>,
    records: RecordLog,
    /// Bytes held by all connections (permits are bytes).
    budget: Arc<Semaphore>,
    epoch: Instant,
    next_id: AtomicU64,
    /// Set when the drain time is over: connections still open close.
    closing: watch::Receiver<bool>,
}

impl Shared {
    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    fn say(&self, msg: impl AsRef<str>) {
        if !self.cfg.quiet {
            eprintln!("netbraid proxy: {}", msg.as_ref());
        }
    }
}

/// How a connection ended.
enum Ending {
    /// Reached the upstream; the reason it closed.
    Relayed(String),
    /// Denied: allow-list, authentication, a malformed or unsupported request.
    Refused(String),
    /// Allowed, but the upstream could not be reached.
    Failed(String),
}

/// Runs the proxy until SIGTERM or SIGINT and the drain that follows.
///
/// Each worker thread runs its own single-threaded runtime with its own
/// listening socket (SO_REUSEPORT: the kernel spreads connections over
/// them), and a connection lives on the thread that accepted it: no task
/// moves between threads and no thread wakes another (a shared runtime
/// spent a third of its system time in futex wake-ups). The main thread
/// handles signals, the counters' endpoint and the drain.
pub fn run(mut cfg: Config) -> i32 {
    if let Err(msg) =
        leg::check("upstream", &cfg.upstream, cfg.mptcp).and_then(|_| leg::check("client", &cfg.client, false))
    {
        eprintln!("netbraid proxy: error: {msg}");
        return 2;
    }
    let fd_room = raise_fd_limit();
    let most = fd_room.saturating_sub(64) / FDS_PER_CONNECTION;
    if cfg.max_connections > most {
        eprintln!(
            "netbraid proxy: note: --max-connections {} needs {} file descriptors; this process may open {}, \
             so at most {} connections are relayed at once",
            cfg.max_connections,
            cfg.max_connections * FDS_PER_CONNECTION + 64,
            fd_room,
            most.max(1)
        );
        cfg.max_connections = most.max(1);
    }
    let threads = cfg
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    // Signals are ours before anything listens: a SIGTERM that comes as the
    // first connection does is a drain, not the default death.
    let control = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("netbraid proxy: error: cannot start the runtime: {e}");
            return 1;
        }
    };
    let signals = {
        let _in_runtime = control.enter();
        (signal(SignalKind::terminate()), signal(SignalKind::interrupt()))
    };
    let (Ok(mut term), Ok(mut int)) = signals else {
        eprintln!("netbraid proxy: error: cannot handle SIGTERM/SIGINT");
        return 1;
    };
    let listeners = match listen(&cfg, threads) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("netbraid proxy: error: --listen {}: {e}", cfg.listen);
            return 2;
        }
    };
    let metrics = match cfg.metrics.map(std::net::TcpListener::bind).transpose() {
        Ok(m) => m,
        Err(e) => {
            eprintln!("netbraid proxy: error: --metrics {}: {e}", cfg.metrics.unwrap());
            return 2;
        }
    };
    let records = match RecordLog::open(cfg.log_json.as_deref()) {
        Ok(r) => r,
        Err(e) => {
            eprintln!(
                "netbraid proxy: error: --log-json {}: {e}",
                cfg.log_json.as_ref().unwrap().display()
            );
            return 2;
        }
    };
    let (close_tx, closing) = watch::channel(false);
    let (stop_tx, stop) = watch::channel(false);
    let counters = Arc::new(Counters::default());
    let slots = Arc::new(Semaphore::new(cfg.max_connections));
    let shared = Arc::new(Shared {
        budget: Arc::new(Semaphore::new(cfg.max_memory)),
        counters: counters.clone(),
        records,
        epoch: Instant::now(),
        next_id: AtomicU64::new(1),
        closing,
        cfg,
    });
    let workers: Vec<_> = listeners
        .into_iter()
        .enumerate()
        .map(|(i, l)| {
            let (shared, slots, stop) = (shared.clone(), slots.clone(), stop.clone());
            std::thread::Builder::new()
                .name(format!("proxy-{i}"))
                .spawn(move || worker(shared, l, slots, stop))
                .expect("a worker thread")
        })
        .collect();
    let code = control.block_on(async {
        if let Some(m) = metrics {
            match m.set_nonblocking(true).and_then(|_| TcpListener::from_std(m)) {
                Ok(m) => {
                    let (budget, most) = (shared.budget.clone(), shared.cfg.max_memory);
                    let held = move || most.saturating_sub(budget.available_permits()) as u64;
                    tokio::spawn(crate::observe::serve_metrics(m, counters.clone(), held));
                }
                Err(e) => eprintln!("netbraid proxy: --metrics: {e}"),
            }
        }
        banner(&shared);
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        let _ = stop_tx.send(true);
        let active = counters.active.load(Ordering::Relaxed);
        let drain = shared.cfg.drain_timeout;
        shared.say(format!(
            "stopped accepting; {active} connection(s) may finish within {drain:?}"
        ));
        let deadline = Instant::now() + drain;
        while counters.active.load(Ordering::Relaxed) > 0 && Instant::now() < deadline {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(20)) => {}
                _ = term.recv() => break,
                _ = int.recv() => break,
            }
        }
        let left = counters.active.load(Ordering::Relaxed);
        if left > 0 {
            shared.say(format!("closing {left} connection(s) still open"));
        }
        // Always: a connection a worker accepted as the signal came may not
        // be counted yet, and the sweep closes whatever is left.
        let _ = close_tx.send(true);
        0
    });
    for w in workers {
        let _ = w.join();
    }
    shared.say(format!(
        "exit: {} connection(s), {} relayed, {} refused, {} failed; {} B up, {} B down",
        counters.accepted.load(Ordering::Relaxed),
        counters.relayed.load(Ordering::Relaxed),
        counters.refused.load(Ordering::Relaxed),
        counters.failed.load(Ordering::Relaxed),
        counters.bytes_up.load(Ordering::Relaxed),
        counters.bytes_down.load(Ordering::Relaxed),
    ));
    code
}

/// One worker thread: accepts on its listener until told to stop, then
/// drives its connections until they have all ended.
fn worker(shared: Arc<Shared>, listener: Socket, slots: Arc<Semaphore>, mut stop: watch::Receiver<bool>) {
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("netbraid proxy: error: cannot start a worker: {e}");
            return;
        }
    };
    rt.block_on(async move {
        let listener = match TcpListener::from_std(listener.into()) {
            Ok(l) => l,
            Err(e) => {
                eprintln!("netbraid proxy: error: worker listener: {e}");
                return;
            }
        };
        let watchlist = Arc::new(Watchlist::default());
        {
            let (w, s) = (watchlist.clone(), shared.clone());
            tokio::spawn(async move { w.sweep(|| s.now_ms(), s.closing.clone()).await });
        }
        let mut tasks = tokio::task::JoinSet::new();
        loop {
            while tasks.try_join_next().is_some() {}
            // The stop comes first: once told, accept nothing more.
            let accepted = tokio::select! {
                biased;
                _ = stop.wait_for(|&s| s) => break,
                r = listener.accept() => r,
            };
            match accepted {
                Ok((stream, peer)) => {
                    // A slot after the accept, not before: every thread has
                    // its own listen queue, and a thread waiting in accept with
                    // a slot would starve another's queue. Over the limit, each
                    // thread holds at most this one connection, unserved.
                    let permit = tokio::select! {
                        biased;
                        _ = stop.wait_for(|&s| s) => break,
                        p = slots.clone().acquire_owned() => p.expect("never closed"),
                    };
                    // Counted before its task runs, so the drain sees it.
                    let c = &shared.counters;
                    c.accepted.fetch_add(1, Ordering::Relaxed);
                    c.active.fetch_add(1, Ordering::Relaxed);
                    let open = Active(c.clone());
                    tasks.spawn(handle(shared.clone(), watchlist.clone(), stream, peer, permit, open));
                }
                Err(e) => {
                    // Out of descriptors or memory for a moment: wait rather than spin.
                    eprintln!("netbraid proxy: accept: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
        drop(listener);
        // After the drain time the sweep tells the connections to close
        // (`closing`); each records itself and ends.
        while tasks.join_next().await.is_some() {}
    });
}

fn banner(s: &Shared) {
    let c = &s.cfg;
    let to = match &c.mode {
        Mode::Fixed(to) => format!("relaying to {to}"),
        Mode::Socks5 => format!(
            "SOCKS5{}",
            if c.socks5_auth.is_some() {
                " with username/password"
            } else {
                " without authentication"
            }
        ),
        Mode::Transparent => "transparent (REDIRECT / TPROXY)".into(),
    };
    let rules: Vec<String> = c.allow.rules().iter().map(|r| r.to_string()).collect();
    s.say(format!(
        "listening on {} ({to}); allowed: {}",
        c.listen,
        rules.join("; ")
    ));
    if let Some(v) = c.via_socks5 {
        s.say(format!("upstream through the next proxy at {v}"));
    }
    s.say(format!(
        "at most {} connections; {} KiB per direction, {} MiB in all{}",
        c.max_connections,
        c.buffer / 1024,
        c.max_memory >> 20,
        if c.mptcp { "; upstream over MPTCP" } else { "" }
    ));
}

/// The highest descriptor count this process may use (the soft limit is
/// raised to the hard one).
fn raise_fd_limit() -> usize {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a valid pointer.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return 1024;
        }
        if lim.rlim_cur < lim.rlim_max {
            let want = libc::rlimit {
                rlim_cur: lim.rlim_max,
                rlim_max: lim.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &want) == 0 {
                lim.rlim_cur = lim.rlim_max;
            }
        }
    }
    lim.rlim_cur.min(1 << 24) as usize
}

/// The listening sockets, one per worker. With more than one they share
/// the port by SO_REUSEPORT; a first bind without it checks that nothing
/// else listens there (which SO_REUSEPORT alone would not report).
fn listen(cfg: &Config, count: usize) -> io::Result<Vec<Socket>> {
    let socket = |reuse_port: bool| -> io::Result<Socket> {
        let sock = Socket::new(Domain::for_address(cfg.listen), Type::STREAM.nonblocking(), None)?;
        sock.set_reuse_address(true)?;
        if reuse_port {
            sock.set_reuse_port(true)?;
        }
        if cfg.listen.is_ipv6() {
            let _ = sock.set_only_v6(true);
        }
        if cfg.mode == Mode::Transparent {
            // TPROXY needs it (and CAP_NET_ADMIN); REDIRECT does not.
            let r = if cfg.listen.is_ipv4() {
                sock.set_ip_transparent_v4(true)
            } else {
                sock.set_ip_transparent_v6(true)
            };
            if let Err(e) = r {
                if !cfg.quiet && !reuse_port {
                    eprintln!("netbraid proxy: note: IP_TRANSPARENT refused ({e}): REDIRECT works, TPROXY does not");
                }
            }
        }
        // Accepted sockets inherit the client leg's buffers and controller.
        cfg.client.apply(SockRef::from(&sock))?;
        sock.bind(&cfg.listen.into())?;
        Ok(sock)
    };
    if count <= 1 {
        let sock = socket(false)?;
        sock.listen(1024)?;
        return Ok(vec![sock]);
    }
    drop(socket(false)?);
    (0..count)
        .map(|_| {
            let sock = socket(true)?;
            sock.listen(1024)?;
            Ok(sock)
        })
        .collect()
}

fn shown(dest: &Option<Target>) -> String {
    dest.as_ref().map_or_else(|| "-".into(), |d| d.to_string())
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Decrements the active count however the connection's task ends.
struct Active(Arc<Counters>);
impl Drop for Active {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::Relaxed);
    }
}

async fn handle(
    shared: Arc<Shared>,
    watchlist: Arc<Watchlist>,
    client: TcpStream,
    peer: SocketAddr,
    _slot: OwnedSemaphorePermit,
    _active: Active,
) {
    let c = &shared.counters;
    // A local, so dropped before the parameters (`_active`): a connection
    // counts as open until its socket is closed.
    let client = client;
    let mut rec = Record {
        id: shared.next_id.fetch_add(1, Ordering::Relaxed),
        start_unix: unix_now(),
        client: Some(peer),
        listen: Some(shared.cfg.listen),
        mode: shared.cfg.mode.name(),
        ..Default::default()
    };
    let started = Instant::now();
    // The client leg's options were set on the listener; accepted sockets
    // inherit them (buffers, TCP_CONGESTION, TCP_NODELAY).
    let up = AtomicU64::new(0);
    let down = AtomicU64::new(0);
    let deadlines = Arc::new(Deadlines::new(shared.now_ms(), shared.cfg.idle_timeout));
    watchlist.watch(&deadlines);
    let ending = tokio::select! {
        e = connection(&shared, &client, &mut rec, &up, &down, &deadlines) => e,
        _ = deadlines.fired.notified() => stopped(&shared, &client, &deadlines).await,
    };
    rec.end_unix = unix_now();
    rec.duration_s = started.elapsed().as_secs_f64();
    rec.bytes_up = up.load(Ordering::Relaxed);
    rec.bytes_down = down.load(Ordering::Relaxed);
    let (outcome, reason) = match ending {
        Ending::Relayed(r) => {
            c.relayed.fetch_add(1, Ordering::Relaxed);
            ("relayed", r)
        }
        Ending::Refused(r) => {
            c.refused.fetch_add(1, Ordering::Relaxed);
            eprintln!("netbraid proxy: refused {peer} -> {}: {r}", shown(&rec.destination));
            ("refused", r)
        }
        Ending::Failed(r) => {
            c.failed.fetch_add(1, Ordering::Relaxed);
            eprintln!(
                "netbraid proxy: could not relay {peer} -> {}: {r}",
                shown(&rec.destination)
            );
            ("failed", r)
        }
    };
    if outcome == "relayed" && reason.contains("reset") {
        c.resets.fetch_add(1, Ordering::Relaxed);
    }
    if reason.contains("timeout") {
        c.timeouts.fetch_add(1, Ordering::Relaxed);
    }
    if shared.records.enabled() {
        rec.outcome = outcome;
        rec.reason = reason;
        shared.records.write(&rec);
    }
}

/// The upstream socket, closed with RST if the connection was stopped by
/// its sweep (idle timeout, end of the drain) — its end of stream was not
/// relayed, so a FIN would lie.
struct ResetIfStopped<'a> {
    stream: TcpStream,
    deadlines: &'a Deadlines,
}

impl Drop for ResetIfStopped<'_> {
    fn drop(&mut self) {
        if self.deadlines.fired_as().is_some() {
            leg::reset_on_close(&self.stream);
        }
    }
}

impl std::ops::Deref for ResetIfStopped<'_> {
    type Target = TcpStream;
    fn deref(&self) -> &TcpStream {
        &self.stream
    }
}

/// How a connection ends when its sweep stops it: a timeout of the phase it
/// was in, or the end of the drain.
async fn stopped(shared: &Shared, client: &TcpStream, deadlines: &Deadlines) -> Ending {
    let cfg = &shared.cfg;
    match deadlines.fired_as() {
        Some(Fired::Timeout(Phase::Handshake)) => {
            Ending::Refused(format!("handshake timeout ({:?})", cfg.handshake_timeout))
        }
        Some(Fired::Timeout(Phase::Connect)) => {
            if cfg.mode == Mode::Socks5 {
                let _ = client_reply(client, reply::TTL_EXPIRED, None).await;
            } else {
                leg::reset_on_close(client);
            }
            Ending::Failed(format!("connect timeout ({:?}): no answer", cfg.connect_timeout))
        }
        Some(Fired::Timeout(Phase::Relay)) => {
            // Both legs reset (the upstream by its guard): bytes may still
            // sit in the proxy, and a FIN would tell a peer it had them all.
            leg::reset_on_close(client);
            Ending::Relayed(format!("idle timeout ({:?})", cfg.idle_timeout.unwrap_or_default()))
        }
        Some(Fired::Shutdown) | None => {
            leg::reset_on_close(client);
            match deadlines.phase() {
                Phase::Relay => Ending::Relayed("proxy shut down".into()),
                _ => Ending::Failed("proxy shut down".into()),
            }
        }
    }
}

async fn connection(
    shared: &Shared,
    client: &TcpStream,
    rec: &mut Record,
    up: &AtomicU64,
    down: &AtomicU64,
    deadlines: &Deadlines,
) -> Ending {
    let cfg = &shared.cfg;
    let socks = cfg.mode == Mode::Socks5;
    let phase = |p: Phase, limit: Option<Duration>| deadlines.enter(p, shared.now_ms(), limit);
    phase(
        if socks { Phase::Handshake } else { Phase::Connect },
        Some(if socks {
            cfg.handshake_timeout
        } else {
            cfg.connect_timeout
        }),
    );
    // Where to.
    let mut early = Vec::new(); // bytes a SOCKS5 client sent after its request
    let dest = match &cfg.mode {
        Mode::Fixed(to) => {
            rec.destination = Some(Target::Addr(*to));
            *to
        }
        Mode::Transparent => {
            let d = match leg::original_destination(client) {
                Ok(d) => d,
                Err(e) => return Ending::Failed(format!("original destination: {e}")),
            };
            rec.destination = Some(Target::Addr(d));
            if crate::config::reaches_listener(d, cfg.listen) {
                return Ending::Refused("addressed to the proxy itself, not redirected (a loop)".into());
            }
            d
        }
        Mode::Socks5 => {
            let (target, rest) = match socks5_handshake(client, cfg.socks5_auth.as_ref()).await {
                Err(why) => return Ending::Refused(why),
                Ok(t) => t,
            };
            phase(Phase::Connect, Some(cfg.connect_timeout));
            early = rest;
            rec.destination = Some(target.clone());
            match choose(shared, &target).await {
                Ok(d) => d,
                Err((code, ending)) => {
                    let _ = client_reply(client, code, None).await;
                    return ending;
                }
            }
        }
    };
    if !cfg.allow.permits(dest) {
        if socks {
            let _ = client_reply(client, reply::NOT_ALLOWED, None).await;
        }
        return Ending::Refused(format!("{dest} is not in --allow"));
    }
    rec.upstream = Some(dest);
    rec.via = cfg.via_socks5;
    // Reach it.
    let upstream = match connect_upstream(cfg, dest).await {
        Ok(s) => ResetIfStopped { stream: s, deadlines },
        Err((code, why)) => {
            if socks {
                let _ = client_reply(client, code, None).await;
            } else {
                // The client sees what it would have seen from the server.
                leg::reset_on_close(client);
            }
            return Ending::Failed(why);
        }
    };
    if socks
        && client_reply(client, reply::SUCCEEDED, upstream.local_addr().ok())
            .await
            .is_err()
    {
        return Ending::Relayed("client reset".into());
    }
    if !early.is_empty() {
        if write_all(&upstream, &early).await.is_err() {
            return Ending::Relayed("upstream reset".into());
        }
        up.fetch_add(early.len() as u64, Ordering::Relaxed);
        shared
            .counters
            .bytes_up
            .fetch_add(early.len() as u64, Ordering::Relaxed);
    }
    phase(Phase::Relay, None);
    deadlines.last_activity_ms.store(shared.now_ms(), Ordering::Relaxed);
    relay_both(shared, client, &upstream, up, down, deadlines).await
}

async fn relay_both(
    shared: &Shared,
    client: &TcpStream,
    upstream: &TcpStream,
    up: &AtomicU64,
    down: &AtomicU64,
    deadlines: &Deadlines,
) -> Ending {
    let cfg = &shared.cfg;
    let ended = AtomicU8::new(0);
    let now = || shared.now_ms();
    let direction = |src, src_leg, dst, dst_leg, moved, total| Direction {
        src,
        src_leg,
        dst,
        dst_leg,
        buffer: cfg.buffer,
        budget: &shared.budget,
        moved,
        total,
        last_activity: &deadlines.last_activity_ms,
        now_ms: &now,
        ended: &ended,
    };
    let to_upstream = direction(
        client,
        Leg::Client,
        upstream,
        Leg::Upstream,
        up,
        &shared.counters.bytes_up,
    );
    let to_client = direction(
        upstream,
        Leg::Upstream,
        client,
        Leg::Client,
        down,
        &shared.counters.bytes_down,
    );
    match tokio::try_join!(relay::run(to_upstream), relay::run(to_client)) {
        Ok(_) => Ending::Relayed("closed".into()),
        Err(Stop::Reset(leg)) => {
            // Pass the reset on to the other leg.
            leg::reset_on_close(if leg == Leg::Client { upstream } else { client });
            Ending::Relayed(format!("{} reset", leg.name()))
        }
        Err(Stop::Error(leg, e)) => {
            leg::reset_on_close(client);
            leg::reset_on_close(upstream);
            Ending::Relayed(format!("{} error: {e}", leg.name()))
        }
    }
}

/// A SOCKS5 target as an allowed address: a name is resolved and the
/// first address the allow-list permits is used (the one checked is the
/// one connected to).
async fn choose(shared: &Shared, target: &Target) -> Result<SocketAddr, (u8, Ending)> {
    match target {
        Target::Addr(a) => Ok(*a),
        Target::Name(host, port) => {
            let addrs: Vec<SocketAddr> = match tokio::net::lookup_host((host.as_str(), *port)).await {
                Err(e) => {
                    return Err((
                        reply::HOST_UNREACHABLE,
                        Ending::Failed(format!("resolving {host}: {e}")),
                    ))
                }
                Ok(a) => a.collect(),
            };
            match addrs.iter().find(|a| shared.cfg.allow.permits(**a)) {
                Some(a) => Ok(*a),
                None => {
                    let list: Vec<String> = addrs.iter().map(|a| a.to_string()).collect();
                    Err((
                        reply::NOT_ALLOWED,
                        Ending::Refused(format!("{host}:{port} is {}: not in --allow", list.join(", "))),
                    ))
                }
            }
        }
    }
}

/// The upstream connection, direct or through the next proxy of a chain.
async fn connect_upstream(cfg: &Config, dest: SocketAddr) -> Result<TcpStream, (u8, String)> {
    let hop = cfg.via_socks5.unwrap_or(dest);
    let what = if cfg.via_socks5.is_some() {
        "next proxy"
    } else {
        "connect"
    };
    let stream = leg::connect(hop, &cfg.upstream, cfg.mptcp, cfg.upstream_bind)
        .await
        .map_err(|e| (reply_for(&e), format!("{what} {hop}: {e}")))?;
    if cfg.via_socks5.is_some() {
        let ask = async {
            let s = &stream;
            write_all(s, &[socks5::VERSION, 1, socks5::NO_AUTH]).await?;
            let mut m = [0u8; 2];
            read_exact(s, &mut m).await?;
            if m != [socks5::VERSION, socks5::NO_AUTH] {
                return Err(io::Error::other("the next proxy wants authentication or is not SOCKS5"));
            }
            write_all(s, &socks5::request_bytes(dest)).await?;
            let mut buf = Vec::new();
            loop {
                match socks5::parse_reply(&buf) {
                    Parse::Need(n) => {
                        let at = buf.len();
                        buf.resize(at + n, 0);
                        read_exact(s, &mut buf[at..]).await?;
                    }
                    Parse::Done(code, _) => return Ok(code),
                    Parse::Bad(b) => return Err(io::Error::other(b.why)),
                }
            }
        };
        match ask.await {
            Err(e) => return Err((reply::GENERAL_FAILURE, format!("next proxy {hop}: {e}"))),
            Ok(reply::SUCCEEDED) => {}
            Ok(code) => return Err((code, format!("next proxy {hop}: {}", socks5::reply_text(code)))),
        }
    }
    Ok(stream)
}

fn reply_for(e: &io::Error) -> u8 {
    match e.raw_os_error() {
        Some(libc::ECONNREFUSED) => reply::CONNECTION_REFUSED,
        Some(libc::ENETUNREACH) => reply::NETWORK_UNREACHABLE,
        Some(libc::EHOSTUNREACH) => reply::HOST_UNREACHABLE,
        _ if e.kind() == io::ErrorKind::TimedOut => reply::TTL_EXPIRED,
        _ => reply::GENERAL_FAILURE,
    }
}

async fn client_reply(client: &TcpStream, code: u8, bound: Option<SocketAddr>) -> io::Result<()> {
    write_all(client, &socks5::reply_bytes(code, bound)).await
}

/// Reads the greeting, authenticates, reads the request. On a refusal the
/// reply the RFC asks for has been sent.
async fn socks5_handshake(client: &TcpStream, auth: Option<&(Vec<u8>, Vec<u8>)>) -> Result<(Target, Vec<u8>), String> {
    let c = client;
    let mut buf = Vec::with_capacity(512);
    let methods = read_message(client, &mut buf, socks5::greeting).await?;
    let wanted = if auth.is_some() {
        socks5::USER_PASS
    } else {
        socks5::NO_AUTH
    };
    if !methods.contains(&wanted) {
        let _ = write_all(c, &[socks5::VERSION, socks5::NO_ACCEPTABLE]).await;
        return Err(if auth.is_some() {
            "the client does not offer username/password authentication".into()
        } else {
            "the client offers no method without authentication".into()
        });
    }
    write_all(c, &[socks5::VERSION, wanted])
        .await
        .map_err(|e| format!("handshake: {e}"))?;
    if let Some((user, pass)) = auth {
        let (u, p) = read_message(client, &mut buf, socks5::user_pass).await?;
        let ok = same_secret(&u, user) & same_secret(&p, pass);
        let _ = write_all(c, &[1, if ok { 0 } else { 1 }]).await;
        if !ok {
            return Err(format!(
                "authentication failed for user {:?}",
                String::from_utf8_lossy(&u)
            ));
        }
    }
    let target = read_message(client, &mut buf, socks5::request).await?;
    Ok((target, buf))
}

/// Compares without stopping at the first difference (no timing hint of
/// how much of a password was right).
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    diff == 0 && a.len() == b.len()
}

/// Reads until `parse` has a whole message; the bytes after it stay in `buf`.
async fn read_message<T>(client: &TcpStream, buf: &mut Vec<u8>, parse: fn(&[u8]) -> Parse<T>) -> Result<T, String> {
    let c = client;
    loop {
        match parse(buf) {
            Parse::Done(v, used) => {
                buf.drain(..used);
                return Ok(v);
            }
            Parse::Bad(b) => {
                if let Some(code) = b.reply {
                    let msg = if code == socks5::NO_ACCEPTABLE {
                        vec![socks5::VERSION, code]
                    } else {
                        socks5::reply_bytes(code, None)
                    };
                    let _ = write_all(c, &msg).await;
                }
                return Err(format!("bad SOCKS5 request: {}", b.why));
            }
            Parse::Need(_) => {
                if buf.len() >= 1024 {
                    return Err("bad SOCKS5 request: longer than any valid one".into());
                }
                let mut chunk = [0u8; 512];
                match read_some(c, &mut chunk).await {
                    Ok(0) => return Err("the client closed during the SOCKS5 handshake".into()),
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    Err(e) => return Err(format!("handshake: {e}")),
                }
            }
        }
    }
}

// Reads and writes on a shared `&TcpStream` (both directions of a
// connection hold one), by readiness.

async fn write_all(s: &TcpStream, mut data: &[u8]) -> io::Result<()> {
    while !data.is_empty() {
        s.writable().await?;
        match s.try_write(data) {
            Ok(n) => data = &data[n..],
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

async fn read_some(s: &TcpStream, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        s.readable().await?;
        match s.try_read(buf) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
}

async fn read_exact(s: &TcpStream, mut buf: &mut [u8]) -> io::Result<()> {
    while !buf.is_empty() {
        match read_some(s, buf).await? {
            0 => return Err(io::ErrorKind::UnexpectedEof.into()),
            n => buf = &mut buf[n..],
        }
    }
    Ok(())
}
