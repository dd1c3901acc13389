//! pcap output (nanosecond timestamps, raw IPv4 link type) that Wireshark
//! and tshark read. Headers are written in full; payload is not captured
//! (caplen < len, as with a short tcpdump snaplen). Packets are recorded when
//! their serialisation starts on the chosen link direction, as tcpdump on the
//! sending interface would see them.

use crate::engine::Time;
use crate::error::SimError;
use crate::net::packet::{Body, Dss, Packet, TcpSegment};
use crate::net::{iface_addr, ChannelId, IfaceId};
use std::fs::File;
use std::io::{self, BufWriter, Write};

const MAGIC_NANOSECOND: u32 = 0xa1b2_3c4d;
const LINKTYPE_RAW: u32 = 101;

pub struct PcapWriter {
    out: BufWriter<File>,
    buf: Vec<u8>,
}

/// The captures of one run: which link directions are recorded, and where.
#[derive(Default)]
pub struct Captures {
    /// Per channel: index into `writers`.
    of_channel: Vec<Option<usize>>,
    writers: Vec<PcapWriter>,
    /// The first write error (reported at the end of the run).
    error: Option<String>,
}

impl Captures {
    pub fn new(channels: usize) -> Self {
        Self {
            of_channel: vec![None; channels],
            ..Self::default()
        }
    }

    /// Record `channel` into a new file at `path`.
    pub fn add(&mut self, channel: ChannelId, path: &str) -> io::Result<()> {
        let w = PcapWriter::create(path)?;
        self.of_channel[channel.idx()] = Some(self.writers.len());
        self.writers.push(w);
        Ok(())
    }

    /// Whether `channel` is recorded (checked on the hot path first: a run
    /// that captures nothing answers without a lookup).
    #[inline]
    pub fn records(&self, channel: ChannelId) -> bool {
        !self.writers.is_empty() && self.of_channel.get(channel.idx()).is_some_and(|w| w.is_some())
    }

    pub fn capture(&mut self, channel: ChannelId, at: Time, pkt: &Packet) {
        if let Some(w) = self.of_channel[channel.idx()] {
            if let Err(e) = self.writers[w].write(at, pkt) {
                self.error.get_or_insert(e.to_string());
            }
        }
    }

    /// Flush every file; the first error of the run, if any.
    pub fn finish(&mut self) -> Result<(), SimError> {
        for w in std::mem::take(&mut self.writers) {
            if let Err(e) = w.finish() {
                self.error.get_or_insert(e.to_string());
            }
        }
        match &self.error {
            Some(e) => Err(SimError::Output(format!("pcap: could not write capture: {e}"))),
            None => Ok(()),
        }
    }
}

impl PcapWriter {
    pub fn create(path: &str) -> io::Result<Self> {
        let mut out = BufWriter::new(File::create(path)?);
        out.write_all(&MAGIC_NANOSECOND.to_le_bytes())?;
        out.write_all(&2u16.to_le_bytes())?;
        out.write_all(&4u16.to_le_bytes())?;
        out.write_all(&0i32.to_le_bytes())?; // thiszone
        out.write_all(&0u32.to_le_bytes())?; // sigfigs
        out.write_all(&65535u32.to_le_bytes())?; // snaplen
        out.write_all(&LINKTYPE_RAW.to_le_bytes())?;
        Ok(Self {
            out,
            buf: Vec::with_capacity(128),
        })
    }

    pub fn write(&mut self, at: Time, pkt: &Packet) -> io::Result<()> {
        let orig_len = encode_headers(&mut self.buf, pkt);
        let (sec, nsec) = ((at / 1_000_000_000) as u32, (at % 1_000_000_000) as u32);
        self.out.write_all(&sec.to_le_bytes())?;
        self.out.write_all(&nsec.to_le_bytes())?;
        self.out.write_all(&(self.buf.len() as u32).to_le_bytes())?;
        self.out.write_all(&orig_len.to_le_bytes())?;
        self.out.write_all(&self.buf)
    }

    pub fn finish(mut self) -> io::Result<()> {
        self.out.flush()
    }
}

fn addr(iface: IfaceId) -> [u8; 4] {
    iface_addr(iface)
}

