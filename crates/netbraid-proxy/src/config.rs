//! The command line, and the checks that turn it into a [`Config`]: every
//! mistake is refused before listening, naming the option and what it
//! accepts.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

use crate::allow::{AllowList, RULE_HELP};
use crate::leg::LegOptions;
use crate::observe::is_loopback;

#[derive(Parser, Debug)]
#[command(
    name = "netbraid proxy",
    version,
    about = "A split-TCP proxy: each accepted TCP connection is relayed into a new one towards the next hop, \
             with its own congestion control and buffers on each leg.",
    after_help = "Examples:\n  \
        netbraid proxy --listen 127.0.0.1:9000 --to 10.0.0.2:5201 --allow 10.0.0.2:5201\n  \
        netbraid proxy --listen 127.0.0.1:1080 --socks5 --allow 10.0.0.0/8:80,443\n  \
        netbraid proxy --listen 0.0.0.0:7000 --transparent --allow 192.0.2.0/24 --upstream-cc bbr\n\n\
        Nothing is relayed to a destination outside every --allow (a --to upstream is allowed by itself when no \
        --allow is given). docs/proxy.md has the transparent-mode rules and the security model."
)]
pub struct Args {
    /// Address to listen on, ADDR:PORT (only this address).
    #[arg(long, value_name = "ADDR:PORT")]
    pub listen: String,

    /// Relay every connection to this fixed upstream (a port forward).
    #[arg(long, value_name = "HOST:PORT", group = "mode")]
    pub to: Option<String>,

    /// Act as a SOCKS5 proxy (CONNECT): each client names its destination.
    #[arg(long, group = "mode")]
    pub socks5: bool,

    /// Relay to each connection's original destination (iptables/nftables REDIRECT or TPROXY).
    #[arg(long, group = "mode")]
    pub transparent: bool,

    /// Destinations that may be reached: CIDR[:PORTS], repeatable.
    #[arg(long = "allow", value_name = "CIDR[:PORTS]")]
    pub allow: Vec<String>,

    /// Require SOCKS5 username/password authentication (RFC 1929).
    #[arg(long, value_name = "USER:PASS")]
    pub socks5_auth: Option<String>,

    /// Serve SOCKS5 without authentication on a non-loopback address.
    #[arg(long)]
    pub allow_unauthenticated: bool,

    /// Reach destinations through the next proxy of a chain, by SOCKS5 CONNECT.
    #[arg(long, value_name = "HOST:PORT")]
    pub via_socks5: Option<String>,

    /// Serve counters in Prometheus' text format at http://ADDR:PORT/metrics (loopback only).
    #[arg(long, value_name = "ADDR:PORT")]
    pub metrics: Option<String>,

    /// Append one JSON line per connection (and per refusal) to FILE.
    #[arg(long, value_name = "FILE")]
    pub log_json: Option<PathBuf>,

