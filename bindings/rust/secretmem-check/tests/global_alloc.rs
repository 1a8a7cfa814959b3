// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the secretmem authors
//! tests/global_alloc.rs - runs alloc-fork (src/bin/alloc_fork.rs), a
//! program whose global allocator is secretmem::Allocator, which threads,
//! forks, and checks that its heap is in secret memory.
use std::process::Command;

fn run(env: &[(&str, &str)]) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_alloc-fork"));
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run alloc-fork");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "alloc-fork: {:?}\n{}{}", out.status, stdout, stderr);
    print!("{}", stdout);
    stdout
}

#[test]
fn global_allocator_forks_and_threads() {
    let out = run(&[]);
    if out.starts_with("secretmem-skip:") {
        if std::env::var("SECRETMEM_TEST_REQUIRE_KERNEL").map(|v| v == "1").unwrap_or(false) {
            panic!("{} and SECRETMEM_TEST_REQUIRE_KERNEL=1", out.trim());
        }
        return;
    }
    assert!(out.starts_with("ok: 5 forks"), "{}", out);
    // The same with the policy given explicitly, and the threads' caches
    // released at each free of the last block (the option's other path).
    let out = run(&[("SECRETMEM_FORK", "copy"), ("SECRETMEM_RELEASE_IDLE", "1")]);
    assert!(out.starts_with("ok: 5 forks"), "{}", out);
}
