// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the secretmem authors
//! region.rs - [`Region`]: whole pages of secret memory between guard pages,
//! with [`Protected`] guards that make it read-only or inaccessible for a
//! while; and `backend_of`, which tells where a block lives.
use crate::{neg_errno, sys, Backend};
use std::io;
use std::ptr::NonNull;
use std::slice;
use std::sync::atomic::{AtomicBool, Ordering};

/// Where the memory at `p` lives, read from /proc/self/maps: `Secret` in a
/// mapping of a memfd_secret file (named "/secretmem"), else `Fallback`.  For
/// memory of this crate (a block's backend is fixed when it is allocated);
/// when the maps cannot be read, the backend new memory gets now.
pub fn backend_of(p: *const u8) -> Backend {
    let maps = match std::fs::read_to_string("/proc/self/maps") {
        Ok(m) => m,
        Err(_) => return crate::default_backend(),
    };
    let a = p as usize;
    for line in maps.lines() {
        let range = line.split(' ').next().unwrap_or("");
        let mut it = range.split('-');
        let lo = usize::from_str_radix(it.next().unwrap_or(""), 16);
        let hi = usize::from_str_radix(it.next().unwrap_or(""), 16);
        if let (Ok(lo), Ok(hi)) = (lo, hi) {
            if lo <= a && a < hi {
                return if line.contains("/secretmem") { Backend::Secret } else { Backend::Fallback };
            }
        }
    }
    crate::default_backend()
}

/// Access modes of [`Region::protect`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Reads allowed, writes fault.
    ReadOnly,
    /// Any access faults.
    NoAccess,
}

/// Page-granular secret memory of its own (secretmem_region_create(3)): the
/// size rounded up to whole pages, zero-filled, every page faulted in, between
/// two inaccessible guard pages.  Dropping it zeroes and unmaps it.  No
/// `Clone`, `Debug` or `Display`.
pub struct Region {
    raw: NonNull<sys::secretmem_region>,
    /// Read-only or inaccessible: a guard lives, or one was forgotten
    /// (`mem::forget` is safe), which the next access undoes.
    restricted: AtomicBool,
}

// SAFETY: the region is owned memory; the C functions used on it are
// thread-safe and &Region hands out shared bytes only.
unsafe impl Send for Region {}
// SAFETY: as above.
unsafe impl Sync for Region {}

impl Region {
    fn create(size: usize, flags: u32) -> io::Result<Region> {
        // SAFETY: any size and these flags are valid; NULL sets errno.
        let r = unsafe { sys::secretmem_region_create(size, flags) };
        NonNull::new(r)
            .map(|raw| Region { raw, restricted: AtomicBool::new(false) })
            .ok_or_else(io::Error::last_os_error)
    }

    /// At least `size` bytes; the fallback backend where secret memory is
    /// refused and the fallback allowed.  Errors: `EINVAL` (size 0),
    /// `ENOMEM`, `ENOSYS`/`EPERM`, `EMFILE`/`ENFILE`.
    pub fn new(size: usize) -> io::Result<Region> {
        Self::create(size, 0)
    }

    /// The same, but never in the fallback backend (`ENOSYS`/`EPERM`).
    pub fn new_secret_only(size: usize) -> io::Result<Region> {
        Self::create(size, sys::SECRETMEM_REGION_REQUIRE_SECRET)
    }

    /// The usable size: a multiple of the page size.
    pub fn len(&self) -> usize {
        // SAFETY: a live region.
        unsafe { sys::secretmem_region_size(self.raw.as_ptr()) }
    }

    /// Never true (a region has at least one page); for clippy's sake.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `Backend::Secret` or `Backend::Fallback`.
    pub fn backend(&self) -> Backend {
        // SAFETY: a live region.
        Backend::from_raw(unsafe { sys::secretmem_region_backend(self.raw.as_ptr()) })
    }

    fn data(&self) -> *mut u8 {
        // SAFETY: a live region.
        unsafe { sys::secretmem_region_data(self.raw.as_ptr()) as *mut u8 }
    }

    /// Read-write again after a guard that was forgotten instead of
    /// dropped (no guard can live here: it borrows the region mutably).
    fn writable(&self) {
        if self.restricted.load(Ordering::Acquire) {
            restore(self);
        }
    }

    /// The bytes (the region is readable and writable outside a guard; a
    /// guard that was forgotten instead of dropped is undone here).
    pub fn as_slice(&self) -> &[u8] {
        self.writable();
        // SAFETY: len bytes mapped read-write while no Protected guard lives
        // (a guard borrows the region mutably).
        unsafe { slice::from_raw_parts(self.data(), self.len()) }
    }

    /// The bytes, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        self.writable();
        // SAFETY: as above.
        unsafe { slice::from_raw_parts_mut(self.data(), self.len()) }
    }

    /// Make the whole region read-only or inaccessible until the returned
    /// guard is dropped; the guard borrows the region, so no safe code can
    /// write it (or touch it at all under `NoAccess`) meanwhile.  Dropping
    /// the guard makes it readable and writable again (a guard forgotten
    /// with `mem::forget`: the next `as_slice` or `as_mut_slice` does); if
    /// the kernel refuses that, the process aborts rather than hand out
    /// bytes it cannot touch.
    pub fn protect(&mut self, access: Access) -> io::Result<Protected<'_>> {
        let mode = match access {
            Access::ReadOnly => sys::SECRETMEM_READONLY,
            Access::NoAccess => sys::SECRETMEM_NOACCESS,
        };
        // SAFETY: a live region and a valid mode.
        let rc = unsafe { sys::secretmem_region_protect(self.raw.as_ptr(), mode) };
        if rc < 0 {
            return Err(neg_errno(rc.into()));
        }
        self.restricted.store(true, Ordering::Release);
        Ok(Protected { region: self, access })
    }
}

/// The region readable and writable again; the process aborts if the
/// kernel refuses, rather than hand out bytes it cannot touch.
fn restore(region: &Region) {
    // SAFETY: a live region and a valid mode.
    let rc = unsafe { sys::secretmem_region_protect(region.raw.as_ptr(), sys::SECRETMEM_READWRITE) };
    if rc < 0 {
        eprintln!("secretmem: cannot make a region readable again: {}", neg_errno(rc.into()));
        std::process::abort();
    }
    region.restricted.store(false, Ordering::Release);
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: a live region, destroyed once; it zeroes the region in any
        // access mode, and frees the handle even when a step fails.
        unsafe { sys::secretmem_region_destroy(self.raw.as_ptr()) };
    }
}

/// A region while it is read-only or inaccessible (see [`Region::protect`]).
pub struct Protected<'a> {
    region: &'a mut Region,
    access: Access,
}

impl Protected<'_> {
    /// The mode in force.
    pub fn access(&self) -> Access {
        self.access
    }

    /// The bytes, under `ReadOnly`; `None` under `NoAccess`.
    pub fn as_slice(&self) -> Option<&[u8]> {
        match self.access {
            // SAFETY: len bytes mapped readable while this guard lives.
            Access::ReadOnly => Some(unsafe { slice::from_raw_parts(self.region.data(), self.region.len()) }),
            Access::NoAccess => None,
        }
    }
}

impl Drop for Protected<'_> {
    fn drop(&mut self) {
        restore(self.region);
    }
}
