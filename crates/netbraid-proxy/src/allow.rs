//! The allow-list: which destinations the proxy may relay to.
//!
//! A rule is `CIDR[:PORTS]` — `10.0.0.0/8`, `192.0.2.7:80,443`,
//! `198.51.100.0/24:8000-8100`, `[2001:db8::/32]:443` (IPv6 with ports in
//! brackets). An address without a prefix length is one host. An empty list
//! allows nothing: the proxy is never an open relay.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::ops::RangeInclusive;

use ipnet::IpNet;

/// One `CIDR[:PORTS]` rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    pub net: IpNet,
    /// Empty: every port.
    pub ports: Vec<RangeInclusive<u16>>,
}

/// Every rule given with `--allow`.
#[derive(Clone, Debug, Default)]
pub struct AllowList {
    rules: Vec<Rule>,
}

pub const RULE_HELP: &str = "CIDR[:PORTS], e.g. 10.0.0.0/8, 192.0.2.7:80,443, \
     198.51.100.0/24:8000-8100 or [2001:db8::/32]:443 (an address without /LEN is one host)";

impl AllowList {
    pub fn new(rules: Vec<Rule>) -> Self {
        AllowList { rules }
    }

    pub fn parse_all<S: AsRef<str>>(texts: &[S]) -> Result<Self, String> {
        let rules = texts
            .iter()
            .map(|t| Rule::parse(t.as_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(AllowList { rules })
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    pub fn permits(&self, dest: SocketAddr) -> bool {
        let ip = canonical(dest.ip());
        self.rules
            .iter()
            .any(|r| r.net.contains(&ip) && r.permits_port(dest.port()))
    }

    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }
}

/// IPv4-mapped IPv6 addresses (`::ffff:10.0.0.1`) are checked as IPv4.
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
        v4 => v4,
    }
}

impl Rule {
    pub fn parse(text: &str) -> Result<Rule, String> {
        let bad = |why: &str| format!("--allow {text:?}: {why} (allowed: {RULE_HELP})");
        let text_trim = text.trim();
        let (net_text, ports_text) = if let Some(rest) = text_trim.strip_prefix('[') {
            let (inside, after) = rest.split_once(']').ok_or_else(|| bad("'[' without ']'"))?;
            match after {
                "" => (inside, None),
                _ => (
                    inside,
                    Some(after.strip_prefix(':').ok_or_else(|| bad("expected ':' after ']'"))?),
                ),
            }
        } else if text_trim.matches(':').count() > 1 {
            (text_trim, None) // IPv6 without ports
        } else {
            match text_trim.split_once(':') {
                Some((n, p)) => (n, Some(p)),
                None => (text_trim, None),
            }
        };
        let net = parse_net(net_text).map_err(|why| bad(&why))?;
        let ports = match ports_text {
            None => Vec::new(),
            Some(p) => parse_ports(p).map_err(|why| bad(&why))?,
        };
        Ok(Rule { net, ports })
    }

    fn permits_port(&self, port: u16) -> bool {
        self.ports.is_empty() || self.ports.iter().any(|r| r.contains(&port))
    }
}

fn parse_net(text: &str) -> Result<IpNet, String> {
    if text.is_empty() {
        return Err("no address".into());
    }
    if text.contains('/') {
        let net: IpNet = text.parse().map_err(|_| format!("{text:?} is not a CIDR"))?;
        // 10.1.2.3/8 most likely means 10.0.0.0/8; say so rather than guess.
        if net.trunc() != net {
            return Err(format!("{text:?} has host bits set (did you mean {}?)", net.trunc()));
        }
        // ::ffff:10.0.0.0/104 is 10.0.0.0/8: destinations are checked as IPv4.
        if let IpNet::V6(v6) = net {
            if let (Some(v4), true) = (v6.addr().to_ipv4_mapped(), v6.prefix_len() >= 96) {
                return Ok(IpNet::V4(
                    ipnet::Ipv4Net::new(v4, v6.prefix_len() - 96).expect("prefix at most 32"),
                ));
            }
        }
        Ok(net)
    } else {
        let ip: IpAddr = text.parse().map_err(|_| format!("{text:?} is not an IP address"))?;
        Ok(IpNet::from(canonical(ip)))
    }
}

