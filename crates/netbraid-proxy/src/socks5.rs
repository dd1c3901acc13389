//! SOCKS5 (RFC 1928) with username/password authentication (RFC 1929),
//! CONNECT only, as pure functions over the bytes received so far: no I/O,
//! so every input a peer can send is tested and fuzzed without sockets.
//!
//! Each parser returns `Need` while the message is incomplete, `Done` with
//! the bytes it consumed, or `Bad` with the reply code to send before
//! closing (`None`: close without a reply, the peer does not speak SOCKS5).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

pub const VERSION: u8 = 5;
pub const NO_AUTH: u8 = 0x00;
pub const USER_PASS: u8 = 0x02;
pub const NO_ACCEPTABLE: u8 = 0xff;

/// Reply codes (RFC 1928 §6).
pub mod reply {
    pub const SUCCEEDED: u8 = 0x00;
    pub const GENERAL_FAILURE: u8 = 0x01;
    pub const NOT_ALLOWED: u8 = 0x02;
    pub const NETWORK_UNREACHABLE: u8 = 0x03;
    pub const HOST_UNREACHABLE: u8 = 0x04;
    pub const CONNECTION_REFUSED: u8 = 0x05;
    pub const TTL_EXPIRED: u8 = 0x06;
    pub const COMMAND_NOT_SUPPORTED: u8 = 0x07;
    pub const ADDRESS_TYPE_NOT_SUPPORTED: u8 = 0x08;
}

/// The longest host name DNS allows (RFC 1035: 253 characters as text).
pub const MAX_HOST_NAME: usize = 253;

#[derive(Debug, PartialEq, Eq)]
pub enum Parse<T> {
    /// At least this many more bytes are needed.
    Need(usize),
    Done(T, usize),
    Bad(Bad),
}

#[derive(Debug, PartialEq, Eq, Clone)]
pub struct Bad {
    /// Reply to send before closing, if the peer speaks SOCKS5 at all.
    pub reply: Option<u8>,
    pub why: String,
}

fn bad<T>(reply: Option<u8>, why: impl Into<String>) -> Parse<T> {
    Parse::Bad(Bad { reply, why: why.into() })
}

/// Where the client asks to go.
#[derive(Debug, PartialEq, Eq, Clone)]
pub enum Target {
    Addr(SocketAddr),
    Name(String, u16),
}

/// In records, as "host:port" text.
impl serde::Serialize for Target {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Addr(a) => write!(f, "{a}"),
            Target::Name(h, p) => write!(f, "{h}:{p}"),
        }
    }
}

/// Method selection: VER NMETHODS METHODS...
pub fn greeting(buf: &[u8]) -> Parse<Vec<u8>> {
    if buf.is_empty() {
        return Parse::Need(2);
    }
    if buf[0] != VERSION {
        return bad(None, format!("not SOCKS5 (first byte {:#04x})", buf[0]));
    }
    if buf.len() < 2 {
        return Parse::Need(2 - buf.len());
    }
    let n = buf[1] as usize;
    if n == 0 {
        return bad(Some(NO_ACCEPTABLE), "greeting offers no authentication method");
    }
    if buf.len() < 2 + n {
        return Parse::Need(2 + n - buf.len());
    }
    Parse::Done(buf[2..2 + n].to_vec(), 2 + n)
}

/// Username/password sub-negotiation (RFC 1929): VER=1 ULEN UNAME PLEN PASSWD.
pub fn user_pass(buf: &[u8]) -> Parse<(Vec<u8>, Vec<u8>)> {
    if buf.is_empty() {
        return Parse::Need(2);
    }
    if buf[0] != 1 {
        return bad(None, format!("username/password version {} (RFC 1929 has 1)", buf[0]));
    }
    if buf.len() < 2 {
        return Parse::Need(1);
    }
    let ulen = buf[1] as usize;
    if buf.len() < 3 + ulen {
        return Parse::Need(3 + ulen - buf.len());
    }
    let plen = buf[2 + ulen] as usize;
    let end = 3 + ulen + plen;
    if buf.len() < end {
        return Parse::Need(end - buf.len());
    }
    Parse::Done((buf[2..2 + ulen].to_vec(), buf[3 + ulen..end].to_vec()), end)
}

