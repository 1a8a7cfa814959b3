// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the secretmem authors
//! tests/scan.rs - the root scan: a second process (this test) reads every
//! readable mapping of scan-child through /proc/PID/mem.  The key that the
//! child read straight into a SecretBox must not be found; the control - a
//! second key of which the child made an ordinary Vec<u8> copy - must be
//! found whole, at the copy's address (else the scan proves nothing); and the
//! SecretBox's page must be refused to the scanner with EIO (the scan did
//! reach it).
//!
//! Needs root (reading another process's memory); skipped otherwise, or a
//! failure when SECRETMEM_TEST_STRICT_SCAN=1 (set by test/t_rust_scan).
use secretmem_check::{euid, scan_pid, skip, FRAG};
use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};

const STRICT: &str = "SECRETMEM_TEST_STRICT_SCAN";

fn random32() -> [u8; 32] {
    let mut k = [0u8; 32];
    fs::File::open("/dev/urandom").unwrap().read_exact(&mut k).unwrap();
    k
}

/// The key files' directory, removed however the test ends.
struct TempDir(std::path::PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        fs::remove_dir_all(&self.0).ok();
    }
}

#[test]
fn scan_secretbox_key_only_in_secret_memory() {
    if euid() != 0 && skip(STRICT, "needs root: the scan reads another process's memory") {
        return;
    }
    if let Err(e) = secretmem::supported() {
        if skip(STRICT, &format!("no secret memory here: {}", e)) {
            return;
        }
    }
    let tmp = TempDir(std::env::temp_dir().join(format!("secretmem-rust-scan-{}", std::process::id())));
    let dir = &tmp.0;
    fs::create_dir_all(dir).unwrap();
    let (key, control) = (random32(), random32());
    let (kp, cp) = (dir.join("key"), dir.join("control"));
    fs::write(&kp, key).unwrap();
    fs::write(&cp, control).unwrap();

    let mut child = Command::new(env!("CARGO_BIN_EXE_scan-child"))
        .arg(&kp)
        .arg(&cp)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start scan-child");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let f: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(f.len(), 4, "scan-child did not start: {:?}", line);
    assert_eq!(f[0], "ready");
    let key_addr = u64::from_str_radix(f[1].trim_start_matches("0x"), 16).unwrap();
    let copy_addr = u64::from_str_radix(f[2].trim_start_matches("0x"), 16).unwrap();
    assert_eq!(f[3], "secret", "the SecretBox is not in secret memory");

    let scan = scan_pid(child.id(), &[&key, &control]).expect("scan");

    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"go\n").unwrap();
    drop(stdin);
    let mut after = String::new();
    out.read_to_string(&mut after).unwrap();
    let status = child.wait().unwrap();

    eprintln!(
        "scan of pid {}: {} readable mappings, {} bytes read, {} refused ({} named /secretmem); \
         key: {} fragments of {} bytes found; control: {} fragments found, whole copies at {:x?} (the Vec at {:#x})",
        child.id(),
        scan.regions,
        scan.bytes,
        scan.refused.len(),
        scan.secret_mappings,
        scan.found(0),
        FRAG,
        scan.found(1),
        scan.whole_copies(1, 32),
        copy_addr
    );
    for h in &scan.hits {
        eprintln!("  hit: needle {} fragment {} at {:#x} in {}", ["key", "control"][h.needle], h.frag, h.addr, h.mapping);
    }
    assert!(status.success(), "scan-child: {:?}", status);
    assert_eq!(after.trim(), "intact true 32", "the child no longer held the key when scanned");
    // the control proves the scanner sees the child's heap
    assert!(
        scan.whole_copies(1, 32).contains(&copy_addr),
        "control: the Vec<u8> copy was not found: the scan does not work"
    );
    assert_eq!(scan.found(0), 0, "the SecretBox's key was found in readable memory");
    let r = scan.refused_at(key_addr).expect("the SecretBox's mapping was not refused to the scanner");
    assert_eq!(r.errno, 5, "the SecretBox's mapping failed with errno {}, not EIO: {}", r.errno, r.mapping);
    assert!(r.mapping.contains("/secretmem"), "{}", r.mapping);
}