    /// Upstream leg: congestion control (TCP_CONGESTION; any the kernel offers).
    #[arg(long, value_name = "NAME")]
    pub upstream_cc: Option<String>,
    /// Upstream leg: socket send buffer (e.g. 4MB).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub upstream_sndbuf: Option<usize>,
    /// Upstream leg: socket receive buffer.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub upstream_rcvbuf: Option<usize>,
    /// Upstream leg: leave Nagle's algorithm on (TCP_NODELAY off).
    #[arg(long)]
    pub upstream_nagle: bool,
    /// Upstream leg: largest segment, bytes (TCP_MAXSEG; for a smaller MTU on its path).
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u32).range(88..=65495))]
    pub upstream_mss: Option<u32>,
    /// Upstream leg over MPTCP (IPPROTO_MPTCP): one client's connection carried over several paths.
    #[arg(long)]
    pub mptcp: bool,
    /// Upstream leg: source address to connect from.
    #[arg(long, value_name = "ADDR")]
    pub upstream_bind: Option<std::net::IpAddr>,

    /// Client leg: congestion control.
    #[arg(long, value_name = "NAME")]
    pub client_cc: Option<String>,
    /// Client leg: socket send buffer.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub client_sndbuf: Option<usize>,
    /// Client leg: socket receive buffer.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub client_rcvbuf: Option<usize>,
    /// Client leg: leave Nagle's algorithm on.
    #[arg(long)]
    pub client_nagle: bool,
    /// Client leg: largest segment, bytes (TCP_MAXSEG).
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u32).range(88..=65495))]
    pub client_mss: Option<u32>,

    /// Bytes held per direction of a connection, in the proxy (its pipe or copy buffer).
    #[arg(long, value_name = "SIZE", value_parser = parse_size, default_value = "256KB")]
    pub buffer: usize,
    /// Bytes held by all connections together; reading stops while it is full.
    #[arg(long, value_name = "SIZE", value_parser = parse_size, default_value = "256MB")]
    pub max_memory: usize,
    /// Connections relayed at once; more wait (in the listen queue, one per thread accepted).
    #[arg(long, value_name = "N", default_value_t = 1024)]
    pub max_connections: usize,

    /// Time allowed to reach the upstream.
    #[arg(long, value_name = "TIME", value_parser = parse_time, default_value = "10s")]
    pub connect_timeout: Duration,
    /// Close a connection after this long with no byte moved either way (0: never).
    #[arg(long, value_name = "TIME", value_parser = parse_time, default_value = "5min")]
    pub idle_timeout: Duration,
    /// Time allowed for a SOCKS5 handshake (slow clients are closed).
    #[arg(long, value_name = "TIME", value_parser = parse_time, default_value = "10s")]
    pub handshake_timeout: Duration,
    /// On SIGTERM or SIGINT: stop accepting, let connections finish for this long, then close them.
    #[arg(long, value_name = "TIME", value_parser = parse_time, default_value = "30s")]
    pub drain_timeout: Duration,

    /// Worker threads (default: one per core).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Print nothing but errors.
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    Fixed(SocketAddr),
    Socks5,
    Transparent,
}

impl Mode {
    pub fn name(&self) -> &'static str {
        match self {
            Mode::Fixed(_) => "fixed",
            Mode::Socks5 => "socks5",
            Mode::Transparent => "transparent",
        }
    }
}

pub struct Config {
    pub listen: SocketAddr,
    pub mode: Mode,
    pub allow: AllowList,
    pub socks5_auth: Option<(Vec<u8>, Vec<u8>)>,
    pub via_socks5: Option<SocketAddr>,
    pub metrics: Option<SocketAddr>,
    pub log_json: Option<PathBuf>,
    pub upstream: LegOptions,
    pub mptcp: bool,
    pub upstream_bind: Option<SocketAddr>,
    pub client: LegOptions,
    pub buffer: usize,
    pub max_memory: usize,
    pub max_connections: usize,
    pub connect_timeout: Duration,
    pub idle_timeout: Option<Duration>,
    pub handshake_timeout: Duration,
    pub drain_timeout: Duration,
    pub threads: Option<usize>,
    pub quiet: bool,
}

/// Sizes as netbraid scenarios write them: binary units ("256KB" = 256 KiB).
pub fn parse_size(text: &str) -> Result<usize, String> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("{text:?} is not a size (e.g. 64KB, 4MB, 65536)"))?;
    let unit = unit.trim();
    if let Some(prefix) = unit.strip_suffix('b') {
        // as in scenarios: a lowercase b reads as bits ("64kb"), sizes are bytes
        let upper = format!(
            "{}{}B",
            prefix.get(..1).unwrap_or("").to_ascii_uppercase(),
            prefix.get(1..).unwrap_or("")
        );
        return Err(format!(
            "{text:?}: a lowercase b reads as bits; sizes are in bytes: write \"{}{upper}\" (1 KB = 1024 B)",
            num.trim()
        ));
    }
    let mult = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" | "kib" => 1024.0,
        "m" | "mb" | "mib" => 1024.0 * 1024.0,
        "g" | "gb" | "gib" => 1024.0 * 1024.0 * 1024.0,
        _ => {
            return Err(format!(
                "{text:?}: unknown unit {unit:?} (B, KB, MB, GB; 1 KB = 1024 B)"
            ))
        }
    };
    let bytes = value * mult;
    if !(1.0..=(1u64 << 40) as f64).contains(&bytes) {
        return Err(format!("{text:?} is out of range (1 B to 1 TB)"));
    }
    Ok(bytes as usize)
}