/// The request: VER CMD RSV ATYP DST.ADDR DST.PORT.
pub fn request(buf: &[u8]) -> Parse<Target> {
    if buf.len() < 4 {
        if !buf.is_empty() && buf[0] != VERSION {
            return bad(None, format!("request version {:#04x}, not 5", buf[0]));
        }
        return Parse::Need(4 - buf.len());
    }
    if buf[0] != VERSION {
        return bad(None, format!("request version {:#04x}, not 5", buf[0]));
    }
    let (addr_len, start) = match buf[3] {
        0x01 => (4, 4),
        0x04 => (16, 4),
        0x03 => {
            if buf.len() < 5 {
                return Parse::Need(1);
            }
            (buf[4] as usize, 5)
        }
        other => {
            return bad(
                Some(reply::ADDRESS_TYPE_NOT_SUPPORTED),
                format!("address type {other:#04x} (1, 3 or 4)"),
            )
        }
    };
    let end = start + addr_len + 2;
    if buf.len() < end {
        return Parse::Need(end - buf.len());
    }
    // The whole request is read before it is judged, so the reply goes to
    // a client that is listening for it.
    if buf[1] != 0x01 {
        let what = match buf[1] {
            0x02 => "BIND",
            0x03 => "UDP ASSOCIATE",
            _ => "an unknown command",
        };
        return bad(
            Some(reply::COMMAND_NOT_SUPPORTED),
            format!("{what} ({:#04x}); only CONNECT is relayed", buf[1]),
        );
    }
    let port = u16::from_be_bytes([buf[end - 2], buf[end - 1]]);
    let a = &buf[start..start + addr_len];
    let target = match buf[3] {
        0x01 => Target::Addr(SocketAddr::new(IpAddr::V4(Ipv4Addr::new(a[0], a[1], a[2], a[3])), port)),
        0x04 => {
            let mut b = [0u8; 16];
            b.copy_from_slice(a);
            Target::Addr(SocketAddr::new(IpAddr::V6(Ipv6Addr::from(b)), port))
        }
        _ => match host_name(a) {
            Ok(name) => Target::Name(name, port),
            Err(why) => return bad(Some(reply::HOST_UNREACHABLE), why),
        },
    };
    if port == 0 {
        return bad(Some(reply::HOST_UNREACHABLE), "destination port 0");
    }
    Parse::Done(target, end)
}

/// A DNS name as letters, digits, '-', '_' and dots; an address written as
/// a name ("10.0.0.1") is taken as that address by the resolver.
fn host_name(bytes: &[u8]) -> Result<String, String> {
    if bytes.is_empty() {
        return Err("empty host name".into());
    }
    if bytes.len() > MAX_HOST_NAME {
        return Err(format!("host name of {} bytes (at most {MAX_HOST_NAME})", bytes.len()));
    }
    if let Some(&b) = bytes
        .iter()
        .find(|&&b| !(b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b'_'))
    {
        return Err(format!(
            "host name with byte {b:#04x} (letters, digits, '-', '_' and '.')"
        ));
    }
    Ok(String::from_utf8(bytes.to_vec()).expect("ASCII checked above"))
}

/// The reply: VER REP RSV ATYP BND.ADDR BND.PORT.
pub fn reply_bytes(code: u8, bound: Option<SocketAddr>) -> Vec<u8> {
    let bound = bound.unwrap_or(SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0));
    let mut out = vec![VERSION, code, 0];
    match bound.ip() {
        IpAddr::V4(v4) => {
            out.push(0x01);
            out.extend_from_slice(&v4.octets());
        }
        IpAddr::V6(v6) => {
            out.push(0x04);
            out.extend_from_slice(&v6.octets());
        }
    }
    out.extend_from_slice(&bound.port().to_be_bytes());
    out
}

/// A CONNECT request for `target`, as the next proxy in a chain is asked.
pub fn request_bytes(target: SocketAddr) -> Vec<u8> {
    let mut out = reply_bytes(0x01, Some(target));
    out[1] = 0x01; // CMD = CONNECT (the same layout as a reply)
    out
}

/// A reply from the next proxy: its code and the bytes it took.
pub fn parse_reply(buf: &[u8]) -> Parse<u8> {
    if buf.len() < 4 {
        return Parse::Need(4 - buf.len());
    }
    if buf[0] != VERSION {
        return bad(None, format!("next proxy replied version {:#04x}", buf[0]));
    }
    let addr_len = match buf[3] {
        0x01 => 4,
        0x04 => 16,
        0x03 => {
            if buf.len() < 5 {
                return Parse::Need(1);
            }
            1 + buf[4] as usize
        }
        other => return bad(None, format!("next proxy replied address type {other:#04x}")),
    };
    let end = 4 + addr_len + 2;
    if buf.len() < end {
        return Parse::Need(end - buf.len());
    }
    Parse::Done(buf[1], end)
}

