// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the secretmem authors
// vec_push.rs - the body of the vec-push-* programs (included by both, which
// differ only in their #[global_allocator]): argv[1] iterations of "a new
// Vec<u8>, 4096 pushes, drop", timed inside the process; prints
// "CPU_NS WALL_NS HEAP" for the whole loop, HEAP "secret" when a Vec's
// buffer lies in secret memory, else "ordinary".
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

fn main() {
    let iters: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1000);
    let mut sink = 0u64;
    let probe: Vec<u8> = vec![1; 64];
    let heap = if secretmem::backend_of(probe.as_ptr()) == secretmem::Backend::Secret { "secret" } else { "ordinary" };
    // warm-up: the allocator's first chunk, the page faults
    for _ in 0..10 {
        let v: Vec<u8> = (0..4096u32).map(|i| i as u8).collect();
        sink += v.len() as u64;
    }
    let c0 = cpu_ns();
    let t0 = Instant::now();
    for it in 0..iters {
        let mut v: Vec<u8> = Vec::new();
        for i in 0..4096u32 {
            v.push((i as u64 ^ it) as u8);
        }
        // SAFETY: a valid element; volatile so that the loop is not elided.
        sink = sink.wrapping_add(unsafe { std::ptr::read_volatile(&v[4095]) } as u64);
    }
    let wall = t0.elapsed().as_nanos() as u64;
    let cpu = cpu_ns() - c0;
    println!("{} {} {} {}", cpu, wall, heap, sink % 2);
}