/// Times: ms, s, min (a bare number is seconds).
pub fn parse_time(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("{text:?} is not a time (e.g. 500ms, 10s, 5min)"))?;
    let secs = match unit.trim() {
        "" | "s" => value,
        "ms" => value / 1e3,
        "min" => value * 60.0,
        "h" => value * 3600.0,
        u => return Err(format!("{text:?}: unknown unit {u:?} (ms, s, min, h)")),
    };
    if !(0.0..=1e7).contains(&secs) {
        return Err(format!("{text:?} is out of range (0 to 10^7 s)"));
    }
    Ok(Duration::from_secs_f64(secs))
}

fn socket_addr(option: &str, text: &str) -> Result<SocketAddr, String> {
    let mut addrs = text
        .to_socket_addrs()
        .map_err(|e| format!("{option} {text:?}: not HOST:PORT ({e}); e.g. 127.0.0.1:9000 or [::1]:9000"))?;
    addrs
        .next()
        .ok_or_else(|| format!("{option} {text:?}: the name has no address"))
}

impl Config {
    pub fn from_args(a: Args) -> Result<Config, String> {
        let listen: SocketAddr = a.listen.parse().map_err(|_| {
            let port = a.listen.rsplit_once(':').and_then(|(_, p)| p.parse::<u64>().ok());
            match port {
                Some(p) if p > 65535 => format!("--listen {:?}: port {p} is out of range (0 to 65535)", a.listen),
                _ => format!(
                    "--listen {:?}: not ADDR:PORT (an IP address and a port, e.g. 127.0.0.1:9000 or [::1]:9000; \
                     the proxy listens on exactly this address)",
                    a.listen
                ),
            }
        })?;
        let mut allow = AllowList::parse_all(&a.allow)?;
        let mode = match (&a.to, a.socks5, a.transparent) {
            (Some(to), false, false) => {
                let to = socket_addr("--to", to)?;
                if allow.is_empty() {
                    // The operator chose this destination, not a peer.
                    allow = AllowList::new(vec![crate::allow::Rule::parse(&allow_rule_for(to))?]);
                } else if !allow.permits(to) {
                    return Err(format!("--to {to} is outside every --allow: nothing would be relayed"));
                }
                Mode::Fixed(to)
            }
            (None, true, false) => Mode::Socks5,
            (None, false, true) => Mode::Transparent,
            _ => return Err("say where to relay: --to HOST:PORT, --socks5 or --transparent (one of them)".into()),
        };
        if mode != Mode::Socks5 && a.socks5_auth.is_some() {
            return Err("--socks5-auth is for --socks5".into());
        }
        if allow.is_empty() {
            return Err(format!(
                "no --allow: nothing could be relayed (the proxy is never an open relay). Allow destinations \
                 with --allow {RULE_HELP}"
            ));
        }
        let socks5_auth = match &a.socks5_auth {
            None => None,
            Some(up) => {
                let (u, p) = up.split_once(':').ok_or("--socks5-auth: expected USER:PASS")?;
                if u.is_empty() || u.len() > 255 || p.is_empty() || p.len() > 255 {
                    return Err("--socks5-auth: USER and PASS must each be 1 to 255 bytes (RFC 1929)".into());
                }
                Some((u.as_bytes().to_vec(), p.as_bytes().to_vec()))
            }
        };
        if mode == Mode::Socks5 && socks5_auth.is_none() && !is_loopback(listen) && !a.allow_unauthenticated {
            return Err(format!(
                "--socks5 on {listen} without --socks5-auth: anyone who can reach that address could relay \
                 through it. Listen on a loopback address, require --socks5-auth USER:PASS, or say \
                 --allow-unauthenticated"
            ));
        }
        let metrics = match &a.metrics {
            None => None,
            Some(m) => {
                let m: SocketAddr = m
                    .parse()
                    .map_err(|_| format!("--metrics {m:?}: not ADDR:PORT (e.g. 127.0.0.1:9100)"))?;
                if !is_loopback(m) {
                    return Err(format!(
                        "--metrics {m}: the counters are served on loopback addresses only (e.g. 127.0.0.1:9100)"
                    ));
                }
                if m == listen {
                    return Err(format!("--metrics {m} is the --listen address"));
                }
                Some(m)
            }
        };
        let via_socks5 = a
            .via_socks5
            .as_deref()
            .map(|v| socket_addr("--via-socks5", v))
            .transpose()?;
        let fixed = if let Mode::Fixed(t) = mode { Some(t) } else { None };
        for (option, hop) in [("--via-socks5", via_socks5), ("--to", fixed)] {
            if let Some(h) = hop.filter(|h| reaches_listener(*h, listen)) {
                return Err(format!("{option} {h} is this proxy's own --listen address (a loop)"));
            }
        }
        if a.buffer > (1 << 30) {
            return Err(format!("--buffer {}: at most 1 GB per direction", a.buffer));
        }
        if a.max_memory < a.buffer.min(64 * 1024) {
            return Err(format!(
                "--max-memory {} is below one read ({} B): nothing could move",
                a.max_memory,
                a.buffer.min(64 * 1024)
            ));
        }
        if a.max_memory > (1 << 40) {
            return Err("--max-memory: at most 1 TB".into());
        }
        if a.max_connections == 0 {
            return Err("--max-connections must be at least 1".into());
        }
        if a.threads == Some(0) {
            return Err("--threads must be at least 1".into());
        }
        let leg = |cc: &Option<String>, snd, rcv, nagle: bool, mss| LegOptions {
            cc: cc.clone(),
            sndbuf: snd,
            rcvbuf: rcv,
            nodelay: !nagle,
            mss,
        };
        Ok(Config {
            listen,
            allow,
            socks5_auth,
            via_socks5,
            metrics,
            log_json: a.log_json,
            upstream: leg(
                &a.upstream_cc,
                a.upstream_sndbuf,
                a.upstream_rcvbuf,
                a.upstream_nagle,
                a.upstream_mss,
            ),
            mptcp: a.mptcp,
            upstream_bind: a.upstream_bind.map(|ip| SocketAddr::new(ip, 0)),
            client: leg(
                &a.client_cc,
                a.client_sndbuf,
                a.client_rcvbuf,
                a.client_nagle,
                a.client_mss,
            ),
            buffer: a.buffer,
            max_memory: a.max_memory,
            max_connections: a.max_connections,
            connect_timeout: a.connect_timeout,
            idle_timeout: (!a.idle_timeout.is_zero()).then_some(a.idle_timeout),
            handshake_timeout: a.handshake_timeout,
            drain_timeout: a.drain_timeout,
            threads: a.threads,
            quiet: a.quiet,
            mode,
        })
    }
}