fn parse_ports(text: &str) -> Result<Vec<RangeInclusive<u16>>, String> {
    if text.is_empty() {
        return Err("':' without ports".into());
    }
    text.split(',')
        .map(|part| {
            let port = |s: &str| -> Result<u16, String> {
                match s.trim().parse::<u16>() {
                    Ok(0) | Err(_) => Err(format!("{s:?} is not a port (1-65535)")),
                    Ok(p) => Ok(p),
                }
            };
            match part.split_once('-') {
                Some((lo, hi)) => {
                    let (lo, hi) = (port(lo)?, port(hi)?);
                    if lo > hi {
                        return Err(format!("port range {part:?} runs backwards"));
                    }
                    Ok(lo..=hi)
                }
                None => {
                    let p = port(part)?;
                    Ok(p..=p)
                }
            }
        })
        .collect()
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.net)?;
        if !self.ports.is_empty() {
            let ports: Vec<String> = self
                .ports
                .iter()
                .map(|r| {
                    if r.start() == r.end() {
                        r.start().to_string()
                    } else {
                        format!("{}-{}", r.start(), r.end())
                    }
                })
                .collect();
            write!(f, " port {}", ports.join(","))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sa(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn an_empty_list_permits_nothing() {
        assert!(!AllowList::default().permits(sa("127.0.0.1:80")));
    }

    #[test]
    fn cidr_and_ports_are_both_checked() {
        let list = AllowList::parse_all(&["10.0.0.0/8:80,443,8000-8100"]).unwrap();
        assert!(list.permits(sa("10.200.3.4:443")));
        assert!(list.permits(sa("10.0.0.1:8050")));
        assert!(!list.permits(sa("10.0.0.1:22")));
        assert!(!list.permits(sa("11.0.0.1:80")));
    }

    #[test]
    fn a_bare_address_is_one_host_on_every_port() {
        let list = AllowList::parse_all(&["192.0.2.7"]).unwrap();
        assert!(list.permits(sa("192.0.2.7:1")));
        assert!(list.permits(sa("192.0.2.7:65535")));
        assert!(!list.permits(sa("192.0.2.8:80")));
    }

    #[test]
    fn ipv6_rules_with_and_without_ports() {
        let list = AllowList::parse_all(&["[2001:db8::/32]:443", "fd00::/8"]).unwrap();
        assert!(list.permits(sa("[2001:db8::1]:443")));
        assert!(!list.permits(sa("[2001:db8::1]:80")));
        assert!(list.permits(sa("[fd12::1]:9")));
        assert!(!list.permits(sa("[2001:db9::1]:443")));
    }

    #[test]
    fn mapped_ipv4_is_checked_as_ipv4() {
        let list = AllowList::parse_all(&["127.0.0.0/8"]).unwrap();
        assert!(list.permits(sa("[::ffff:127.0.0.1]:80")));
        let mapped_rule = AllowList::parse_all(&["::ffff:10.0.0.0/104"]).unwrap();
        assert!(mapped_rule.permits(sa("10.1.2.3:80")));
        assert!(mapped_rule.permits(sa("[::ffff:10.1.2.3]:80")));
        assert!(!mapped_rule.permits(sa("11.1.2.3:80")));
    }

    #[test]
    fn bad_rules_name_the_text_and_what_is_allowed() {
        for (text, want) in [
            ("10.0.0.1/8", "host bits"),
            ("10.0.0.0/33", "not a CIDR"),
            ("example.com", "not an IP address"),
            ("10.0.0.0/8:0", "not a port"),
            ("10.0.0.0/8:90-80", "backwards"),
            ("10.0.0.0/8:", "without ports"),
            ("[::1", "without ']'"),
            ("", "no address"),
        ] {
            let err = Rule::parse(text).unwrap_err();
            assert!(err.contains(want), "{text:?}: {err}");
            assert!(err.contains("allowed:"), "{err}");
        }
    }
}
