//! Fuzzes the SOCKS5 parsers (bench/proxy_fuzz.sh runs it for minutes):
//!
//! `fuzz_socks5 CORPUS_DIR MINUTES [SEED]` mutates the corpus' inputs (bit
//! flips, byte changes, insertions, deletions, random tails, splices of two
//! inputs) and checks each with `socks5::shapes`: every prefix through the
//! four parsers. A finding is a panic, or a parser that changes its mind as
//! bytes arrive (once judged complete or bad, always so). Inputs whose
//! outcome shapes are new join the corpus (one file each; the tests replay
//! it); findings go to CORPUS_DIR/findings.

use std::collections::HashSet;
use std::fs;
use std::panic;
use std::path::Path;
use std::time::{Duration, Instant};

use netbraid_proxy::socks5::{self, shapes};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

fn mutate(rng: &mut Pcg64Mcg, corpus: &[Vec<u8>]) -> Vec<u8> {
    let mut b = corpus[rng.gen_range(0..corpus.len())].clone();
    for _ in 0..rng.gen_range(1..4) {
        match rng.gen_range(0..6) {
            0 if !b.is_empty() => {
                let i = rng.gen_range(0..b.len());
                b[i] ^= 1 << rng.gen_range(0..8);
            }
            1 if !b.is_empty() => {
                let i = rng.gen_range(0..b.len());
                b[i] = [0, 1, 2, 3, 4, 5, 0x7f, 0x80, 0xfe, 0xff][rng.gen_range(0..10)];
            }
            2 if b.len() < 1024 => {
                let i = rng.gen_range(0..=b.len());
                b.insert(i, rng.gen());
            }
            3 if !b.is_empty() => {
                let i = rng.gen_range(0..b.len());
                b.remove(i);
            }
            4 => {
                let other = &corpus[rng.gen_range(0..corpus.len())];
                let cut = rng.gen_range(0..=b.len());
                let from = rng.gen_range(0..=other.len());
                b.truncate(cut);
                b.extend_from_slice(&other[from..]);
            }
            _ => {
                let n = rng.gen_range(0..300);
                b.extend((0..n).map(|_| rng.gen::<u8>()));
            }
        }
    }
    b
}

fn seeds() -> Vec<Vec<u8>> {
    let mut name = vec![5, 1, 0, 3, 11];
    name.extend_from_slice(b"example.org");
    name.extend_from_slice(&[0, 80]);
    vec![
        vec![5, 1, 0],
        vec![5, 2, 0, 2],
        vec![1, 5, b'a', b'l', b'i', b'c', b'e', 2, b'p', b'w'],
        vec![5, 1, 0, 1, 10, 0, 0, 1, 0x13, 0x89],
        name,
        socks5::request_bytes("[2001:db8::1]:443".parse().unwrap()),
        socks5::reply_bytes(0, Some("192.0.2.1:1080".parse().unwrap())),
    ]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: fuzz_socks5 CORPUS_DIR MINUTES [SEED]");
        std::process::exit(2);
    }
    let dir = Path::new(&args[1]);
    let minutes: f64 = args[2].parse().expect("MINUTES");
    let seed: u64 = args.get(3).map_or(1, |s| s.parse().expect("SEED"));
    fs::create_dir_all(dir.join("findings")).expect("corpus directory");
    let mut corpus: Vec<Vec<u8>> = fs::read_dir(dir)
        .expect("corpus directory")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_file())
        .filter_map(|e| fs::read(e.path()).ok())
        .collect();
    let loaded = corpus.len();
    if corpus.is_empty() {
        corpus = seeds();
    }
    let mut seen: HashSet<Vec<String>> = corpus.iter().filter_map(|b| shapes(b).ok()).collect();
    panic::set_hook(Box::new(|_| {}));
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let (start, span) = (Instant::now(), Duration::from_secs_f64(minutes * 60.0));
    let (mut tried, mut added, mut findings) = (0u64, 0usize, 0usize);
    while start.elapsed() < span {
        let input = mutate(&mut rng, &corpus);
        tried += 1;
        let verdict = panic::catch_unwind(|| shapes(&input)).unwrap_or_else(|_| Err("panic".into()));
        match verdict {
            Ok(sig) => {
                if seen.insert(sig) {
                    fs::write(dir.join(format!("{:016x}", fnv(&input))), &input).expect("corpus write");
                    corpus.push(input);
                    added += 1;
                }
            }
            Err(why) => {
                findings += 1;
                eprintln!("finding: {why} (input {:02x?})", &input[..input.len().min(64)]);
                fs::write(dir.join("findings").join(format!("{:016x}", fnv(&input))), &input).expect("finding write");
            }
        }
    }
    println!(
        "{{\"seed\": {seed}, \"minutes\": {:.2}, \"inputs\": {tried}, \"corpus_loaded\": {loaded}, \"corpus_added\": {added}, \"outcome_shapes\": {}, \"findings\": {findings}}}",
        start.elapsed().as_secs_f64() / 60.0,
        seen.len()
    );
    std::process::exit(if findings > 0 { 1 } else { 0 });
}

/// A stable file name for an input.
fn fnv(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf29ce484222325u64, |h, &x| {
        (h ^ x as u64).wrapping_mul(0x100000001b3)
    })
}
