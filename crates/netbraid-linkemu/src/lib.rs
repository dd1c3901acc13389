//! netbraid-linkemu: emulated links between network namespaces.
//!
//! Each link has a TUN device per side; the orchestrator moves each device
//! into its namespace and addresses it. Per direction the emulator applies
//! a tail-drop FIFO (packets or bytes), serialisation at the link rate, loss
//! (Bernoulli, Gilbert–Elliott, list) and propagation delay with optional
//! non-reordering jitter — the simulator's link pipeline, on real packets.

pub mod config;
pub mod rt;
pub mod run;
pub mod shaper;
pub mod tun;

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM, SIGUSR1};
use signal_hook::iterator::Signals;

const USAGE: &str = "usage: netbraid-linkemu CONFIG.json   (or - for standard input)

Creates the TUN devices named in the configuration, prints one JSON line
{\"ready\": true, ...} on standard output, and forwards until SIGTERM, SIGINT
or SIGHUP (or until its parent dies). Counters are written to the
configuration's `stats` file at exit and on SIGUSR1.";

/// Run the emulator with command-line `args` (without the program name);
/// returns the process exit status.
pub fn main_with_args(args: &[String]) -> i32 {
    let path = match args {
        [p] if p != "-h" && p != "--help" => p,
        [_] => {
            println!("{USAGE}");
            return 0;
        }
        _ => {
            eprintln!("{USAGE}");
            return 2;
        }
    };
    let text = if path == "-" {
        let mut s = String::new();
        if let Err(e) = std::io::Read::read_to_string(&mut std::io::stdin(), &mut s) {
            eprintln!("netbraid-linkemu: reading standard input: {e}");
            return 2;
        }
        s
    } else {
        match std::fs::read_to_string(path) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("netbraid-linkemu: cannot read {path}: {e}");
                return 2;
            }
        }
    };
    let cfg = match config::Config::parse(&text) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("netbraid-linkemu: {e}");
            return 2;
        }
    };
    // Registered before the devices exist so that no signal is missed.
    let mut signals = match Signals::new([SIGTERM, SIGINT, SIGHUP, SIGUSR1]) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("netbraid-linkemu: cannot install signal handlers: {e}");
            return 1;
        }
    };
    rt::die_with_parent(SIGTERM);
    let emu = match run::Emulator::start(&cfg) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("netbraid-linkemu: {e}");
            return 3;
        }
    };
    println!(
        "{{\"ready\": true, \"links\": {}, \"realtime\": {}, \"timer_slack\": {}}}",
        cfg.links.len(),
        emu.realtime,
        emu.timer_slack
    );
    let _ = std::io::Write::flush(&mut std::io::stdout());
    let save = || {
        if let Some(p) = &cfg.stats {
            if let Err(e) = emu.write_stats(p) {
                eprintln!("netbraid-linkemu: cannot write stats to {p}: {e}");
            }
        }
    };
    for sig in signals.forever() {
        save();
        if sig != SIGUSR1 {
            break;
        }
    }
    0
}