/// Write IPv4 + transport headers into `buf`; return the packet's full length.
fn encode_headers(buf: &mut Vec<u8>, pkt: &Packet) -> u32 {
    buf.clear();
    let (sport, dport) = (pkt.src_port, pkt.dst_port);
    let mut l4 = Vec::with_capacity(64);
    let (proto, payload) = match &pkt.body {
        Body::Tcp(seg) => {
            // Options: MPTCP's DSS, if any, then NOP padding for the other
            // header bytes beyond 40 (e.g. timestamps), then SACK blocks
            // while they fit in TCP's 40 option bytes.
            let pad = pkt.size.saturating_sub(seg.len + 40 + seg.sack.option_bytes()).min(40) as usize;
            let pad = pad - pad % 4;
            let mut opts = dss_option(seg);
            if opts.len() > pad {
                opts.clear(); // (not counted in the size: never cut an option short)
            }
            opts.resize(pad, 1);
            let room = (40 - opts.len()).saturating_sub(4) / 8;
            let blocks: Vec<(u64, u64)> = seg.sack.iter(seg.ack).take(room).collect();
            if !blocks.is_empty() {
                opts.extend_from_slice(&[1, 1, 5, (2 + 8 * blocks.len()) as u8]);
                for &(s, e) in &blocks {
                    opts.extend_from_slice(&(s as u32).to_be_bytes());
                    opts.extend_from_slice(&(e as u32).to_be_bytes());
                }
            }
            let hdr_len = 20 + opts.len();
            l4.extend_from_slice(&sport.to_be_bytes());
            l4.extend_from_slice(&dport.to_be_bytes());
            l4.extend_from_slice(&(seg.seq as u32).to_be_bytes());
            l4.extend_from_slice(&(seg.ack as u32).to_be_bytes());
            l4.push(((hdr_len / 4) as u8) << 4);
            let flags = 0x10 | if seg.len > 0 { 0x08 } else { 0 }; // ACK, PSH on data
            l4.push(flags);
            l4.extend_from_slice(&(seg.wnd.min(65535) as u16).to_be_bytes());
            l4.extend_from_slice(&[0, 0, 0, 0]); // checksum (payload not captured), urgent
            l4.extend_from_slice(&opts);
            (6u8, seg.len)
        }
        Body::Udp(d) => {
            l4.extend_from_slice(&sport.to_be_bytes());
            l4.extend_from_slice(&dport.to_be_bytes());
            l4.extend_from_slice(&((8 + d.len) as u16).to_be_bytes());
            l4.extend_from_slice(&[0, 0]);
            (17u8, d.len)
        }
        Body::Sctp(p) => {
            // The common header (verification tag and CRC32c left zero);
            // the chunks are not captured, only counted in the length.
            l4.extend_from_slice(&sport.to_be_bytes());
            l4.extend_from_slice(&dport.to_be_bytes());
            l4.extend_from_slice(&[0; 8]);
            (132u8, pkt.size.saturating_sub(20 + 12).max(p.user_bytes))
        }
    };
    let total = 20 + l4.len() as u32 + payload;
    let mut ip = [0u8; 20];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&(total.min(65535) as u16).to_be_bytes());
    ip[6] = 0x40; // don't fragment
    ip[8] = pkt.ttl;
    ip[9] = proto;
    ip[12..16].copy_from_slice(&addr(pkt.src));
    ip[16..20].copy_from_slice(&addr(pkt.dst));
    let csum = ipv4_checksum(&ip);
    ip[10..12].copy_from_slice(&csum.to_be_bytes());
    buf.extend_from_slice(&ip);
    buf.extend_from_slice(&l4);
    total
}

/// MPTCP's DSS option (RFC 8684 §3.3.1) as the segment carries it, padded
/// with NOPs to a 4-byte boundary: on a pure ACK an 8-byte DATA_ACK (flags
/// A, a); on data its mapping, an 8-byte data sequence number, the subflow
/// sequence number (relative: the subflow starts at 0) and the data-level
/// length (flags M, m; no checksum, as Linux by default). A data segment's
/// 4-byte DATA_ACK, counted in its size, is left out: data flows one way,
/// and the model has no value for it (its bytes stay NOP padding).
fn dss_option(seg: &TcpSegment) -> Vec<u8> {
    const KIND: u8 = 30;
    const SUBTYPE_DSS: u8 = 2 << 4;
    // flags: DATA_ACK present, 8 bytes; mapping present, DSN 8 bytes
    const A: u8 = 0x01;
    const A8: u8 = 0x02;
    const M: u8 = 0x04;
    const M8: u8 = 0x08;
    let length = seg.len.min(u16::MAX as u32) as u16;
    let mut o = match seg.dss() {
        None => return Vec::new(),
        Some(Dss::DataAck(ack)) => [&[KIND, 12, SUBTYPE_DSS, A | A8][..], &ack.to_be_bytes()].concat(),
        Some(Dss::Mapping { dsn }) => [
            &[KIND, 18, SUBTYPE_DSS, M | M8][..],
            &dsn.to_be_bytes(),
            &(seg.seq as u32).to_be_bytes(),
            &length.to_be_bytes(),
        ]
        .concat(),
    };
    o.resize(o.len().div_ceil(4) * 4, 1);
    o
}

fn ipv4_checksum(header: &[u8; 20]) -> u16 {
    let mut sum: u32 = header.chunks(2).map(|w| u16::from_be_bytes([w[0], w[1]]) as u32).sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_of_known_header() {
        // Example header with a known checksum of 0xb861.
        let h: [u8; 20] = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8,
            0x00, 0xc7,
        ];
        assert_eq!(ipv4_checksum(&h), 0xb861);
    }
}
