//! Optimised builds of the simulator are profile-guided (pgo/README.md,
//! scripts/rustc-pgo): a new profile must rebuild it, which cargo does not
//! know from the wrapper's flags alone.
fn main() {
    println!("cargo:rerun-if-changed=../../pgo/netbraid.profdata.gz");
    println!("cargo:rerun-if-changed=../../pgo/llvm-major");
}
