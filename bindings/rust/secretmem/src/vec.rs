// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the secretmem authors
//! vec.rs - [`SecretVec`]: a growable buffer in secret memory that is zeroed
//! when dropped and leaves no copy behind when it grows; [`Secret`], its
//! byte form, with [`Secret::random`].
use crate::alloc::{alloc_raw, free_raw, realloc_raw, MIN_ALIGN};
use std::io;
use std::mem;
use std::ops::{Deref, DerefMut};
use std::os::raw::{c_uint, c_void};
use std::ptr::{self, NonNull};
use std::slice;

extern "C" {
    // glibc 2.25+; declared here to need no crate.
    fn getrandom(buf: *mut c_void, buflen: usize, flags: c_uint) -> isize;
}

/// Fill `buf` from the kernel's random generator (getrandom(2)), in place.
pub(crate) fn fill_random(buf: &mut [u8]) -> io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        // SAFETY: the rest of buf is valid for writing.
        let n = unsafe { getrandom(buf[done..].as_mut_ptr().cast(), buf.len() - done, 0) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        done += n as usize;
    }
    Ok(())
}

/// A growable array of plain data (`T: Copy`, alignment at most 16) in
/// secret memory.  Growing moves it with secretmem_realloc(3), which zeroes
/// the old block; dropping it zeroes and frees the block.  Like
/// [`crate::SecretBox`] it implements neither `Clone`, `Debug` nor
/// `Display`; `SecretVec<u8>` (alias [`Secret`]) compares in constant time.
pub struct SecretVec<T: Copy> {
    ptr: NonNull<T>,
    len: usize,
    cap: usize, // 0: nothing allocated
}

// SAFETY: it owns its elements like Vec<T>.
unsafe impl<T: Copy + Send> Send for SecretVec<T> {}
// SAFETY: as above.
unsafe impl<T: Copy + Sync> Sync for SecretVec<T> {}

/// Bytes in secret memory: `Secret::random(32)`, `Secret::with_capacity(n)`.
pub type Secret = SecretVec<u8>;

