//! Replays every checked-in corpus file (`corpus/<target>/*`) through its target's checks,
//! deterministically and without libFuzzer: a regression on an input the fuzzer once found
//! interesting fails here, on stable, in seconds. CI runs
//! `cargo test --no-default-features --test replay` in `fuzz/`.

use std::fs;
use std::path::Path;

type Target = fn(&[u8]);

const TARGETS: &[(&str, Target)] = &[
    ("bad_input", posenc_fuzz::targets::bad_input::fuzz),
    (
        "layout_equivalence",
        posenc_fuzz::targets::layout_equivalence::fuzz,
    ),
    ("permutation", posenc_fuzz::targets::permutation::fuzz),
    ("views", posenc_fuzz::targets::views::fuzz),
    ("quant", posenc_fuzz::targets::quant::fuzz),
    ("fused", posenc_fuzz::targets::fused::fuzz),
    ("load", posenc_fuzz::targets::load::fuzz),
];

fn replay(name: &str, fuzz: Target) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(name);
    let mut files: Vec<_> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e} (every target keeps a seed corpus)", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{}: empty corpus", dir.display());
    let n = files.len();
    // On a thread with a small stack: CI builds this test unoptimised, where a kernel's frame
    // is largest (see posenc's `engine::vector::apart!`), and a kernel that outgrows this
    // stack overflows here rather than in a user's debug build.
    let name2 = name.to_owned();
    let replayed = std::thread::Builder::new()
        .stack_size(STACK)
        .spawn(move || {
            for f in &files {
                let data = fs::read(f).unwrap();
                let r = std::panic::catch_unwind(|| fuzz(&data));
                assert!(r.is_ok(), "{name2}: corpus file {} fails", f.display());
            }
        })
        .unwrap()
        .join();
    assert!(replayed.is_ok(), "{name}: replay failed");
    println!("{name}: {n} corpus files replayed");
}

/// The replay threads' stack: half of what Rust gives a spawned thread (and a test) by
/// default, so a debug build keeps that much room for its own frames.
const STACK: usize = 1 << 20;

#[test]
fn bad_input() {
    replay(TARGETS[0].0, TARGETS[0].1);
    // The corpus must keep reaching every domain edge the target knows (times, positions,
    // first_position, padding, rope limits, sin_cos_exact): losing one is a regression too.
    let missing: Vec<_> = posenc_fuzz::targets::bad_input::reached()
        .into_iter()
        .filter(|&(_, n)| n == 0)
        .map(|(e, _)| e)
        .collect();
    assert!(
        missing.is_empty(),
        "corpus/bad_input reaches none of {missing:?}"
    );
}

#[test]
fn layout_equivalence() {
    replay(TARGETS[1].0, TARGETS[1].1);
}

#[test]
fn permutation() {
    replay(TARGETS[2].0, TARGETS[2].1);
}

#[test]
fn views() {
    replay(TARGETS[3].0, TARGETS[3].1);
}

#[test]
fn quant() {
    replay(TARGETS[4].0, TARGETS[4].1);
}

#[test]
fn load() {
    replay(TARGETS[6].0, TARGETS[6].1);
}

/// Reproducers of open posenc findings (`regressions/<target>/`, listed in fuzz/README.md):
/// each failed its target when found and fails until posenc is fixed, so this runs with
/// `--ignored` only and checks every property, the relaxed ones too (`posenc_fuzz::strict`).
/// Once a finding is fixed, this passes: move its files into `corpus/<target>/` and drop the
/// target's `KNOWN ISSUE` relaxation.
#[test]
#[ignore = "reproducers of open posenc findings (fuzz/README.md)"]
fn known_issues() {
    posenc_fuzz::set_strict(true);
    let mut failing = Vec::new();
    for &(name, fuzz) in TARGETS {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("regressions")
            .join(name);
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        let mut files: Vec<_> = entries.map(|e| e.unwrap().path()).collect();
        files.sort();
        for f in files {
            let data = fs::read(&f).unwrap();
            if std::panic::catch_unwind(|| fuzz(&data)).is_err() {
                failing.push(f.display().to_string());
            }
        }
    }
    assert!(failing.is_empty(), "still failing: {failing:?}");
}

/// Every target in `fuzz_targets/` has its replay above.
#[test]
fn every_target_replayed() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz_targets");
    let mut on_disk: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            e.unwrap()
                .path()
                .file_stem()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = TARGETS.iter().map(|t| t.0.to_string()).collect();
    listed.sort();
    assert_eq!(on_disk, listed);
}

#[test]
fn fused() {
    replay(TARGETS[5].0, TARGETS[5].1);
}
