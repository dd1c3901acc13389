//! The proxy as its own program, for hosts without Python: `netbraid-proxy
//! --listen ... --to ...` is `netbraid proxy --listen ... --to ...`.

fn main() {
    let args: Vec<String> = std::env::args().collect();
    std::process::exit(netbraid_proxy::main_with_args(&args));
}
