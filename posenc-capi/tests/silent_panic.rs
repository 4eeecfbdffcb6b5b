//! The panic guard is silent: a panic caught inside the library (here, from a corrupted
//! `PosencRope`) becomes `POSENC_ERR_PANIC` with its detail and prints nothing on stderr,
//! while panics outside posenc still reach the host's hook.
//!
//! Output on stderr can only be observed from outside the process (and libtest captures the
//! panic message of a test unless `--nocapture`), so the test re-executes its own binary
//! with `--nocapture` and a scenario in an environment variable, and inspects the child's
//! stderr. The scenarios that must print prove that the capture sees panic output at all.

use core::ffi::CStr;
use posenc_capi::*;
use std::process::Command;

const SCENARIO: &str = "POSENC_CAPI_SILENT_PANIC_SCENARIO";
const TEST_NAME: &str = "panic_guard_prints_nothing";
/// Printed by a child that ran its scenario to the end (on stdout).
const DONE: &str = "scenario finished";

/// A rope whose stored `rotary_dim` is corrupted (the magic number intact), as a caller's
/// stray write could leave it: every `usize` is a valid value, so reading it is defined, but
/// `posenc_rope_inv_freq` then slices the frequencies out of bounds and panics.
fn corrupted_rope() -> PosencRope {
    // 130 is the rotary dim; the other stored fields (head_dim 200, offset 0, small enums,
    // f32 bit patterns of frequencies) cannot equal it as a whole 64-bit word.
    let cfg = PosencRopeConfig {
        head_dim: 200,
        rotary_dim: 130,
        base: 10_000.0,
        ..PosencRopeConfig::default()
    };
    let mut rope = PosencRope::default();
    assert_eq!(unsafe { posenc_rope_init(&cfg, &mut rope) }, POSENC_OK);
    // SAFETY: PosencRope is repr(C) { u64, [u64; POSENC_ROPE_STORAGE_WORDS] } (its size is
    // asserted in tests/capi.rs), so it may be viewed as that many + 1 words.
    let words: &mut [u64; POSENC_ROPE_STORAGE_WORDS + 1] = unsafe { &mut *(&raw mut rope).cast() };
    let hits: Vec<usize> = (1..words.len()).filter(|&i| words[i] == 130).collect();
    assert_eq!(
        hits.len(),
        1,
        "expected the stored rotary_dim (130) in exactly one word; posenc's Rope layout \
         changed, adapt this test"
    );
    words[hits[0]] = u64::MAX;
    rope
}

fn detail() -> String {
    unsafe { CStr::from_ptr(posenc_last_error_detail()) }
        .to_string_lossy()
        .into_owned()
}

/// A panic inside posenc: the error code and detail, and the output buffer unchanged.
fn guarded_panics() {
    let rope = corrupted_rope();
    let mut out = [7f32; 65];
    let rc = unsafe { posenc_rope_inv_freq(&rope, out.as_mut_ptr(), out.len()) };
    assert_eq!(rc, POSENC_ERR_PANIC, "detail: {}", detail());
    let d = detail();
    assert!(d.starts_with("panic in posenc at "), "{d}");
    assert!(d.contains(".rs:") && d.contains("out of range"), "{d}");
    assert_eq!(out, [7.0; 65]);
    // The property accessors run in the same guard (fallback on panic); nested guards too.
    assert_eq!(
        catch_panics(|| catch_panics(|| panic!("inner")) + catch_panics(|| panic!("second"))),
        2 * POSENC_ERR_PANIC
    );
    assert!(detail().contains("second"), "{}", detail());
    // The guard is left after each call: the flag does not leak into later host code.
    assert_eq!(catch_panics(|| POSENC_OK), POSENC_OK);
}

fn child(scenario: &str) {
    match scenario {
        // Only posenc panics: stderr must stay empty.
        "guarded" => guarded_panics(),
        // The host installed its hook before posenc's first call: posenc's panics stay
        // silent, the host's own panic reaches the host's hook.
        "host-hook" => {
            std::panic::set_hook(Box::new(|info| {
                eprintln!(
                    "host hook: {}",
                    info.payload().downcast_ref::<&str>().unwrap()
                );
            }));
            guarded_panics();
            assert!(std::panic::catch_unwind(|| panic!("host panic")).is_err());
        }
        // Rust's default hook before posenc's: a host panic after posenc's calls is printed
        // as usual.
        "default-hook" => {
            guarded_panics();
            assert!(std::panic::catch_unwind(|| panic!("host panic")).is_err());
        }
        other => panic!("unknown scenario {other}"),
    }
    println!("{DONE}");
}

/// Runs this test in a child process on `scenario`; returns its stderr.
fn run_child(scenario: &str) -> String {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", TEST_NAME, "--nocapture", "--test-threads=1"])
        .env(SCENARIO, scenario)
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success() && stdout.contains(DONE),
        "scenario {scenario} failed: {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    stderr
}

#[test]
fn panic_guard_prints_nothing() {
    if let Ok(scenario) = std::env::var(SCENARIO) {
        return child(&scenario);
    }
    assert_eq!(
        run_child("guarded"),
        "",
        "posenc printed on the host's stderr"
    );
    assert_eq!(run_child("host-hook"), "host hook: host panic\n");
    let stderr = run_child("default-hook");
    assert!(
        stderr.contains("panicked at") && stderr.contains("host panic"),
        "{stderr}"
    );
    assert!(!stderr.contains("out of range"), "{stderr}");
}
