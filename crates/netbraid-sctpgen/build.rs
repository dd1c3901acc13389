//! Where the counters the generator reports sit in usrsctp's `struct
//! sctpstat`: read from the installed header (`usrsctp.h`), so that a newer
//! libusrsctp with fields added cannot make the reports read the wrong words.
//! The struct holds 32-bit words only (its first field, a timeval, two).

use std::path::PathBuf;

const WANTED: [&str; 7] = [
    "sctps_recvsacks",
    "sctps_recvdupdata",
    "sctps_sendsacks",
    "sctps_senddata",
    "sctps_sendretransdata",
    "sctps_sendfastretrans",
    "sctps_timodata",
];

fn main() {
    let header = std::env::var_os("USRSCTP_H")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/include/usrsctp.h"));
    println!("cargo:rerun-if-changed={}", header.display());
    println!("cargo:rerun-if-env-changed=USRSCTP_H");
    let text = std::fs::read_to_string(&header).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (install libusrsctp-dev, or set USRSCTP_H to its usrsctp.h)",
            header.display()
        )
    });
    let start = text
        .find("struct sctpstat {")
        .expect("usrsctp.h declares struct sctpstat");
    let body = &text[start + "struct sctpstat {".len()..];
    let body = &body[..body.find("\n};").expect("struct sctpstat ends")];
    // drop comments, then read `type name[count];` declarations in order
    let mut plain = String::new();
    let mut rest = body;
    while let Some(i) = rest.find("/*") {
        plain.push_str(&rest[..i]);
        rest = rest[i..].find("*/").map_or("", |j| &rest[i + j + 2..]);
    }
    plain.push_str(rest);
    let mut word = 0usize;
    let mut found = Vec::new();
    for decl in plain.split(';') {
        let tokens: Vec<&str> = decl.split_whitespace().collect();
        let Some(last) = tokens.last() else { continue };
        let words = match tokens.first() {
            Some(&"uint32_t") => 1,
            Some(&"struct") if tokens.get(1) == Some(&"sctp_timeval") => 2,
            _ => panic!("usrsctp.h: struct sctpstat has a field netbraid cannot size: {decl:?}"),
        };
        let (name, count) = match last.split_once('[') {
            Some((n, c)) => (n, c.trim_end_matches(']').parse::<usize>().expect("an array length")),
            None => (*last, 1),
        };
        if WANTED.contains(&name) {
            found.push(format!(
                "pub const {}: usize = {word};",
                name.trim_start_matches("sctps_").to_uppercase()
            ));
        }
        word += words * count;
    }
    assert_eq!(
        found.len(),
        WANTED.len(),
        "usrsctp.h's struct sctpstat lacks a counter netbraid reads"
    );
    found.push(format!("/// Words in the struct.\npub const WORDS: usize = {word};"));
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("sctpstat.rs");
    std::fs::write(out, found.join("\n") + "\n").expect("OUT_DIR is writable");
}
