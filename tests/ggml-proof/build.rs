//! Builds ggml (ggml-base and the CPU backend only) from the sources that the crates.io
//! package `llama-cpp-sys-2` vendors, with ggml's own CMake project, and links it statically.
//!
//! The package is a `cfg(any())` dependency: cargo resolves, locks and downloads it but does
//! not build it. `cargo metadata` says where cargo unpacked it.

use std::path::PathBuf;
use std::process::Command;

const VENDOR: &str = "llama-cpp-sys-2";

fn vendored_llama_cpp() -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("Cargo.toml");
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--locked",
            "--manifest-path",
        ])
        .arg(&manifest)
        .output()
        .expect("run cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("metadata JSON");
    let pkg = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == VENDOR)
        .unwrap_or_else(|| panic!("{VENDOR} is not in the dependency graph"));
    let manifest_path = PathBuf::from(pkg["manifest_path"].as_str().unwrap());
    let llama = manifest_path.parent().unwrap().join("llama.cpp");
    assert!(
        llama.join("ggml/include/ggml.h").is_file(),
        "{} has no ggml/include/ggml.h",
        llama.display()
    );
    println!(
        "cargo:rustc-env=GGML_PROOF_VENDOR={VENDOR} {}",
        pkg["version"].as_str().unwrap()
    );
    llama
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=Cargo.lock");
    // The package ships ggml inside llama.cpp's tree; ggml's directory alone does not configure
    // (the package leaves out ggml.pc.in), so CMake configures llama.cpp's top-level project and
    // builds only the target `ggml` (with its dependencies ggml-base and ggml-cpu).
    let llama = vendored_llama_cpp();
    // Release: the code a user of ggml runs. Native: this machine's CPU, as a local llama.cpp
    // build does. Everything not needed for a CPU rope is off (tests, examples, OpenMP: ggml's
    // own thread pool; llamafile's sgemm and the Q4 repack: matmul only).
    let dst = cmake::Config::new(&llama)
        .profile("Release")
        .build_target("ggml")
        .define("LLAMA_BUILD_COMMON", "OFF")
        .define("LLAMA_BUILD_TESTS", "OFF")
        .define("LLAMA_BUILD_EXAMPLES", "OFF")
        .define("LLAMA_BUILD_SERVER", "OFF")
        .define("LLAMA_BUILD_TOOLS", "OFF")
        .define("LLAMA_BUILD_APP", "OFF")
        .define("LLAMA_CURL", "OFF")
        .define("LLAMA_OPENSSL", "OFF")
        .define("BUILD_SHARED_LIBS", "OFF")
        .define("GGML_BUILD_TESTS", "OFF")
        .define("GGML_BUILD_EXAMPLES", "OFF")
        .define("GGML_NATIVE", "ON")
        .define("GGML_OPENMP", "OFF")
        .define("GGML_LLAMAFILE", "OFF")
        .define("GGML_CPU_REPACK", "OFF")
        .define("GGML_CCACHE", "OFF")
        .build();
    // Without an install step the archives stay in the build tree (bin/ by llama.cpp's
    // CMAKE_ARCHIVE_OUTPUT_DIRECTORY, else ggml/src/).
    for dir in ["build/bin", "build/ggml/src"] {
        println!("cargo:rustc-link-search=native={}", dst.join(dir).display());
    }
    // Order matters for static linking: the registry (ggml) needs the CPU backend, which needs
    // ggml-base.
    for lib in ["ggml", "ggml-cpu", "ggml-base"] {
        println!("cargo:rustc-link-lib=static={lib}");
    }
    println!("cargo:rustc-link-lib=dylib=stdc++");
    println!("cargo:rustc-link-lib=dylib=m");
}
