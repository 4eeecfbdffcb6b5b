//! Shared test helpers: the reader for the golden vectors in `tests/data` (format:
//! `tests/data/README.md`), [`check`], the generator [`rng::Rng`], [`backends`], [`bits`] and [`ulps`].
#![allow(dead_code)] // each test file uses a different subset

pub mod check;
pub mod rng;

use std::collections::BTreeMap;
use std::path::PathBuf;

/// The data directory inside the repository.
pub fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("data")
}

/// Every case named in `INDEX.txt`.
pub fn case_names() -> Vec<String> {
    let index = std::fs::read_to_string(data_dir().join("INDEX.txt")).expect("INDEX.txt");
    index
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect()
}

/// One case: its manifest and its arrays.
pub struct Case {
    pub name: String,
    pub kv: BTreeMap<String, String>,
    dir: PathBuf,
}

/// An array as stored: the dtype tag, the shape and the raw little-endian bytes.
pub struct Array {
    pub dtype: String,
    pub shape: Vec<usize>,
    pub bytes: Vec<u8>,
}

impl Array {
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }
    /// Every element widened exactly to f64 (f16/bf16 through `half`).
    pub fn to_f64(&self) -> Vec<f64> {
        let b = &self.bytes;
        match self.dtype.as_str() {
            "f64" => b
                .chunks_exact(8)
                .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
                .collect(),
            "f32" => b
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().unwrap()) as f64)
                .collect(),
            "i64" => b
                .chunks_exact(8)
                .map(|c| i64::from_le_bytes(c.try_into().unwrap()) as f64)
                .collect(),
            "f16" => self
                .bits16()
                .into_iter()
                .map(|u| half::f16::from_bits(u).to_f64())
                .collect(),
            "bf16" => self
                .bits16()
                .into_iter()
                .map(|u| half::bf16::from_bits(u).to_f64())
                .collect(),
            other => panic!("unknown dtype {other}"),
        }
    }
    /// f32 elements (panics unless the array is f32).
    pub fn to_f32(&self) -> Vec<f32> {
        assert_eq!(self.dtype, "f32");
        self.bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }
    /// i64 elements (panics unless the array is i64).
    pub fn to_i64(&self) -> Vec<i64> {
        assert_eq!(self.dtype, "i64");
        self.bytes
            .chunks_exact(8)
            .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }
    /// Raw 16-bit patterns (f16 / bf16 arrays).
    pub fn bits16(&self) -> Vec<u16> {
        assert!(
            self.dtype == "f16" || self.dtype == "bf16",
            "not a 16-bit array"
        );
        self.bytes
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }
}

impl Case {
    pub fn load(name: &str) -> Case {
        let dir = data_dir().join(name);
        let text = std::fs::read_to_string(dir.join("manifest.txt"))
            .unwrap_or_else(|e| panic!("{name}: manifest: {e}"));
        let mut kv = BTreeMap::new();
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (k, v) = line
                .split_once('=')
                .unwrap_or_else(|| panic!("{name}: bad line {line}"));
            kv.insert(k.to_string(), v.to_string());
        }
        Case {
            name: name.to_string(),
            kv,
            dir,
        }
    }

    pub fn get(&self, key: &str) -> &str {
        self.kv
            .get(key)
            .unwrap_or_else(|| panic!("{}: no key {key}", self.name))
    }
    pub fn opt(&self, key: &str) -> Option<&str> {
        self.kv.get(key).map(String::as_str)
    }
    pub fn f64(&self, key: &str) -> f64 {
        self.get(key)
            .parse()
            .unwrap_or_else(|e| panic!("{}: {key}: {e}", self.name))
    }
    pub fn usize(&self, key: &str) -> usize {
        self.get(key)
            .parse()
            .unwrap_or_else(|e| panic!("{}: {key}: {e}", self.name))
    }
    pub fn list_f64(&self, key: &str) -> Vec<f64> {
        self.get(key)
            .split(',')
            .map(|v| v.trim().parse().unwrap())
            .collect()
    }
    pub fn has_array(&self, name: &str) -> bool {
        self.kv.contains_key(&format!("array.{name}"))
    }
    pub fn array(&self, name: &str) -> Array {
        let spec = self.get(&format!("array.{name}"));
        let mut parts = spec.split_whitespace();
        let file = parts.next().unwrap();
        let dtype = parts.next().unwrap().to_string();
        let shape: Vec<usize> = parts
            .next()
            .unwrap()
            .split(',')
            .map(|d| d.parse().unwrap())
            .collect();
        let bytes = std::fs::read(self.dir.join(file))
            .unwrap_or_else(|e| panic!("{}: {file}: {e}", self.name));
        let a = Array {
            dtype,
            shape,
            bytes,
        };
        let width = match a.dtype.as_str() {
            "f64" | "i64" => 8,
            "f32" => 4,
            _ => 2,
        };
        assert_eq!(
            a.bytes.len(),
            a.len() * width,
            "{}: {name}: size",
            self.name
        );
        a
    }
}

/// Every backend that runs here ([`posenc::Backend::available`]), checked to include
/// `Scalar`, `Portable` and the active one.
pub fn backends() -> Vec<posenc::Backend> {
    use posenc::Backend;
    let v: Vec<Backend> = Backend::available().collect();
    assert!(v.contains(&Backend::Scalar) && v.contains(&Backend::Portable));
    assert!(v.contains(&Backend::active()));
    v
}

/// Bit patterns of the elements through their f32 widening: every `Element` is f32 or 16 bits,
/// and the widening is injective for f16/bf16 except NaN payloads.
pub fn bits<T: posenc::Element>(x: &[T]) -> Vec<u32> {
    x.iter().map(|v| v.to_f32().to_bits()).collect()
}

/// Distance in representable f32 values (0 = bitwise equal up to the sign of zero); both
/// finite, any signs.
pub fn ulps(a: f32, b: f32) -> u64 {
    fn key(x: f32) -> i64 {
        let i = x.to_bits() as i32 as i64;
        if i < 0 { i64::from(i32::MIN) - i } else { i }
    }
    assert!(a.is_finite() && b.is_finite(), "non-finite {a} vs {b}");
    key(a).abs_diff(key(b))
}

/// Rotates token-major `x` by caller tables (`tokens × pairs` each, pairs = rotary_dim/2) on
/// `backend`, through the public table path: a rope of the table's rotary dim and a
/// [`posenc::Table`]. (What the free `apply_with_table_on` of earlier releases did.)
pub fn table_on<T: posenc::Element>(
    backend: posenc::Backend,
    x: &mut [T],
    n_heads: usize,
    head_dim: usize,
    layout: posenc::Layout,
    cos: &[f32],
    sin: &[f32],
) -> Result<(), posenc::Error> {
    let row = n_heads
        .checked_mul(head_dim)
        .ok_or(posenc::Error::ShapeOverflow)?;
    let tokens = x.len().checked_div(row).unwrap_or(0);
    let pairs = cos.len().checked_div(tokens).unwrap_or(head_dim / 2);
    let cfg = posenc::RopeConfig::new(head_dim, 1e4, layout).rotary_dim(2 * pairs);
    let rope = posenc::Rope::new(&cfg)?.with_backend(backend)?;
    rope.apply(x, n_heads, posenc::Table::new(cos, sin, tokens)?)
}
