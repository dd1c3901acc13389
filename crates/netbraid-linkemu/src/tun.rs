//! TUN devices: layer-3 packets without a packet-information header. The
//! device lives as long as the file descriptor, so the kernel removes it
//! when the emulator exits, however it exits.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;

const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const IFF_TUN: libc::c_short = 0x0001;
const IFF_NO_PI: libc::c_short = 0x1000;

#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// Create TUN device `name` in the current network namespace.
pub fn create(name: &str) -> io::Result<File> {
    let file = OpenOptions::new().read(true).write(true).open("/dev/net/tun")?;
    let mut req = IfReq {
        name: [0; libc::IFNAMSIZ],
        flags: IFF_TUN | IFF_NO_PI,
        _pad: [0; 22],
    };
    req.name[..name.len()].copy_from_slice(name.as_bytes());
    // SAFETY: TUNSETIFF reads and writes an ifreq, which IfReq lays out.
    let rc = unsafe { libc::ioctl(file.as_raw_fd(), TUNSETIFF, &mut req) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(file)
}
