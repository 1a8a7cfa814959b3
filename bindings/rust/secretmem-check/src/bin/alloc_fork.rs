// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the secretmem authors
//! alloc-fork - a program whose whole heap is in secret memory
//! (`#[global_allocator] static A: secretmem::Allocator`), run by
//! tests/global_alloc.rs.
//!
//! Checks, exiting 1 with a message at the first failure:
//!  1. heap blocks (a Vec, a String, a Box with a 4 KiB alignment, a 1 MiB
//!     Vec) belong to libsecretmem and lie in a /secretmem mapping;
//!  2. eight threads allocate, grow and free, and hand blocks to one another
//!     to be freed there;
//!  3. while those threads keep allocating, the main thread forks five
//!     times; each child (default fork policy: copy) finds the parent's data
//!     intact, allocates in secret memory, runs a thread of its own and exits
//!     0.  The child writes with write(2) only: a lock of std (stdout) may
//!     have been held by another thread at the fork.
//!
//! Prints "ok" and the figures at the end.
use secretmem::{backend_of, Backend};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread;

#[global_allocator]
static A: secretmem::Allocator = secretmem::Allocator;

extern "C" {
    fn fork() -> i32;
    fn waitpid(pid: i32, status: *mut i32, options: i32) -> i32;
    fn _exit(code: i32) -> !;
    fn write(fd: i32, buf: *const u8, n: usize) -> isize;
}

fn fail(msg: &str) -> ! {
    eprintln!("alloc-fork: FAIL: {}", msg);
    std::process::exit(1);
}

/// In a fork child: a message with write(2), then _exit.
fn child_exit(code: i32, msg: &str) -> ! {
    // SAFETY: a valid buffer; _exit never returns.
    unsafe {
        write(2, msg.as_ptr(), msg.len());
        _exit(code)
    }
}

/// Is p the start of a live libsecretmem block in secret memory?
fn in_secret(p: *const u8) -> bool {
    // SAFETY: owns never aborts, for any pointer.
    let owned = unsafe { secretmem_sys::secretmem_owns(p.cast()) } == 1;
    owned && backend_of(p) == Backend::Secret
}

#[repr(align(4096))]
struct Page([u8; 4096]);

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

fn main() {
    if let Err(e) = secretmem::supported() {
        println!("secretmem-skip: no secret memory here: {}", e);
        return;
    }
    // 1. the heap is secret memory
    let v = pattern(1000, 7);
    let s = String::from("a string on the secret heap");
    let page = Box::new(Page([5; 4096]));
    let big = pattern(1 << 20, 3);
    for (what, p) in [("Vec", v.as_ptr()), ("String", s.as_ptr()), ("1 MiB Vec", big.as_ptr())] {
        if !in_secret(p) {
            fail(&format!("{} at {:p} is not a secret-memory block of libsecretmem", what, p));
        }
    }
    // an over-aligned value lies inside a larger block (see alloc.rs)
    if page.0.as_ptr() as usize % 4096 != 0 || backend_of(page.0.as_ptr()) != Backend::Secret {
        fail("Box<align 4096> is misaligned or not in secret memory");
    }

    // 2. threads that allocate and free each other's blocks
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel::<Vec<u8>>();
    let mut workers = Vec::new();
    for t in 0..8u8 {
        let tx = tx.clone();
        let stop = stop.clone();
        workers.push(thread::spawn(move || {
            let mut rounds = 0u64;
            while !stop.load(Ordering::Relaxed) || rounds < 50 {
                let mut m: HashMap<u64, Vec<u8>> = HashMap::new();
                for k in 0..64u64 {
                    let mut b = pattern(16 + (k as usize * 37) % 3000, t);
                    b.extend_from_slice(&[t; 100]);
                    m.insert(k, b);
                }
                for (k, b) in &m {
                    if b[..16] != pattern(16, t)[..] || !in_secret(b.as_ptr()) {
                        fail(&format!("thread {} block {} corrupt or not secret", t, k));
                    }
                }
                let _ = tx.send(pattern(200, t)); // freed by the main thread
                rounds += 1;
            }
            rounds
        }));
    }
    drop(tx);

    // 3. forks while the threads run
    let mut forks = 0;
    for round in 0..5 {
        for _ in 0..50 {
            if let Ok(b) = rx.try_recv() {
                drop(b);
            }
        }
        // SAFETY: the child only allocates through libsecretmem (whose fork
        // handlers make it usable there), spawns a thread and _exits.
        let pid = unsafe { fork() };
        if pid < 0 {
            fail("fork failed");
        }
        if pid == 0 {
            if v != pattern(1000, 7) || big[12345] != pattern(1 << 20, 3)[12345] || page.0[4095] != 5 {
                child_exit(3, "alloc-fork child: the parent's heap data changed\n");
            }
            let mine = pattern(5000, round);
            if !in_secret(mine.as_ptr()) {
                child_exit(4, "alloc-fork child: a new block is not in secret memory\n");
            }
            let h = thread::spawn(move || pattern(3000, 1).iter().map(|&x| x as u64).sum::<u64>());
            match h.join() {
                Ok(sum) if sum > 0 => {}
                _ => child_exit(5, "alloc-fork child: its thread failed\n"),
            }
            drop(mine);
            child_exit(0, "");
        }
        let mut status = 0;
        // SAFETY: a child of ours.
        if unsafe { waitpid(pid, &mut status, 0) } != pid || status != 0 {
            fail(&format!("fork child {} ended with wait status {:#x}", round, status));
        }
        forks += 1;
    }
    stop.store(true, Ordering::Relaxed);
    let mut rounds = 0;
    for w in workers {
        rounds += w.join().unwrap_or_else(|_| fail("a thread panicked"));
    }
    let freed = rx.iter().count();
    let st = secretmem::stats().unwrap_or_else(|e| fail(&format!("stats: {}", e)));
    if st.secret_bytes == 0 || st.live_allocations == 0 {
        fail("stats show no secret memory in use");
    }
    println!(
        "ok: {} forks, 8 threads x {} rounds on average, {} blocks freed by another thread; \
         live {} blocks, {} bytes in use, {} secret bytes mapped, backend {}",
        forks,
        rounds / 8,
        freed,
        st.live_allocations,
        st.bytes_in_use,
        st.secret_bytes,
        st.backend.name()
    );
}
