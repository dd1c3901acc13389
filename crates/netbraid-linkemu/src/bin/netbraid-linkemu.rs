fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(netbraid_linkemu::main_with_args(&args));
}
