// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the secretmem authors
//! build.rs of secretmem-sys - find libsecretmem and tell cargo how to link it.
//!
//! In this order:
//!  1. `SECRETMEM_LIB_DIR`: a directory holding `libsecretmem.a` (linked
//!     statically) or `libsecretmem.so` (dynamically; the program then needs
//!     the directory in its run-time search path).  `SECRETMEM_LINK=dylib`
//!     prefers the shared library when both are there.
//!  2. the source tree this crate sits in: `../../../build/libsecretmem.a`
//!     (after `make` at the top), linked statically, so that test programs run
//!     from the build tree without `LD_LIBRARY_PATH`;
//!  3. the installed library through `pkg-config --libs secretmem`;
//!  4. `-lsecretmem` from the linker's default path, with a warning.
//!
//! Standard library only: no build-dependency (the build works offline).
use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn link_dir(dir: &Path) -> bool {
    let prefer_dylib = env::var("SECRETMEM_LINK").map(|v| v == "dylib").unwrap_or(false);
    let a = dir.join("libsecretmem.a");
    let so = dir.join("libsecretmem.so");
    let kind = if a.is_file() && !(prefer_dylib && so.exists()) {
        println!("cargo:rerun-if-changed={}", a.display());
        "static"
    } else if so.exists() {
        println!("cargo:rerun-if-changed={}", so.display());
        "dylib"
    } else {
        return false;
    };
    println!("cargo:rustc-link-search=native={}", dir.display());
    println!("cargo:rustc-link-lib={}=secretmem", kind);
    println!("cargo:lib_dir={}", dir.display());
    true
}

fn pkg_config() -> bool {
    let out = match Command::new(env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".into()))
        .args(["--libs", "secretmem"])
        .output()
    {
        Ok(o) if o.status.success() => o,
        _ => return false,
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let mut found = false;
    for word in text.split_whitespace() {
        if let Some(dir) = word.strip_prefix("-L") {
            println!("cargo:rustc-link-search=native={}", dir);
        } else if let Some(lib) = word.strip_prefix("-l") {
            println!("cargo:rustc-link-lib={}", lib);
            found |= lib == "secretmem";
        }
    }
    found
}

fn main() {
    println!("cargo:rerun-if-env-changed=SECRETMEM_LIB_DIR");
    println!("cargo:rerun-if-env-changed=SECRETMEM_LINK");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-changed=build.rs");
    if let Some(dir) = env::var_os("SECRETMEM_LIB_DIR") {
        let dir = PathBuf::from(dir);
        if !link_dir(&dir) {
            panic!(
                "SECRETMEM_LIB_DIR={}: neither libsecretmem.a nor libsecretmem.so is there",
                dir.display()
            );
        }
        return;
    }
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let tree = manifest.join("../../..");
    if tree.join("include/secretmem.h").is_file() && link_dir(&tree.join("build")) {
        return;
    }
    if pkg_config() {
        return;
    }
    println!(
        "cargo:warning=libsecretmem not found (no SECRETMEM_LIB_DIR, no build/ in the source \
         tree, no pkg-config secretmem): linking -lsecretmem from the default path"
    );
    println!("cargo:rustc-link-lib=secretmem");
}
