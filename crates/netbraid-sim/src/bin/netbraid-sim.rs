//! Run a resolved scenario (JSON, as `netbraid resolve` writes it) without
//! Python: for benchmarks and profiling, where the interpreter would blur
//! the simulator's own time and memory.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    const USAGE: &str = "usage: netbraid-sim RESOLVED_SCENARIO.json   (make one with `netbraid resolve`)";
    let [_, path] = args.as_slice() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    if path == "-h" || path == "--help" {
        println!("{USAGE}\nRuns the scenario and writes its results as JSON on standard output.");
        return ExitCode::SUCCESS;
    }
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: cannot read '{path}': {e}");
            return ExitCode::from(2);
        }
    };
    // The results are written as they are encoded, not built as one string
    // first: with many flows that string would be the run's peak memory.
    let written = netbraid_sim::simulation_from_json(text)
        .and_then(|sim| sim.run())
        .and_then(|r| netbraid_sim::write_results_json(&r, std::io::stdout().lock()));
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