/// Whether a connection to `addr` would reach this proxy's own listener
/// (a loop): the listening address itself, or, when listening on every
/// address, any address of this host on that port.
pub fn reaches_listener(addr: SocketAddr, listen: SocketAddr) -> bool {
    let ip = crate::allow::canonical(addr.ip());
    addr.port() == listen.port()
        && (ip == crate::allow::canonical(listen.ip()) || (listen.ip().is_unspecified() && is_local(ip)))
}

/// Whether this host has the address (binding succeeds only for local ones).
fn is_local(ip: std::net::IpAddr) -> bool {
    std::net::UdpSocket::bind(SocketAddr::new(ip, 0)).is_ok()
}

fn allow_rule_for(to: SocketAddr) -> String {
    match to {
        SocketAddr::V4(v4) => format!("{}:{}", v4.ip(), v4.port()),
        SocketAddr::V6(v6) => format!("[{}]:{}", v6.ip(), v6.port()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(args: &[&str]) -> Result<Config, String> {
        let mut argv = vec!["netbraid proxy"];
        argv.extend_from_slice(args);
        Config::from_args(Args::try_parse_from(argv).map_err(|e| e.to_string())?)
    }

    #[test]
    fn a_fixed_upstream_allows_itself_only() {
        let c = config(&["--listen", "127.0.0.1:9000", "--to", "10.0.0.2:5201"]).unwrap();
        assert!(c.allow.permits("10.0.0.2:5201".parse().unwrap()));
        assert!(!c.allow.permits("10.0.0.2:22".parse().unwrap()));
        let err = config(&[
            "--listen",
            "127.0.0.1:9000",
            "--to",
            "10.0.0.2:5201",
            "--allow",
            "10.1.0.0/16",
        ])
        .err()
        .unwrap();
        assert!(err.contains("outside every --allow"), "{err}");
    }

    #[test]
    fn socks5_without_allow_or_off_loopback_is_refused() {
        let err = config(&["--listen", "127.0.0.1:1080", "--socks5"]).err().unwrap();
        assert!(err.contains("no --allow"), "{err}");
        let err = config(&["--listen", "0.0.0.0:1080", "--socks5", "--allow", "10.0.0.0/8"])
            .err()
            .unwrap();
        assert!(err.contains("--socks5-auth"), "{err}");
        assert!(config(&[
            "--listen",
            "0.0.0.0:1080",
            "--socks5",
            "--allow",
            "10.0.0.0/8",
            "--socks5-auth",
            "a:b"
        ])
        .is_ok());
        assert!(config(&[
            "--listen",
            "0.0.0.0:1080",
            "--socks5",
            "--allow",
            "10.0.0.0/8",
            "--allow-unauthenticated"
        ])
        .is_ok());
    }

    #[test]
    fn exactly_one_mode() {
        let err = config(&["--listen", "127.0.0.1:1", "--allow", "10.0.0.0/8"])
            .err()
            .unwrap();
        assert!(err.contains("--to HOST:PORT, --socks5 or --transparent"), "{err}");
        let err = config(&[
            "--listen",
            "127.0.0.1:1",
            "--socks5",
            "--transparent",
            "--allow",
            "10.0.0.0/8",
        ])
        .err()
        .unwrap();
        assert!(err.contains("cannot be used with"), "{err}");
    }

    #[test]
    fn an_upstream_that_is_the_listener_itself_is_refused() {
        let err = config(&["--listen", "127.0.0.1:9000", "--to", "127.0.0.1:9000"])
            .err()
            .unwrap();
        assert!(err.contains("a loop"), "{err}");
        let args = [
            "--listen",
            "0.0.0.0:1080",
            "--socks5",
            "--allow-unauthenticated",
            "--allow",
            "10.0.0.0/8",
        ];
        let err = config(&[&args[..], &["--via-socks5", "127.0.0.1:1080"]].concat())
            .err()
            .unwrap();
        assert!(err.contains("a loop"), "{err}");
        assert!(config(&["--listen", "127.0.0.1:9000", "--to", "127.0.0.1:9001"]).is_ok());
    }

    #[test]
    fn metrics_only_on_loopback() {
        let err = config(&[
            "--listen",
            "127.0.0.1:1",
            "--to",
            "10.0.0.1:1",
            "--metrics",
            "0.0.0.0:9100",
        ])
        .err()
        .unwrap();
        assert!(err.contains("loopback"), "{err}");
    }

    #[test]
    fn sizes_and_times_with_units() {
        assert_eq!(parse_size("256KB"), Ok(256 * 1024));
        assert_eq!(parse_size("4MB"), Ok(4 << 20));
        assert_eq!(parse_size("1500"), Ok(1500));
        assert!(parse_size("4 parsecs").unwrap_err().contains("unknown unit"));
        assert!(parse_size("0").is_err());
        // a lowercase b is bits, as netbraid's scenarios read it
        assert!(parse_size("64kb").unwrap_err().contains("write \"64KB\""));
        assert_eq!(parse_size("64KiB"), Ok(64 * 1024));
        assert_eq!(parse_time("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_time("5min"), Ok(Duration::from_secs(300)));
        assert!(parse_time("-1s").is_err());
    }

    #[test]
    fn listen_must_be_an_address() {
        let err = config(&["--listen", "localhost:80", "--to", "10.0.0.1:1"])
            .err()
            .unwrap();
        assert!(err.contains("--listen"), "{err}");
    }
}
