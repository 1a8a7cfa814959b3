// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the secretmem authors
//! secretmem-bench - the Rust binding's benchmarks, in interleaved rounds.
//!
//!   cargo build --release --offline -p secretmem-bench
//!   $CARGO_TARGET_DIR/release/secretmem-bench [ROUNDS]
//!
//! (`cargo run` would build this program only, not the two vec-push ones.)
//!
//! 1. box32: `SecretBox::<[u8; 32]>::new` + drop against `Box::new` of 32
//!    bytes + zeroing with `ptr::write_volatile` + drop, in this process.
//! 2. vecpush: a new `Vec<u8>` with 4096 pushes and its drop, under
//!    `secretmem::Allocator` as the global allocator against the system
//!    allocator: the programs vec-push-secret and vec-push-system (a global
//!    allocator is fixed per program), each timing its own loop.
//!
//! Each round runs both sides once, in alternating order, and gives the
//! ratio secretmem/baseline of that round, in CPU time (the process's) and in
//! wall time.  Printed: the median and the range (min..max) over the rounds
//! of the time per operation and of the ratio.  Never a best-of-N.
use secretmem::SecretBox;
use std::process::Command;
use std::ptr;
use std::time::Instant;

extern "C" {
    fn clock_gettime(clock: i32, ts: *mut [i64; 2]) -> i32;
}

fn cpu_ns() -> u64 {
    let mut ts = [0i64; 2];
    // SAFETY: CLOCK_PROCESS_CPUTIME_ID (2) and a valid struct timespec.
    unsafe { clock_gettime(2, &mut ts) };
    ts[0] as u64 * 1_000_000_000 + ts[1] as u64
}

#[derive(Clone, Copy)]
struct Sample {
    cpu: f64, // ns per operation
    wall: f64,
}

fn time<F: FnMut()>(iters: u64, mut f: F) -> Sample {
    let c0 = cpu_ns();
    let t0 = Instant::now();
    for _ in 0..iters {
        f();
    }
    let wall = t0.elapsed().as_nanos() as f64;
    let cpu = (cpu_ns() - c0) as f64;
    Sample { cpu: cpu / iters as f64, wall: wall / iters as f64 }
}

fn median_range(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len();
    let med = if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 };
    (med, v[0], v[n - 1])
}

fn report(name: &str, unit: &str, a_name: &str, b_name: &str, rounds: &[(Sample, Sample)]) {
    println!("{} ({} rounds):", name, rounds.len());
    for (what, get) in [("CPU", (|s: &Sample| s.cpu) as fn(&Sample) -> f64), ("wall", |s: &Sample| s.wall)] {
        let a = median_range(rounds.iter().map(|r| get(&r.0)).collect());
        let b = median_range(rounds.iter().map(|r| get(&r.1)).collect());
        let ratio = median_range(rounds.iter().map(|r| get(&r.0) / get(&r.1)).collect());
        println!(
            "  {:<4} {:<20} {:>9.1} {} (range {:.1}..{:.1})\n       {:<20} {:>9.1} {} (range {:.1}..{:.1})\n       {:<20} {:>9.2}x (range {:.2}..{:.2}), per round",
            what, a_name, a.0, unit, a.1, a.2, b_name, b.0, unit, b.1, b.2, "ratio", ratio.0, ratio.1, ratio.2
        );
    }
}

fn box32(rounds: usize) {
    const ITERS: u64 = 2_000_000;
    let secret = || {
        let b = SecretBox::new([0x5au8; 32]).expect("SecretBox::new");
        // SAFETY: a valid element; volatile so that nothing is elided.
        unsafe { ptr::read_volatile(&b[31]) };
    };
    let plain = || {
        let mut b = Box::new([0x5au8; 32]);
        // SAFETY: a valid element; volatile so that nothing is elided.
        unsafe { ptr::read_volatile(&b[31]) };
        for x in b.iter_mut() {
            // SAFETY: a valid, aligned byte: the zeroing the compiler keeps.
            unsafe { ptr::write_volatile(x, 0) };
        }
    };
    time(ITERS / 10, secret);
    time(ITERS / 10, plain);
    let mut out = Vec::new();
    for r in 0..rounds {
        let (s, p) = if r % 2 == 0 {
            let s = time(ITERS, secret);
            (s, time(ITERS, plain))
        } else {
            let p = time(ITERS, plain);
            (time(ITERS, secret), p)
        };
        out.push((s, p));
    }
    report("box32: new + drop of 32 bytes", "ns/op", "SecretBox", "Box+zeroize", &out);
}

fn run_push(exe: &std::path::Path, iters: u64, heap: &str) -> Sample {
    let out = Command::new(exe).arg(iters.to_string()).output().expect("run a vec-push program");
    assert!(out.status.success(), "{} failed: {}", exe.display(), String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let w: Vec<&str> = text.split_whitespace().collect();
    assert!(w.len() == 4 && w[2] == heap, "{}: {:?}, expected its heap to be {}", exe.display(), text, heap);
    let cpu: f64 = w[0].parse().expect("cpu");
    let wall: f64 = w[1].parse().expect("wall");
    Sample { cpu: cpu / iters as f64 / 1000.0, wall: wall / iters as f64 / 1000.0 }
}

fn vecpush(rounds: usize) {
    const ITERS: u64 = 50_000;
    let me = std::env::current_exe().expect("current_exe");
    let dir = me.parent().expect("a directory");
    let secret = dir.join("vec-push-secret");
    let system = dir.join("vec-push-system");
    if !secret.exists() || !system.exists() {
        eprintln!(
            "secretmem-bench: {} or {} is missing: build them with cargo build --release --offline -p secretmem-bench",
            secret.display(),
            system.display()
        );
        std::process::exit(1);
    }
    let mut out = Vec::new();
    for r in 0..rounds {
        let (s, p) = if r % 2 == 0 {
            let s = run_push(&secret, ITERS, "secret");
            (s, run_push(&system, ITERS, "ordinary"))
        } else {
            let p = run_push(&system, ITERS, "ordinary");
            (run_push(&secret, ITERS, "secret"), p)
        };
        out.push((s, p));
    }
    report("vecpush: new Vec<u8>, 4096 pushes, drop", "us/op", "secretmem::Allocator", "System", &out);
}

fn main() {
    let rounds: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(21);
    if let Err(e) = secretmem::supported() {
        eprintln!("secretmem-bench: no secret memory here ({}): the figures would be the fallback's", e);
        std::process::exit(1);
    }
    println!("secretmem {} (Rust binding), {} rounds, interleaved", secretmem::version(), rounds);
    box32(rounds);
    vecpush(rounds);
}
