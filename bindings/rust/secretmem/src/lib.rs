// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the secretmem authors
//! secretmem - keys, passwords and tokens in Linux secret memory
//! (`memfd_secret(2)`), through libsecretmem.
//!
//! Secret memory is taken out of the kernel's direct map: no other process,
//! root included, can read it through `/proc/PID/mem`, `process_vm_readv` or
//! ptrace, and it never reaches a core dump, swap or a hibernation image.
//! Where the kernel or a sandbox refuses it, libsecretmem uses its fallback
//! backend (mlock'ed, kept out of core dumps, but readable by root):
//! [`Backend`] tells, and one warning on stderr says so when secret memory
//! stops working after it worked in the process (a sandbox installed
//! later); [`set_require`] or `SECRETMEM_REQUIRE=1` forbids the fallback.
//!
//! This file owns the crate's small items: errors, [`supported`],
//! [`Backend`], [`stats`], [`ct_eq`], options.  The containers are in
//! `boxed.rs` ([`SecretBox`]), `vec.rs` ([`SecretVec`], [`Secret`]) and
//! `region.rs` ([`Region`]); the global allocator in `alloc.rs`
//! ([`Allocator`]).
//!
//! What is protected is the memory these types own.  Copies the program makes
//! (a `Vec` built from a key, a `String`, a value moved out of a box, a stack
//! temporary) are ordinary memory: see README.md, "What it protects, and what
//! it does not".
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

use secretmem_sys as sys;
use std::ffi::CStr;
use std::io;

mod alloc;
mod boxed;
mod region;
mod vec;

pub use alloc::Allocator;
pub use boxed::SecretBox;
pub use region::{backend_of, Access, Protected, Region};
pub use vec::{Secret, SecretVec};

/// The examples of bindings/rust/README.md, compiled by `cargo test`.
#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

/// An `io::Error` from a `-errno` return value.
pub(crate) fn neg_errno(rc: i64) -> io::Error {
    io::Error::from_raw_os_error((-rc) as i32)
}

/// Is secret memory usable in this process?  `Ok(())` when `memfd_secret(2)`
/// works here, else the reason: `ENOSYS` (kernel too old or feature off),
/// `EPERM` (a seccomp filter or LSM refuses it), or a transient `EMFILE`,
/// `ENFILE`, `ENOMEM`, `EAGAIN`.  Never kills the caller, even under a
/// seccomp filter that would kill a direct call (secretmem_supported(3)).
pub fn supported() -> io::Result<()> {
    // SAFETY: no arguments; thread-safe by contract.
    let rc = unsafe { sys::secretmem_supported() };
    if rc < 0 {
        Err(neg_errno(rc.into()))
    } else {
        Ok(())
    }
}

/// Where new memory of this process comes from (or came from).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// Nothing usable: creation fails.
    None,
    /// `memfd_secret(2)`: out of the kernel's direct map.
    Secret,
    /// Private anonymous memory, mlock'ed and kept out of core dumps, but
    /// readable by root.
    Fallback,
}

impl Backend {
    pub(crate) fn from_raw(b: i32) -> Backend {
        match b {
            sys::SECRETMEM_BACKEND_SECRET => Backend::Secret,
            sys::SECRETMEM_BACKEND_FALLBACK => Backend::Fallback,
            _ => Backend::None,
        }
    }

    /// "secret", "fallback" or "none", as the C library names them.
    pub fn name(self) -> &'static str {
        match self {
            Backend::None => "none",
            Backend::Secret => "secret",
            Backend::Fallback => "fallback",
        }
    }
}

/// The backend that new allocations and regions of this process get
/// (secretmem_default_backend(3)).
pub fn default_backend() -> Backend {
    // SAFETY: no arguments.
    Backend::from_raw(unsafe { sys::secretmem_default_backend() })
}

/// Forbid (`true`) or allow (`false`) the fallback backend for the whole
/// process, overriding `SECRETMEM_REQUIRE` (secretmem_set_require(3)).
pub fn set_require(require: bool) {
    // SAFETY: 0 and 1 are the valid values; it cannot fail for them.
    let rc = unsafe { sys::secretmem_set_require(require as i32) };
    debug_assert_eq!(rc, 0);
}

/// What a forked child gets of the parent's secret memory
/// (secretmem_set_option(3), `SECRETMEM_FORK`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ForkPolicy {
    /// The default: the child gets private copies.
    Copy,
    /// The child shares the pages (and the allocator's slots!).
    Share,
    /// The child has no secret mappings and an empty secret heap.
    Drop,
}

