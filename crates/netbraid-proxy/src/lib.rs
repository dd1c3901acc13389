//! `netbraid proxy`: a split-TCP proxy. Each accepted TCP connection is
//! relayed into a new one towards the next hop — a fixed upstream, the
//! destination a SOCKS5 client names, or the original destination of a
//! transparently redirected connection — so that each leg runs its own
//! control loop with its own settings (seed 002's proxy, as a program).
//!
//! - `config`: the command line and its checks
//! - `allow`: the destination allow-list (never an open relay)
//! - `socks5`: the SOCKS5 messages, parsed without I/O
//! - `leg`: per-leg socket settings, connecting, original destinations
//! - `relay`: one direction of a connection (splice, bounded memory)
//! - `deadline`: every connection's timeouts, swept once per thread
//! - `server`: accepting, deciding, connecting, relaying, shutting down
//! - `observe`: per-connection JSON records and Prometheus counters

pub mod allow;
pub mod config;
pub mod deadline;
pub mod leg;
pub mod observe;
pub mod relay;
pub mod server;
pub mod socks5;

use clap::Parser;

/// `netbraid proxy ARGS...` (args[0] is the program name). Returns the exit
/// status: 0 after a clean shutdown, 2 for a usage error.
pub fn main_with_args(args: &[String]) -> i32 {
    let parsed = match config::Args::try_parse_from(args) {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    match config::Config::from_args(parsed) {
        Ok(cfg) => server::run(cfg),
        Err(msg) => {
            eprintln!("netbraid proxy: error: {msg}");
            2
        }
    }
}
