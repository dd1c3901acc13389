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
    let result = netbraid_sim::simulation_from_json(text).and_then(|sim| sim.run());
    let json = result.and_then(|r| {
        serde_json::to_string(&r).map_err(|e| netbraid_sim::SimError::Output(format!("could not encode results: {e}")))
    });
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
