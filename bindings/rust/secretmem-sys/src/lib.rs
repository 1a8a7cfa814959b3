// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the secretmem authors
//! secretmem-sys - the raw FFI of libsecretmem, one declaration per function,
//! constant and struct of `include/secretmem.h` (version 1.1).
//!
//! The contracts are the header's: read it (or secretmem(3)) before calling
//! anything here.  In short: functions returning `c_int`/`c_long` return a
//! value >= 0 on success and `-errno` on failure, leaving `errno` alone;
//! functions returning a pointer return NULL and set `errno`.  A double free,
//! a foreign pointer or a pointer into the middle of a block given to
//! `secretmem_free`, `secretmem_realloc` or `secretmem_usable_size` aborts the
//! process.  The safe API is the `secretmem` crate.
#![allow(non_camel_case_types)]

pub use std::os::raw::{c_char, c_int, c_long, c_uint, c_void};

pub const SECRETMEM_VERSION_MAJOR: c_int = 1;
pub const SECRETMEM_VERSION_MINOR: c_int = 1;
pub const SECRETMEM_VERSION_STRING: &str = "1.1.0";

/// enum secretmem_backend
pub const SECRETMEM_BACKEND_NONE: c_int = 0;
pub const SECRETMEM_BACKEND_SECRET: c_int = 1;
pub const SECRETMEM_BACKEND_FALLBACK: c_int = 2;

/// Flags of secretmem_region_create().
pub const SECRETMEM_REGION_REQUIRE_SECRET: c_uint = 0x1;

/// enum secretmem_access
pub const SECRETMEM_NOACCESS: c_int = 0;
pub const SECRETMEM_READONLY: c_int = 1;
pub const SECRETMEM_READWRITE: c_int = 2;

/// enum secretmem_failure
pub const SECRETMEM_FAILURE_NONE: usize = 0;
pub const SECRETMEM_FAILURE_MEMLOCK: usize = 1;
pub const SECRETMEM_FAILURE_NOMEM: usize = 2;
pub const SECRETMEM_FAILURE_NOSYS: usize = 3;
pub const SECRETMEM_FAILURE_SANDBOX: usize = 4;
pub const SECRETMEM_FAILURE_FDS: usize = 5;

/// enum secretmem_option
pub const SECRETMEM_OPT_RESERVE: c_int = 1;
pub const SECRETMEM_OPT_FORK: c_int = 2;
pub const SECRETMEM_OPT_RELEASE_IDLE: c_int = 3;
pub const SECRETMEM_OPT_REQUIRE: c_int = 4;

/// enum secretmem_fork_policy
pub const SECRETMEM_FORK_COPY: c_long = 0;
pub const SECRETMEM_FORK_SHARE: c_long = 1;
pub const SECRETMEM_FORK_DROP: c_long = 2;

/// struct secretmem_region (opaque; its bookkeeping is in ordinary memory).
#[repr(C)]
pub struct secretmem_region {
    _opaque: [u8; 0],
}

/// struct secretmem_stats, field for field.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct secretmem_stats {
    pub bytes_in_use: usize,
    pub live_allocations: usize,
    pub bytes_mapped: usize,
    pub pages_mapped: usize,
    pub pages_faulted: usize,
    pub pages_released: usize,
    pub regions: usize,
    pub regions_created: usize,
    pub backend: c_int,
    pub memlock_unlimited: c_int,
    pub memlock_limit: usize,
    pub memlock_left: usize,
    pub secret_bytes: usize,
    pub fallback_bytes: usize,
    pub api_regions: usize,
    pub api_region_bytes: usize,
    pub last_failure: usize,
    pub last_failure_bytes: usize,
    pub memlock_locked: usize,
    pub reserved: [usize; 1],
}

extern "C" {
    pub fn secretmem_memfd(flags: c_uint) -> c_int;
    pub fn secretmem_supported() -> c_int;
    pub fn secretmem_backend_name(backend: c_int) -> *const c_char;
    pub fn secretmem_default_backend() -> c_int;
    pub fn secretmem_set_require(require: c_int) -> c_int;

    pub fn secretmem_region_create(size: usize, flags: c_uint) -> *mut secretmem_region;
    pub fn secretmem_region_data(region: *const secretmem_region) -> *mut c_void;
    pub fn secretmem_region_size(region: *const secretmem_region) -> usize;
    pub fn secretmem_region_backend(region: *const secretmem_region) -> c_int;
    pub fn secretmem_region_protect(region: *mut secretmem_region, access: c_int) -> c_int;
    pub fn secretmem_region_destroy(region: *mut secretmem_region) -> c_int;

    pub fn secretmem_malloc(size: usize) -> *mut c_void;
    pub fn secretmem_calloc(nmemb: usize, size: usize) -> *mut c_void;
    pub fn secretmem_realloc(ptr: *mut c_void, size: usize) -> *mut c_void;
    pub fn secretmem_free(ptr: *mut c_void);
    pub fn secretmem_strdup(s: *const c_char) -> *mut c_char;
    pub fn secretmem_strndup(s: *const c_char, n: usize) -> *mut c_char;
    pub fn secretmem_usable_size(ptr: *const c_void) -> usize;
    pub fn secretmem_owns(ptr: *const c_void) -> c_int;
    pub fn secretmem_trim() -> c_long;

    pub fn secretmem_stats(st: *mut secretmem_stats) -> c_int;
    pub fn secretmem_set_option(option: c_int, value: c_long) -> c_int;
    pub fn secretmem_get_option(option: c_int) -> c_long;

    pub fn secretmem_memzero(ptr: *mut c_void, len: usize);
    pub fn secretmem_memeq(a: *const c_void, b: *const c_void, len: usize) -> c_int;
    pub fn secretmem_version() -> *const c_char;
}
