//! Run a resolved scenario (JSON, as `netbraid resolve` writes it) without
//! Python: for benchmarks and profiling, where the interpreter would blur
//! the simulator's own time and memory.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let [_, path] = args.as_slice() else {
        eprintln!("usage: netbraid-sim RESOLVED_SCENARIO.json   (make one with `netbraid resolve`)");
        return ExitCode::from(2);
    };
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: cannot read '{path}': {e}");
            return ExitCode::from(2);
        }
    };
    let json = netbraid_sim::simulation_from_json(text)
        .and_then(|sim| sim.run())
        .and_then(|r| netbraid_sim::results_json(&r));
    match json {
        Ok(json) => {
            println!("{json}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