/// Set the fork policy (can be changed at any time).
pub fn set_fork_policy(policy: ForkPolicy) -> io::Result<()> {
    let v = match policy {
        ForkPolicy::Copy => sys::SECRETMEM_FORK_COPY,
        ForkPolicy::Share => sys::SECRETMEM_FORK_SHARE,
        ForkPolicy::Drop => sys::SECRETMEM_FORK_DROP,
    };
    // SAFETY: a valid option and value.
    let rc = unsafe { sys::secretmem_set_option(sys::SECRETMEM_OPT_FORK, v) };
    if rc < 0 {
        Err(neg_errno(rc.into()))
    } else {
        Ok(())
    }
}

/// A snapshot of the allocator and the regions (struct secretmem_stats; the
/// fields mean what the header says).
#[derive(Clone, Copy, Debug)]
#[allow(missing_docs)]
pub struct Stats {
    pub bytes_in_use: usize,
    pub live_allocations: usize,
    pub bytes_mapped: usize,
    pub pages_mapped: usize,
    pub pages_faulted: usize,
    pub pages_released: usize,
    pub regions: usize,
    pub regions_created: usize,
    pub backend: Backend,
    pub memlock_unlimited: bool,
    pub memlock_limit: usize,
    pub memlock_left: usize,
    pub secret_bytes: usize,
    pub fallback_bytes: usize,
    pub api_regions: usize,
    pub api_region_bytes: usize,
    /// enum secretmem_failure: 0 none, 1 memlock limit, 2 out of memory,
    /// 3 no secret memory in the kernel, 4 sandbox, 5 no file descriptor.
    pub last_failure: usize,
    pub last_failure_bytes: usize,
    pub memlock_locked: usize,
}

/// The statistics of this process (secretmem_stats(3)).
pub fn stats() -> io::Result<Stats> {
    let mut s = sys::secretmem_stats::default();
    // SAFETY: a valid pointer to a struct of the header's layout.
    let rc = unsafe { sys::secretmem_stats(&mut s) };
    if rc < 0 {
        return Err(neg_errno(rc.into()));
    }
    Ok(Stats {
        bytes_in_use: s.bytes_in_use,
        live_allocations: s.live_allocations,
        bytes_mapped: s.bytes_mapped,
        pages_mapped: s.pages_mapped,
        pages_faulted: s.pages_faulted,
        pages_released: s.pages_released,
        regions: s.regions,
        regions_created: s.regions_created,
        backend: Backend::from_raw(s.backend),
        memlock_unlimited: s.memlock_unlimited != 0,
        memlock_limit: s.memlock_limit,
        memlock_left: s.memlock_left,
        secret_bytes: s.secret_bytes,
        fallback_bytes: s.fallback_bytes,
        api_regions: s.api_regions,
        api_region_bytes: s.api_region_bytes,
        last_failure: s.last_failure,
        last_failure_bytes: s.last_failure_bytes,
        memlock_locked: s.memlock_locked,
    })
}

/// Give the pages that hold no live block back to the kernel; the number of
/// bytes released (secretmem_trim(3)).
pub fn trim() -> io::Result<usize> {
    // SAFETY: no arguments.
    let rc = unsafe { sys::secretmem_trim() };
    if rc < 0 {
        Err(neg_errno(rc))
    } else {
        Ok(rc as usize)
    }
}

/// The version of the C library that is running, such as "1.1.0".
pub fn version() -> &'static str {
    // SAFETY: a static NUL-terminated string, never NULL.
    unsafe { CStr::from_ptr(sys::secretmem_version()) }.to_str().unwrap_or("?")
}

/// Compare two byte strings in a time that depends on their lengths only,
/// never on their contents or on where they differ (secretmem_memeq(3)).
/// Different lengths compare unequal at once: the length is not secret.
pub fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    if a.is_empty() {
        return true;
    }
    // SAFETY: both are valid for a.len() bytes.
    unsafe { sys::secretmem_memeq(a.as_ptr().cast(), b.as_ptr().cast(), a.len()) == 1 }
}

/// Set `len` bytes at `p` to zero in a way the compiler cannot remove.
pub(crate) fn memzero(p: *mut u8, len: usize) {
    if len != 0 {
        // SAFETY: callers pass memory they own, valid for len bytes.
        unsafe { sys::secretmem_memzero(p.cast(), len) }
    }
}
