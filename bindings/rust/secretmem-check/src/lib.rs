// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the secretmem authors
//! secretmem-check's scanner - an attacker's view of another process, as
//! test/scan.c has it for the C tests: read every readable mapping listed in
//! /proc/PID/maps through /proc/PID/mem and look for the bytes of a key.
//!
//! Each needle is searched as fragments of [`FRAG`] bytes, so a partial copy
//! is found too.  A mapping whose read fails is recorded with its errno:
//! secret memory answers EIO, which proves the scan reached it.
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// Fragment length of the search.
pub const FRAG: usize = 16;
const CHUNK: usize = 4 << 20;
const MAX_REGION: u64 = 64 << 30;

/// One fragment of a needle found at an address.
pub struct Hit {
    /// Index of the needle.
    pub needle: usize,
    /// Index of the fragment in the needle.
    pub frag: usize,
    /// Address of the fragment in the scanned process.
    pub addr: u64,
    /// The /proc/PID/maps line of the mapping.
    pub mapping: String,
}

/// A readable mapping whose read failed.
pub struct Refused {
    /// First address.
    pub lo: u64,
    /// End address.
    pub hi: u64,
    /// The errno of the failed read.
    pub errno: i32,
    /// The /proc/PID/maps line.
    pub mapping: String,
}

/// What a scan saw.
#[derive(Default)]
pub struct Scan {
    /// Every fragment found.
    pub hits: Vec<Hit>,
    /// Mappings that could not be read.
    pub refused: Vec<Refused>,
    /// Readable mappings.
    pub regions: usize,
    /// Bytes read.
    pub bytes: u64,
    /// Mappings named /secretmem.
    pub secret_mappings: usize,
}

impl Scan {
    /// Fragments of needle i found (every place counts).
    pub fn found(&self, i: usize) -> usize {
        self.hits.iter().filter(|h| h.needle == i).count()
    }

    /// The addresses of the whole copies of needle i (of length len): every
    /// fragment found at consecutive addresses.
    pub fn whole_copies(&self, i: usize, len: usize) -> Vec<u64> {
        let offs = fragments(len);
        self.hits
            .iter()
            .filter(|h| h.needle == i && h.frag == 0)
            .map(|h| h.addr)
            .filter(|&start| {
                offs.iter().enumerate().all(|(f, &off)| {
                    self.hits.iter().any(|h| h.needle == i && h.frag == f && h.addr == start + off as u64)
                })
            })
            .collect()
    }

    /// The refused mapping that holds addr, if any.
    pub fn refused_at(&self, addr: u64) -> Option<&Refused> {
        self.refused.iter().find(|r| r.lo <= addr && addr < r.hi)
    }
}

/// Offsets of the fragments of a needle of len bytes (the last one ends at
/// the needle's end).
fn fragments(len: usize) -> Vec<usize> {
    if len < FRAG {
        return Vec::new();
    }
    let mut v: Vec<usize> = (0..len / FRAG).map(|k| k * FRAG).collect();
    if len % FRAG != 0 {
        v.push(len - FRAG);
    }
    v
}

fn load64(b: &[u8], i: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[i..i + 8]);
    u64::from_ne_bytes(w)
}

/// Scan every readable mapping of pid for the needles (each >= FRAG bytes).
pub fn scan_pid(pid: u32, needles: &[&[u8]]) -> io::Result<Scan> {
    let maps = std::fs::read_to_string(format!("/proc/{}/maps", pid))?;
    let mem = File::open(format!("/proc/{}/mem", pid))?;
    // (needle, fragment index, bytes, first 8 bytes)
    let mut frags: Vec<(usize, usize, &[u8], u64)> = Vec::new();
    for (i, n) in needles.iter().enumerate() {
        assert!(n.len() >= FRAG, "needle {} shorter than {} bytes", i, FRAG);
        for (f, &off) in fragments(n.len()).iter().enumerate() {
            let b = &n[off..off + FRAG];
            frags.push((i, f, b, load64(b, 0)));
        }
    }
    let mut scan = Scan::default();
    let mut buf = vec![0u8; CHUNK + FRAG];
    for line in maps.lines() {
        let mut fields = line.split_whitespace();
        let range = fields.next().unwrap_or("");
        let perms = fields.next().unwrap_or("");
        if !perms.starts_with('r') {
            continue;
        }
        let mut it = range.split('-');
        let lo = u64::from_str_radix(it.next().unwrap_or(""), 16).map_err(|_| bad(line))?;
        let hi = u64::from_str_radix(it.next().unwrap_or(""), 16).map_err(|_| bad(line))?;
        if hi - lo > MAX_REGION {
            continue;
        }
        scan.regions += 1;
        if line.contains("/secretmem") {
            scan.secret_mappings += 1;
        }
        let mut at = lo;
        while at < hi {
            let want = ((hi - at) as usize).min(CHUNK + FRAG);
            let n = match mem.read_at(&mut buf[..want], at) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) => {
                    scan.refused.push(Refused { lo, hi, errno: e.raw_os_error().unwrap_or(0), mapping: line.to_string() });
                    break;
                }
            };
            scan.bytes += n as u64;
            let data = &buf[..n];
            if n >= FRAG {
                for p in 0..=n - FRAG {
                    let w = load64(data, p);
                    for &(i, f, b, first) in &frags {
                        if w == first && &data[p..p + FRAG] == b {
                            let addr = at + p as u64;
                            // a fragment in the overlap is seen twice
                            if !scan.hits.iter().any(|h| h.needle == i && h.frag == f && h.addr == addr) {
                                scan.hits.push(Hit { needle: i, frag: f, addr, mapping: line.to_string() });
                            }
                        }
                    }
                }
            }
            if n < want {
                break;
            }
            // the next chunk overlaps this one by FRAG bytes
            at += (n - FRAG.min(n)) as u64;
            if hi - at <= FRAG as u64 {
                break;
            }
        }
    }
    Ok(scan)
}

fn bad(line: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("unexpected maps line: {}", line))
}

extern "C" {
    fn geteuid() -> u32;
}

/// The effective user id.
pub fn euid() -> u32 {
    // SAFETY: no arguments, cannot fail.
    unsafe { geteuid() }
}

/// For a test that cannot run here: panic when `strict_var` is "1" (the
/// make check wrapper sets it, so that a skip is never a pass), else print
/// the reason on stdout as "secretmem-skip: <reason>" and return true.
pub fn skip(strict_var: &str, reason: &str) -> bool {
    if std::env::var(strict_var).map(|v| v == "1").unwrap_or(false) {
        panic!("{} (and {}=1)", reason, strict_var);
    }
    println!("secretmem-skip: {}", reason);
    true
}
