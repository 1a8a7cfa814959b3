// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the secretmem authors
//! alloc.rs - blocks of any size and alignment on libsecretmem's allocator
//! (used by SecretBox and SecretVec), and [`Allocator`], the `GlobalAlloc`
//! that puts a whole Rust program's heap in secret memory.
//!
//! libsecretmem's blocks are 16-byte aligned, except blocks whose size class
//! is not a multiple of 16, which get the largest power of two dividing it
//! (secretmem_malloc(3)).  Every class of 32 bytes or more that a multiple of
//! 8 or 16 rounds to is again such a multiple, so a request rounded up to its
//! alignment (<= 16) is aligned.  A larger alignment is had by asking for
//! `size + align` bytes and keeping the start of the block in the word just
//! before the aligned pointer (inside the block, so it is zeroed with it).
use crate::sys;
use std::alloc::{GlobalAlloc, Layout};
use std::io;
use std::ptr::{self, NonNull};

/// The alignment every block of the C allocator has when its size is a
/// multiple of it.
pub(crate) const MIN_ALIGN: usize = 16;

fn enomem() -> io::Error {
    io::Error::from_raw_os_error(12) // ENOMEM
}

fn round_up(size: usize, align: usize) -> Option<usize> {
    Some(size.checked_add(align - 1)? & !(align - 1))
}

/// A zero-filled block of `size` bytes aligned to `align` (a power of two).
pub(crate) fn alloc_raw(size: usize, align: usize) -> io::Result<NonNull<u8>> {
    debug_assert!(align.is_power_of_two());
    if align <= MIN_ALIGN {
        let n = round_up(size, align).ok_or_else(enomem)?;
        // SAFETY: any size is valid; NULL is handled below.
        let p = unsafe { sys::secretmem_malloc(n) } as *mut u8;
        let p = NonNull::new(p).ok_or_else(io::Error::last_os_error)?;
        debug_assert_eq!(p.as_ptr() as usize % align, 0, "libsecretmem block misaligned");
        return Ok(p);
    }
    let total = size.checked_add(align).and_then(|n| round_up(n, MIN_ALIGN)).ok_or_else(enomem)?;
    // SAFETY: as above.
    let base = unsafe { sys::secretmem_malloc(total) } as *mut u8;
    if base.is_null() {
        return Err(io::Error::last_os_error());
    }
    // base is 16-aligned (total is a multiple of 16), so the aligned pointer is
    // at least 16 bytes into the block and size bytes still fit after it.
    let off = round_up(base as usize + 1, align).ok_or_else(enomem)? - base as usize;
    // SAFETY: off <= align, so p..p+size is inside the block; p - 8 too.
    unsafe {
        let p = base.add(off);
        ptr::write(p.sub(8) as *mut usize, base as usize);
        Ok(NonNull::new_unchecked(p))
    }
}

/// Free (the C allocator zeroes it) a block of alloc_raw with this align.
///
/// # Safety
/// `p` came from `alloc_raw` or `realloc_raw` with the same `align`, and is
/// not used again.
pub(crate) unsafe fn free_raw(p: *mut u8, align: usize) {
    let base = if align <= MIN_ALIGN {
        p
    } else {
        // SAFETY: alloc_raw stored the start of the block there.
        unsafe { ptr::read(p.sub(8) as *const usize) as *mut u8 }
    };
    // SAFETY: a live block of the C allocator.
    unsafe { sys::secretmem_free(base.cast()) }
}

/// Resize a block of alloc_raw, keeping min(old_size, new_size) bytes; a
/// block that moves is zeroed before it is freed.  On error `p` is untouched.
///
/// # Safety
/// `p` is a live block of alloc_raw with this `align` and `old_size`.
pub(crate) unsafe fn realloc_raw(p: *mut u8, old_size: usize, align: usize, new_size: usize) -> io::Result<NonNull<u8>> {
    if align <= MIN_ALIGN {
        let n = round_up(new_size, align).ok_or_else(enomem)?;
        // secretmem_realloc(p, 0) would free p: keep a minimal block instead.
        // SAFETY: a live block; secretmem_realloc zeroes and frees it when
        // the block moves, and leaves it alone when it fails.
        let q = unsafe { sys::secretmem_realloc(p.cast(), n.max(1)) } as *mut u8;
        return NonNull::new(q).ok_or_else(io::Error::last_os_error);
    }
    let q = alloc_raw(new_size, align)?;
    // SAFETY: both blocks are valid for the smaller size and distinct.
    unsafe {
        ptr::copy_nonoverlapping(p, q.as_ptr(), old_size.min(new_size));
        free_raw(p, align);
    }
    Ok(q)
}

/// The whole Rust heap of a program in secret memory: heap mode chosen at
/// compile time, the Rust analogue of secretmem-heap(7).
///
/// ```no_run
/// #[global_allocator]
/// static A: secretmem::Allocator = secretmem::Allocator;
/// ```
///
/// Every `Box`, `Vec`, `String` and `HashMap` of the program then lives in
/// libsecretmem's allocator, and every freed block is zeroed.  This type only
/// forwards to the C library: the behaviour below is the library's, as
/// secretmem_malloc(3), secretmem_set_option(3) and secretmem(7) describe it.
///
/// - **Threads**: the allocator is thread-safe, with a cache per thread; a
///   block may be freed by another thread than the one that allocated it.
/// - **fork**: the fork policy applies to the whole heap (`SECRETMEM_FORK`,
///   [`crate::set_fork_policy`]).  The default, `copy`, gives the child
///   private copies of every secret page, so `fork` takes time in proportion
///   to the live heap; `drop` gives the child an empty secret heap (only
///   right for a child that calls `exec` at once: its inherited pointers are
///   gone); `share` shares pages and slots with the parent.
///   `std::process::Command` works under every policy where it uses
///   `posix_spawn` (the plain case); where it must fork first (`pre_exec`,
///   `uid`, `gid`, `groups`, ...) its child reads heap memory before the
///   `exec`, so under `drop` that child dies of SIGSEGV: use `copy` there.
/// - **Limits**: secret memory counts against `RLIMIT_MEMLOCK` (8 MiB for an
///   ordinary user on Debian) for as long as it is held.  When it is
///   exhausted, or the kernel or a sandbox refuses secret memory and the
///   fallback is forbidden, an allocation fails and Rust aborts the program
///   ("memory allocation of N bytes failed").  Unlike the heap module, there
///   is no silent fall-through to the ordinary heap.  Where secret memory is
///   refused and the fallback is allowed, the heap is mlock'ed fallback
///   memory (readable by root); the library warns on stderr only when
///   secret memory stops working after it worked in the process.
/// - What it does not cover: memory that does not come from the Rust global
///   allocator (C libraries' `malloc`, the stacks of threads, the program's
///   static data, the kernel's copies such as pipe buffers).
#[derive(Clone, Copy, Debug, Default)]
pub struct Allocator;

// SAFETY: blocks come from a thread-safe allocator, are valid for the layout
// (size and alignment, see alloc_raw) until freed, and are never handed out
// twice.
unsafe impl GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        match alloc_raw(layout.size(), layout.align()) {
            Ok(p) => p.as_ptr(),
            Err(_) => ptr::null_mut(),
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract; the C allocator's blocks are
        // zero-filled already.
        unsafe { self.alloc(layout) }
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract: p came from this allocator with
        // this layout.
        unsafe { free_raw(p, layout.align()) }
    }

    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract, as for dealloc.
        match unsafe { realloc_raw(p, layout.size(), layout.align(), new_size) } {
            Ok(q) => q.as_ptr(),
            Err(_) => ptr::null_mut(),
        }
    }
}
