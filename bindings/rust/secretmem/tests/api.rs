// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the secretmem authors
//! tests/api.rs - the safe API of the secretmem crate: SecretBox, SecretVec
//! and Secret, Region and its guards, constant-time comparison, supported()
//! and stats(), errors as io::Error, and the absence of Clone/Debug/Display.
//!
//! Where the kernel has no secret memory the tests still run (on the
//! fallback backend) and say so; with SECRETMEM_TEST_REQUIRE_KERNEL=1 (CI)
//! that is a failure.
use secretmem::{Access, Backend, Region, Secret, SecretBox, SecretVec};
use std::io::Read;
use std::mem;

fn expect_backend() -> Backend {
    match secretmem::supported() {
        Ok(()) => Backend::Secret,
        Err(e) => {
            if std::env::var("SECRETMEM_TEST_REQUIRE_KERNEL").map(|v| v == "1").unwrap_or(false) {
                panic!("no secret memory ({}) and SECRETMEM_TEST_REQUIRE_KERNEL=1", e);
            }
            println!("secretmem-skip: no secret memory here ({}): checked on the fallback", e);
            Backend::Fallback
        }
    }
}

// Compile-time: a type that implements the trait makes the call ambiguous
// (the trick of static_assertions' assert_not_impl_any).
trait AmbiguousIfImpl<A> {
    fn some_item() {}
}
impl<T> AmbiguousIfImpl<()> for T {}
struct IsClone;
struct IsDebug;
struct IsDisplay;
impl<T: Clone> AmbiguousIfImpl<IsClone> for T {}
impl<T: std::fmt::Debug> AmbiguousIfImpl<IsDebug> for T {}
impl<T: std::fmt::Display> AmbiguousIfImpl<IsDisplay> for T {}

#[test]
fn no_clone_debug_display() {
    // Each line fails to compile if the type gains Clone, Debug or Display.
    let _ = <SecretBox<[u8; 32]> as AmbiguousIfImpl<_>>::some_item;
    let _ = <SecretVec<u8> as AmbiguousIfImpl<_>>::some_item;
    let _ = <Region as AmbiguousIfImpl<_>>::some_item;
}

#[test]
fn supported_and_stats() {
    let b = expect_backend();
    assert_eq!(secretmem::default_backend(), b);
    let before = secretmem::stats().unwrap();
    let k = SecretBox::<[u8; 32]>::random().unwrap();
    let after = secretmem::stats().unwrap();
    assert!(after.live_allocations >= 1 && after.bytes_in_use >= 32);
    assert_eq!(after.backend, b);
    if b == Backend::Secret {
        assert!(after.secret_bytes > 0, "no secret bytes mapped");
    }
    assert!(after.bytes_mapped >= before.bytes_mapped);
    drop(k);
    assert_eq!(secretmem::version(), "1.1.0");
    assert_eq!(Backend::Secret.name(), "secret");
}

#[test]
fn secretbox_holds_zeroes_and_frees() {
    let b = expect_backend();
    let mut k = SecretBox::<[u8; 32]>::zeroed().unwrap();
    assert_eq!(*k, [0u8; 32]);
    k.copy_from_slice(&[7u8; 32]);
    assert_eq!(k[31], 7);
    assert_eq!(k.backend(), b);
    let p = k.as_ptr() as *const u8;
    // SAFETY: owns() never aborts, whatever the pointer.
    assert_eq!(unsafe { secretmem_sys::secretmem_owns(p.cast()) }, 1);
    drop(k);
    // SAFETY: as above; the block is freed now.
    assert_eq!(unsafe { secretmem_sys::secretmem_owns(p.cast()) }, 0, "the block is still live");

    // any T, with drop glue run
    let s = SecretBox::new(String::from("not a secret")).unwrap();
    assert_eq!(s.len(), 12);
    let d = SecretBox::<u64>::try_default().unwrap();
    assert_eq!(*d, 0);
}

#[test]
fn secretbox_alignment() {
    #[repr(align(64))]
    struct Line([u8; 64]);
    #[repr(align(4096))]
    struct Page([u8; 100]);
    let mut boxes = Vec::new();
    for i in 0..50u8 {
        let l = SecretBox::new(Line([i; 64])).unwrap();
        assert_eq!(l.as_ptr() as usize % 64, 0);
        let p = SecretBox::new(Page([i; 100])).unwrap();
        assert_eq!(p.as_ptr() as usize % 4096, 0);
        let w = SecretBox::new([i as u128; 3]).unwrap();
        assert_eq!(w.as_ptr() as usize % mem::align_of::<u128>(), 0);
        boxes.push((l, p, w));
    }
    for (i, (l, p, w)) in boxes.iter().enumerate() {
        assert!(l.0.iter().all(|&x| x == i as u8) && p.0[99] == i as u8 && w[2] == i as u128);
    }
}

#[test]
fn random_and_constant_time_eq() {
    expect_backend();
    let a = Secret::random(32).unwrap();
    let b = Secret::random(32).unwrap();
    assert_eq!(a.len(), 32);
    assert!(a != b, "two random keys are equal");
    assert!(a.iter().any(|&x| x != 0));
    let c = Secret::from_slice(&a).unwrap();
    assert!(a == c);
    assert!(a == *a.as_slice());
    assert!(Secret::random(31).unwrap() != a, "different lengths compare equal");
    let x = SecretBox::<[u8; 16]>::random().unwrap();
    let mut y = SecretBox::<[u8; 16]>::zeroed().unwrap();
    y.copy_from_slice(&x[..]);
    assert!(x == y);
    y[15] ^= 1;
    assert!(x != y);
    assert!(secretmem::ct_eq(b"abc", b"abc") && !secretmem::ct_eq(b"abc", b"abd") && !secretmem::ct_eq(b"ab", b"abc"));
    assert!(secretmem::ct_eq(b"", b""));
}