pub fn reply_text(code: u8) -> &'static str {
    match code {
        reply::SUCCEEDED => "succeeded",
        reply::GENERAL_FAILURE => "general failure",
        reply::NOT_ALLOWED => "not allowed by ruleset",
        reply::NETWORK_UNREACHABLE => "network unreachable",
        reply::HOST_UNREACHABLE => "host unreachable",
        reply::CONNECTION_REFUSED => "connection refused",
        reply::TTL_EXPIRED => "TTL expired",
        reply::COMMAND_NOT_SUPPORTED => "command not supported",
        reply::ADDRESS_TYPE_NOT_SUPPORTED => "address type not supported",
        _ => "unknown reply code",
    }
}

/// The fuzzer's property over one input (examples/fuzz_socks5.rs, and the
/// kept corpus replayed by the tests): every parser on every prefix, where
/// once a prefix is judged complete or bad, every longer one must be judged
/// the same (more bytes never rescue a bad message nor change a finished
/// one). Returns each parser's final outcome as a shape (kind, variant,
/// reason; no values), or the change of mind.
pub fn shapes(input: &[u8]) -> Result<Vec<String>, String> {
    fn judge<T: std::fmt::Debug>(p: Parse<T>) -> (u8, String) {
        match p {
            Parse::Need(_) => (0, "need".into()),
            Parse::Done(v, n) => (1, format!("done {n} {v:?}")),
            Parse::Bad(b) => (
                2,
                format!("bad {:?} {}", b.reply, b.why.split("0x").next().unwrap_or("")),
            ),
        }
    }
    type Judge = fn(&[u8]) -> (u8, String);
    let parsers: [(&str, Judge); 4] = [
        ("greeting", |b| judge(greeting(b))),
        ("user_pass", |b| judge(user_pass(b))),
        ("request", |b| judge(request(b))),
        ("reply", |b| judge(parse_reply(b))),
    ];
    let mut out = Vec::new();
    for (name, parse) in parsers {
        let mut settled: Option<(usize, u8, String)> = None;
        for k in 0..=input.len() {
            let (kind, outcome) = parse(&input[..k]);
            match &settled {
                Some((at, skind, soutcome)) if kind != *skind || (kind == 1 && outcome != *soutcome) => {
                    return Err(format!("{name}: {soutcome:?} at {at} bytes, then {outcome:?} at {k}"));
                }
                Some(_) => {}
                None if kind != 0 => settled = Some((k, kind, outcome.clone())),
                None => {}
            }
        }
        let last = settled.map_or("need".to_string(), |(_, _, o)| o);
        let shape: String = last
            .split(['(', '['])
            .next()
            .unwrap_or("")
            .chars()
            .filter(|c| !c.is_ascii_digit())
            .collect();
        out.push(format!("{name}:{shape}"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn greeting_needs_then_takes_the_methods() {
        assert_eq!(greeting(&[]), Parse::Need(2));
        assert_eq!(greeting(&[5]), Parse::Need(1));
        assert_eq!(greeting(&[5, 2, 0]), Parse::Need(1));
        assert_eq!(greeting(&[5, 2, 0, 2, 9]), Parse::Done(vec![0, 2], 4));
        assert!(matches!(greeting(&[4, 1, 0]), Parse::Bad(Bad { reply: None, .. })));
        assert!(matches!(
            greeting(&[5, 0]),
            Parse::Bad(Bad {
                reply: Some(NO_ACCEPTABLE),
                ..
            })
        ));
    }

    #[test]
    fn connect_requests_of_each_address_type() {
        let v4 = [5, 1, 0, 1, 10, 0, 0, 2, 0x13, 0x89];
        assert_eq!(
            request(&v4),
            Parse::Done(Target::Addr("10.0.0.2:5001".parse().unwrap()), 10)
        );
        let mut v6 = vec![5, 1, 0, 4];
        v6.extend_from_slice(&"2001:db8::1".parse::<Ipv6Addr>().unwrap().octets());
        v6.extend_from_slice(&[0, 80]);
        assert_eq!(
            request(&v6),
            Parse::Done(Target::Addr("[2001:db8::1]:80".parse().unwrap()), 22)
        );
        let mut name = vec![5, 1, 0, 3, 11];
        name.extend_from_slice(b"example.org");
        name.extend_from_slice(&[1, 187]);
        assert_eq!(request(&name), Parse::Done(Target::Name("example.org".into(), 443), 18));
        // Every strict prefix asks for more.
        for cut in 0..name.len() {
            assert!(matches!(request(&name[..cut]), Parse::Need(n) if n > 0), "cut {cut}");
        }
    }

    #[test]
    fn bad_requests_get_the_rfc_reply_code() {
        let code = |b: &[u8]| match request(b) {
            Parse::Bad(bad) => bad.reply,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            code(&[5, 2, 0, 1, 1, 2, 3, 4, 0, 80]),
            Some(reply::COMMAND_NOT_SUPPORTED)
        );
        assert_eq!(code(&[5, 1, 0, 9]), Some(reply::ADDRESS_TYPE_NOT_SUPPORTED));
        assert_eq!(code(&[5, 1, 0, 3, 0, 0, 80]), Some(reply::HOST_UNREACHABLE));
        assert_eq!(code(&[5, 1, 0, 1, 1, 2, 3, 4, 0, 0]), Some(reply::HOST_UNREACHABLE));
        let mut long = vec![5, 1, 0, 3, 255];
        long.extend(std::iter::repeat_n(b'a', 255));
        long.extend_from_slice(&[0, 80]);
        assert_eq!(code(&long), Some(reply::HOST_UNREACHABLE));
        let mut nul = vec![5, 1, 0, 3, 3, b'a', 0, b'b', 0, 80];
        assert_eq!(code(&nul), Some(reply::HOST_UNREACHABLE));
        nul[0] = 4;
        assert_eq!(code(&nul), None);
    }

    #[test]
    fn user_pass_subnegotiation() {
        let msg = [1, 3, b'b', b'o', b'b', 2, b'p', b'w'];
        assert_eq!(user_pass(&msg), Parse::Done((b"bob".to_vec(), b"pw".to_vec()), 8));
        for cut in 0..msg.len() {
            assert!(matches!(user_pass(&msg[..cut]), Parse::Need(_)), "cut {cut}");
        }
    }

    #[test]
    fn a_chained_request_reads_back_as_the_same_target() {
        for t in ["10.1.2.3:80", "[fd00::7]:8443"] {
            let addr: SocketAddr = t.parse().unwrap();
            let bytes = request_bytes(addr);
            assert_eq!(request(&bytes), Parse::Done(Target::Addr(addr), bytes.len()));
            let rep = reply_bytes(reply::SUCCEEDED, Some(addr));
            assert_eq!(parse_reply(&rep), Parse::Done(0, rep.len()));
        }
    }

    #[test]
    fn the_kept_fuzz_corpus_still_holds() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/proxy-fuzz-corpus");
        let mut n = 0;
        for entry in std::fs::read_dir(&dir).expect("bench/proxy-fuzz-corpus") {
            let path = entry.unwrap().path();
            if path.is_file() {
                let input = std::fs::read(&path).unwrap();
                if let Err(why) = shapes(&input) {
                    panic!("{}: {why}", path.display());
                }
                n += 1;
            }
        }
        assert!(n >= 7, "only {n} inputs in {}", dir.display());
    }

    fn check_contract<T: std::fmt::Debug>(buf: &[u8], p: Parse<T>) {
        match p {
            Parse::Need(n) => assert!(n > 0),
            Parse::Done(_, used) => assert!(used > 0 && used <= buf.len()),
            Parse::Bad(b) => assert!(!b.why.is_empty()),
        }
    }

    proptest! {
        // Any bytes a peer can send: no panic, and the answer is consistent.
        #[test]
        fn parsers_never_panic(buf in proptest::collection::vec(any::<u8>(), 0..600)) {
            check_contract(&buf, greeting(&buf));
            check_contract(&buf, user_pass(&buf));
            check_contract(&buf, request(&buf));
            check_contract(&buf, parse_reply(&buf));
        }

        // A prefix of a well-formed request is never judged bad.
        #[test]
        fn prefixes_of_valid_requests_need_more(name in "[a-z0-9.-]{1,253}", port in 1u16.., cut in 0usize..300) {
            let mut req = vec![5, 1, 0, 3, name.len() as u8];
            req.extend_from_slice(name.as_bytes());
            req.extend_from_slice(&port.to_be_bytes());
            let cut = cut.min(req.len());
            match request(&req[..cut]) {
                Parse::Need(n) => prop_assert!(cut < req.len() && n <= req.len() - cut),
                Parse::Done(Target::Name(h, p), used) => {
                    prop_assert_eq!(used, req.len());
                    prop_assert_eq!(h, name);
                    prop_assert_eq!(p, port);
                }
                other => prop_assert!(false, "{:?}", other),
            }
        }
    }
}
