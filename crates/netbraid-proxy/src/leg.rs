//! Per-leg socket settings: the client's leg (accepted) and the upstream
//! leg (connected) each get their own congestion control, buffers and
//! Nagle setting; the upstream leg may be MPTCP.
//!
//! SACK and ECN are not per-socket options on Linux (they are the
//! namespace's `net.ipv4.tcp_sack` / `tcp_ecn` sysctls), so they are not
//! here; docs/proxy.md says how to set them.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use socket2::{Domain, Protocol, SockRef, Socket, Type};
use tokio::net::{TcpSocket, TcpStream};

#[derive(Clone, Debug, Default)]
pub struct LegOptions {
    /// `TCP_CONGESTION`: any controller the kernel offers.
    pub cc: Option<String>,
    pub sndbuf: Option<usize>,
    pub rcvbuf: Option<usize>,
    /// `TCP_NODELAY` (default on: a relay should not hold back small writes).
    pub nodelay: bool,
    /// `TCP_MAXSEG`: the largest segment (a smaller MTU on the leg's path).
    pub mss: Option<u32>,
}

impl LegOptions {
    /// Applies the options to a socket (accepted or before connect).
    pub fn apply(&self, sock: SockRef<'_>) -> io::Result<()> {
        if let Some(cc) = &self.cc {
            sock.set_tcp_congestion(cc.as_bytes())
                .map_err(|e| io::Error::new(e.kind(), format!("TCP_CONGESTION {cc:?}: {e}")))?;
        }
        if let Some(n) = self.sndbuf {
            sock.set_send_buffer_size(n)?;
        }
        if let Some(n) = self.rcvbuf {
            sock.set_recv_buffer_size(n)?;
        }
        if let Some(m) = self.mss {
            sock.set_tcp_mss(m)
                .map_err(|e| io::Error::new(e.kind(), format!("TCP_MAXSEG {m}: {e}")))?;
        }
        // MPTCP sockets refuse some TCP-level options on old kernels; Nagle
        // is a preference, not a requirement.
        let _ = sock.set_tcp_nodelay(self.nodelay);
        Ok(())
    }
}

/// The kernel's controllers, for error messages.
pub fn available_controllers() -> String {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(", "))
        .unwrap_or_else(|_| "unknown (/proc/sys/net/ipv4/tcp_available_congestion_control unreadable)".into())
}

/// Checks, before listening, that the options can be set on this kernel.
pub fn check(leg: &str, opts: &LegOptions, mptcp: bool) -> Result<(), String> {
    let proto = if mptcp { Protocol::MPTCP } else { Protocol::TCP };
    let sock = Socket::new(Domain::IPV4, Type::STREAM, Some(proto)).map_err(|e| {
        if mptcp {
            format!("--mptcp: this kernel cannot open an MPTCP socket ({e}); is net.mptcp.enabled = 1?")
        } else {
            format!("cannot open a TCP socket: {e}")
        }
    })?;
    opts.apply(SockRef::from(&sock)).map_err(|e| {
        let mut msg = format!("--{leg}-cc / buffers: {e}");
        if opts.cc.is_some() {
            msg += &format!(" (this kernel offers: {})", available_controllers());
        }
        msg
    })
}

/// Opens the upstream connection with the leg's options set before SYN
/// (its time limit is the connection's `--connect-timeout`, deadline.rs).
pub async fn connect(
    dest: SocketAddr,
    opts: &LegOptions,
    mptcp: bool,
    bind: Option<SocketAddr>,
) -> io::Result<TcpStream> {
    let domain = Domain::for_address(dest);
    let proto = if mptcp { Protocol::MPTCP } else { Protocol::TCP };
    let sock = Socket::new(domain, Type::STREAM.nonblocking(), Some(proto))?;
    opts.apply(SockRef::from(&sock))?;
    if let Some(b) = bind {
        sock.bind(&b.into())?;
    }
    TcpSocket::from_std_stream(sock.into()).connect(dest).await
}

/// Where a transparently redirected connection was going: the conntrack
/// entry's original destination (REDIRECT / DNAT), else the address the
/// connection was accepted on (TPROXY delivers it unchanged).
pub fn original_destination(stream: &TcpStream) -> io::Result<SocketAddr> {
    let sock = SockRef::from(stream);
    let local = stream.local_addr()?;
    let orig = if local.is_ipv4() {
        sock.original_dst_v4()
    } else {
        sock.original_dst_v6()
    };
    match orig.ok().and_then(|a| a.as_socket()) {
        Some(a) => Ok(a),
        None => Ok(local),
    }
}

/// Closes with RST instead of FIN when the stream is dropped: how a reset
/// on one leg is passed on to the other.
pub fn reset_on_close(stream: &TcpStream) {
    let _ = SockRef::from(stream).set_linger(Some(Duration::ZERO));
}