#[test]
fn secretvec_grows_in_secret_memory() {
    let backend = expect_backend();
    let mut v: SecretVec<u8> = SecretVec::new();
    assert!(v.is_empty() && v.capacity() == 0);
    for i in 0..100_000u32 {
        v.push(i as u8).unwrap();
    }
    assert_eq!(v.len(), 100_000);
    assert!(v.iter().enumerate().all(|(i, &x)| x == i as u8));
    assert_eq!(v.backend(), backend);
    v.truncate(10);
    assert_eq!(&v[..], &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    v.clear();
    assert!(v.is_empty());
    let mut w: SecretVec<u64> = SecretVec::with_capacity(3).unwrap();
    w.extend_from_slice(&[1, 2, 3, 4, 5]).unwrap();
    assert_eq!(w.iter().sum::<u64>(), 15);
    let mut z = Secret::zeroed(8).unwrap();
    (&[1u8, 2, 3, 4, 5, 6, 7, 8][..]).read_exact(&mut z).unwrap();
    assert_eq!(z[7], 8);
}

#[test]
fn errors_are_io_errors() {
    // A region of 0 bytes: EINVAL from the library, as an io::Error.
    let e = Region::new(0).err().expect("a region of 0 bytes");
    assert_eq!(e.raw_os_error(), Some(22));
    // An impossible size: ENOMEM.
    let e = Secret::with_capacity(usize::MAX / 2).err().expect("an impossible size");
    assert_eq!(e.raw_os_error(), Some(12), "{}", e);
    #[allow(dead_code)] // only its alignment matters
    #[repr(align(32))]
    #[derive(Clone, Copy)]
    struct Wide([u8; 32]);
    let e = SecretVec::<Wide>::with_capacity(1).err().expect("alignment over 16");
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
}

#[test]
fn region_protect_guards() {
    let backend = expect_backend();
    let mut r = Region::new(100).unwrap();
    assert!(r.len() >= 4096 && r.len() % 4096 == 0);
    assert_eq!(r.backend(), backend);
    assert!(r.as_slice().iter().all(|&x| x == 0));
    r.as_mut_slice()[..5].copy_from_slice(b"hello");
    {
        let ro = r.protect(Access::ReadOnly).unwrap();
        assert_eq!(ro.access(), Access::ReadOnly);
        assert_eq!(&ro.as_slice().unwrap()[..5], b"hello");
        let line = maps_line(ro.as_slice().unwrap().as_ptr());
        assert!(line.split_whitespace().nth(1).unwrap().starts_with("r--"), "{}", line);
    }
    {
        let na = r.protect(Access::NoAccess).unwrap();
        assert!(na.as_slice().is_none());
    }
    let line = maps_line(r.as_slice().as_ptr());
    assert!(line.split_whitespace().nth(1).unwrap().starts_with("rw-"), "{}", line);
    r.as_mut_slice()[0] = b'j';
    assert_eq!(&r.as_slice()[..5], b"jello");
    // a guard forgotten (safe code) leaves no fault for safe code: the next
    // access makes the region readable and writable again
    std::mem::forget(r.protect(Access::NoAccess).unwrap());
    assert_eq!(&r.as_slice()[..5], b"jello");
    std::mem::forget(r.protect(Access::ReadOnly).unwrap());
    r.as_mut_slice()[0] = b'h';
    assert_eq!(&r.as_slice()[..5], b"hello");
    if backend == Backend::Secret {
        let s = Region::new_secret_only(1).unwrap();
        assert_eq!(s.backend(), Backend::Secret);
    }
}

#[test]
fn noaccess_region_faults_in_a_child() {
    // Under NoAccess a read through the raw pointer is a fault, not a read:
    // checked in a child process (the test binary itself, re-run).
    if std::env::var("SECRETMEM_API_FAULT_CHILD").is_ok() {
        let mut r = Region::new(1).unwrap();
        let p = r.as_slice().as_ptr();
        let _g = r.protect(Access::NoAccess).unwrap();
        // SAFETY: none - this read must fault, and the child die of SIGSEGV.
        let x = unsafe { std::ptr::read_volatile(p) };
        println!("read {} under NoAccess", x);
        std::process::exit(0);
    }
    expect_backend();
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "noaccess_region_faults_in_a_child", "--nocapture", "--test-threads=1"])
        .env("SECRETMEM_API_FAULT_CHILD", "1")
        .output()
        .unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(out.status.signal(), Some(11), "child: {:?} {}", out.status, String::from_utf8_lossy(&out.stdout));
}

fn maps_line(p: *const u8) -> String {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    for line in maps.lines() {
        let r = line.split(' ').next().unwrap();
        let (lo, hi) = r.split_once('-').unwrap();
        let (lo, hi) = (usize::from_str_radix(lo, 16).unwrap(), usize::from_str_radix(hi, 16).unwrap());
        if lo <= p as usize && (p as usize) < hi {
            return line.to_string();
        }
    }
    panic!("{:p} is not mapped", p);
}
