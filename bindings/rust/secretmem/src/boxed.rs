// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the secretmem authors
//! boxed.rs - [`SecretBox`]: one value in secret memory, zeroed when dropped.
use crate::alloc::{alloc_raw, free_raw};
use std::io;
use std::marker::PhantomData;
use std::mem;
use std::ops::{Deref, DerefMut};
use std::ptr::{self, NonNull};

/// A value of type `T` in secret memory (libsecretmem's allocator: many small
/// secrets share a page).  Dropping it drops the value, then zeroes and frees
/// its memory.
///
/// It implements neither `Clone`, `Debug` nor `Display`: a key is not copied
/// or printed by accident.  Compare byte arrays with `==`, which runs in
/// constant time (`SecretBox<[u8; N]>`).
///
/// `SecretBox::new(value)` moves `value` in: the bytes it had on the caller's
/// stack are ordinary memory that this crate cannot reach.  For a key, fill
/// the box in place instead: [`SecretBox::random`], or [`SecretBox::zeroed`]
/// and then read into it (`file.read_exact(&mut *key)`: `std::fs::File` is
/// unbuffered, so the kernel copies straight into secret memory).
pub struct SecretBox<T> {
    ptr: NonNull<T>,
    _owns: PhantomData<T>,
}

// SAFETY: SecretBox owns its T like Box<T> does.
unsafe impl<T: Send> Send for SecretBox<T> {}
// SAFETY: as above; &SecretBox<T> only hands out &T.
unsafe impl<T: Sync> Sync for SecretBox<T> {}

impl<T> SecretBox<T> {
    fn alloc() -> io::Result<NonNull<T>> {
        alloc_raw(mem::size_of::<T>(), mem::align_of::<T>()).map(NonNull::cast)
    }

    /// Move `value` into secret memory.  Errors: `ENOMEM` (out of memory or
    /// at `RLIMIT_MEMLOCK`), `ENOSYS`/`EPERM` (no secret memory here and the
    /// fallback forbidden).
    pub fn new(value: T) -> io::Result<Self> {
        let p = Self::alloc()?;
        // SAFETY: a fresh block, valid and aligned for T.
        unsafe { ptr::write(p.as_ptr(), value) };
        Ok(SecretBox { ptr: p, _owns: PhantomData })
    }

    /// `T::default()` written into secret memory, for types whose default is
    /// not secret (then fill it in place through `DerefMut`).
    pub fn try_default() -> io::Result<Self>
    where
        T: Default,
    {
        Self::new(T::default())
    }

    /// The backend of the memory this value lives in.
    pub fn backend(&self) -> crate::Backend {
        crate::region::backend_of(self.ptr.as_ptr() as *const u8)
    }

    /// The address of the value (for diagnostics and tests).
    pub fn as_ptr(&self) -> *const T {
        self.ptr.as_ptr()
    }
}

impl<const N: usize> SecretBox<[u8; N]> {
    /// N zero bytes in secret memory, to be filled in place.
    pub fn zeroed() -> io::Result<Self> {
        // The C allocator's blocks are zero-filled: nothing is written, and
        // [0u8; N] is a valid value.
        Ok(SecretBox { ptr: Self::alloc()?, _owns: PhantomData })
    }

    /// N random bytes (getrandom(2)) written straight into secret memory.
    pub fn random() -> io::Result<Self> {
        let mut b = Self::zeroed()?;
        crate::vec::fill_random(&mut b[..])?;
        Ok(b)
    }
}

impl<T> Deref for SecretBox<T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: a live, initialized value owned by self.
        unsafe { self.ptr.as_ref() }
    }
}

impl<T> DerefMut for SecretBox<T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as above, borrowed mutably through self.
        unsafe { self.ptr.as_mut() }
    }
}

impl<T> Drop for SecretBox<T> {
    fn drop(&mut self) {
        // SAFETY: the value is live and dropped once; then the block, which
        // secretmem_free zeroes whole, is freed with the alignment it had.
        unsafe {
            ptr::drop_in_place(self.ptr.as_ptr());
            free_raw(self.ptr.as_ptr().cast(), mem::align_of::<T>());
        }
    }
}

/// Constant-time equality (secretmem_memeq(3)) of two byte arrays.
impl<const N: usize> PartialEq for SecretBox<[u8; N]> {
    fn eq(&self, other: &Self) -> bool {
        crate::ct_eq(&self[..], &other[..])
    }
}

impl<const N: usize> Eq for SecretBox<[u8; N]> {}
