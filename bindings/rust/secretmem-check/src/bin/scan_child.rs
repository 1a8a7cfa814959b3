// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the secretmem authors
//! scan-child - the process that tests/scan.rs scans.
//!
//! Usage: scan-child KEY_FILE CONTROL_FILE.  Reads the 32-byte key straight
//! into a `SecretBox<[u8; 32]>` (an unbuffered `File`: the kernel copies into
//! secret memory, no user-space copy), and the control key into another
//! SecretBox, of which it then makes an ordinary `Vec<u8>` copy - the
//! control the scan must find.  Prints "ready KEY_ADDR COPY_ADDR BACKEND",
//! waits for a line on stdin (the scan runs then), and prints "intact
//! true|false": whether it still holds the key.
use secretmem::SecretBox;
use std::fs::File;
use std::io::{self, BufRead, Read, Write};

fn main() -> io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 {
        eprintln!("usage: scan-child KEY_FILE CONTROL_FILE");
        std::process::exit(2);
    }
    let mut key = SecretBox::<[u8; 32]>::zeroed()?;
    File::open(&args[1])?.read_exact(&mut key[..])?;
    let mut control = SecretBox::<[u8; 32]>::zeroed()?;
    File::open(&args[2])?.read_exact(&mut control[..])?;
    let copy: Vec<u8> = control.to_vec(); // the control: an ordinary heap copy

    let mut out = io::stdout();
    writeln!(out, "ready {:#x} {:#x} {}", key.as_ptr() as usize, copy.as_ptr() as usize, key.backend().name())?;
    out.flush()?;
    let mut line = String::new();
    io::stdin().lock().read_line(&mut line)?;

    let mut check = SecretBox::<[u8; 32]>::zeroed()?;
    File::open(&args[1])?.read_exact(&mut check[..])?;
    writeln!(out, "intact {} {}", key == check, copy.len())?;
    Ok(())
}