impl<T: Copy> SecretVec<T> {
    fn check_align() -> io::Result<()> {
        if mem::align_of::<T>() > MIN_ALIGN || mem::size_of::<T>() == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "SecretVec: element types need a size and an alignment of at most 16",
            ));
        }
        Ok(())
    }

    /// An empty vector; nothing is allocated until the first element.
    pub fn new() -> Self {
        SecretVec { ptr: NonNull::dangling(), len: 0, cap: 0 }
    }

    /// An empty vector with room for `cap` elements in secret memory.
    pub fn with_capacity(cap: usize) -> io::Result<Self> {
        let mut v = Self::new();
        v.reserve(cap)?;
        Ok(v)
    }

    /// A copy of `data` in secret memory (`data` itself is the caller's).
    pub fn from_slice(data: &[T]) -> io::Result<Self> {
        let mut v = Self::with_capacity(data.len())?;
        v.extend_from_slice(data)?;
        Ok(v)
    }

    /// Room for at least `additional` more elements.  On error the vector is
    /// unchanged.
    pub fn reserve(&mut self, additional: usize) -> io::Result<()> {
        Self::check_align()?;
        let need = self.len.checked_add(additional).ok_or_else(|| io::Error::from_raw_os_error(12))?;
        if need <= self.cap {
            return Ok(());
        }
        let cap = need.max(self.cap.saturating_mul(2)).max(16);
        let bytes = cap.checked_mul(mem::size_of::<T>()).ok_or_else(|| io::Error::from_raw_os_error(12))?;
        let p = if self.cap == 0 {
            alloc_raw(bytes, mem::align_of::<T>())?
        } else {
            // SAFETY: our live block of cap elements.
            unsafe {
                realloc_raw(self.ptr.as_ptr().cast(), self.cap * mem::size_of::<T>(), mem::align_of::<T>(), bytes)?
            }
        };
        self.ptr = p.cast();
        self.cap = cap;
        Ok(())
    }

    /// Append one element (it is copied from the argument: for a key, read
    /// into the vector's own memory instead, e.g. with [`SecretVec::resize`]
    /// and `read_exact`).
    pub fn push(&mut self, value: T) -> io::Result<()> {
        self.reserve(1)?;
        // SAFETY: len < cap after reserve.
        unsafe { ptr::write(self.ptr.as_ptr().add(self.len), value) };
        self.len += 1;
        Ok(())
    }

    /// Append a copy of every element of `data`.
    pub fn extend_from_slice(&mut self, data: &[T]) -> io::Result<()> {
        self.reserve(data.len())?;
        // SAFETY: room for data.len() more; data cannot overlap our block
        // while we hold it mutably.
        unsafe { ptr::copy_nonoverlapping(data.as_ptr(), self.ptr.as_ptr().add(self.len), data.len()) };
        self.len += data.len();
        Ok(())
    }

    /// Grow to `len` elements, the new ones `value`, or shrink (the removed
    /// elements are zeroed).
    pub fn resize(&mut self, len: usize, value: T) -> io::Result<()> {
        if len <= self.len {
            self.truncate(len);
            return Ok(());
        }
        self.reserve(len - self.len)?;
        for i in self.len..len {
            // SAFETY: i < cap.
            unsafe { ptr::write(self.ptr.as_ptr().add(i), value) };
        }
        self.len = len;
        Ok(())
    }

    /// Keep the first `len` elements; the rest are zeroed at once.
    pub fn truncate(&mut self, len: usize) {
        if len < self.len {
            // SAFETY: the tail is inside the block.
            let tail = unsafe { self.ptr.as_ptr().add(len) } as *mut u8;
            crate::memzero(tail, (self.len - len) * mem::size_of::<T>());
            self.len = len;
        }
    }

    /// Zero every element and make the vector empty (the block is kept).
    pub fn clear(&mut self) {
        self.truncate(0)
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// No elements?
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Room without moving.
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// The elements.
    pub fn as_slice(&self) -> &[T] {
        // SAFETY: len initialized elements (a dangling, aligned pointer when
        // len is 0).
        unsafe { slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The elements, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: as above.
        unsafe { slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// The backend of the memory the elements live in (`None` while nothing
    /// is allocated).
    pub fn backend(&self) -> crate::Backend {
        if self.cap == 0 {
            return crate::Backend::None;
        }
        crate::region::backend_of(self.ptr.as_ptr() as *const u8)
    }
}

impl SecretVec<u8> {
    /// `n` random bytes (getrandom(2)) written straight into secret memory.
    pub fn random(n: usize) -> io::Result<Self> {
        let mut v = Self::with_capacity(n)?;
        v.resize(n, 0)?;
        fill_random(&mut v)?;
        Ok(v)
    }

    /// `n` zero bytes, to be filled in place (`file.read_exact(&mut s)`).
    pub fn zeroed(n: usize) -> io::Result<Self> {
        let mut v = Self::with_capacity(n)?;
        v.resize(n, 0)?;
        Ok(v)
    }
}

impl<T: Copy> Default for SecretVec<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Copy> Deref for SecretVec<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.as_slice()
    }
}

impl<T: Copy> DerefMut for SecretVec<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        self.as_mut_slice()
    }
}

impl<T: Copy> Drop for SecretVec<T> {
    fn drop(&mut self) {
        if self.cap != 0 {
            // SAFETY: our live block; secretmem_free zeroes it whole.
            unsafe { free_raw(self.ptr.as_ptr().cast(), mem::align_of::<T>()) }
        }
    }
}

/// Constant-time equality of the contents (secretmem_memeq(3)); vectors of
/// different lengths are unequal at once (the length is not secret).
impl PartialEq for SecretVec<u8> {
    fn eq(&self, other: &Self) -> bool {
        crate::ct_eq(self, other)
    }
}

impl Eq for SecretVec<u8> {}

/// Constant-time comparison with plain bytes.
impl PartialEq<[u8]> for SecretVec<u8> {
    fn eq(&self, other: &[u8]) -> bool {
        crate::ct_eq(self, other)
    }
}
