//! GGUF file header parsing (feature `gguf`): the metadata key/values of a GGUF v2/v3 file.

use super::alloc::vec::Vec;
use super::gguf::{GgufArray, GgufError, GgufErrorKind, GgufType, GgufValue, scalar_from_le};

/// Nesting limit for arrays of arrays (GGUF allows them; no RoPE key uses one).
const MAX_DEPTH: usize = 8;

/// The metadata of a GGUF file, parsed from the start of its bytes, borrowing them.
///
/// Reads the magic `GGUF`, the version (2 or 3; version 1's 32-bit counts are refused), the
/// tensor count, and every metadata key/value pair of every GGUF type (arrays included, also
/// arrays of strings and nested arrays), all little-endian. Tensor infos and data are not
/// read: pass only as many bytes as the metadata needs, or the whole file. Malformed input
/// (truncation, bad UTF-8, unknown types, counts larger than the buffer) is a
/// [`GgufError`] with key `"gguf"`, never a panic or an allocation sized by the file.
///
/// ```
/// use posenc::load::{GgufHeader, GgufValue, rope_from_gguf};
/// // magic, version 3, 0 tensors, 1 key: "general.architecture" = "qwen2".
/// let mut b = b"GGUF".to_vec();
/// b.extend(3u32.to_le_bytes());
/// b.extend(0u64.to_le_bytes());
/// b.extend(1u64.to_le_bytes());
/// let (key, val) = ("general.architecture", "qwen2");
/// b.extend((key.len() as u64).to_le_bytes());
/// b.extend(key.as_bytes());
/// b.extend(8u32.to_le_bytes()); // string
/// b.extend((val.len() as u64).to_le_bytes());
/// b.extend(val.as_bytes());
/// let header = GgufHeader::parse(&b).unwrap();
/// assert_eq!(header.version(), 3);
/// assert_eq!(header.get("general.architecture"), Some(GgufValue::Str("qwen2")));
/// // Too little metadata for a rope: the missing key is named.
/// let err = rope_from_gguf(|k| header.get(k), None).unwrap_err();
/// assert_eq!(err.key, "embedding_length");
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct GgufHeader<'a> {
    version: u32,
    tensor_count: u64,
    kv: Vec<(&'a str, GgufValue<'a>)>,
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

fn malformed() -> GgufError {
    GgufError {
        key: "gguf",
        kind: GgufErrorKind::OutOfRange,
        rope: None,
    }
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], GgufError> {
        let end = self.pos.checked_add(n).ok_or_else(malformed)?;
        let s = self.bytes.get(self.pos..end).ok_or_else(malformed)?;
        self.pos = end;
        Ok(s)
    }

    fn u32(&mut self) -> Result<u32, GgufError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes(b.try_into().map_err(|_| malformed())?))
    }

    fn u64(&mut self) -> Result<u64, GgufError> {
        let b = self.take(8)?;
        Ok(u64::from_le_bytes(b.try_into().map_err(|_| malformed())?))
    }

    fn len(&mut self) -> Result<usize, GgufError> {
        usize::try_from(self.u64()?).map_err(|_| malformed())
    }

    fn string(&mut self) -> Result<&'a str, GgufError> {
        let n = self.len()?;
        core::str::from_utf8(self.take(n)?).map_err(|_| malformed())
    }

    fn value(&mut self, ty: GgufType, depth: usize) -> Result<GgufValue<'a>, GgufError> {
        if let Some(size) = ty.fixed_size() {
            return scalar_from_le(ty, self.take(size)?).ok_or_else(malformed);
        }
        match ty {
            GgufType::Str => Ok(GgufValue::Str(self.string()?)),
            _ => {
                if depth >= MAX_DEPTH {
                    return Err(malformed());
                }
                let elem = GgufType::from_code(self.u32()?).ok_or_else(malformed)?;
                let len = self.len()?;
                let start = self.pos;
                match elem.fixed_size() {
                    Some(size) => {
                        let bytes = self.take(len.checked_mul(size).ok_or_else(malformed)?)?;
                        let a = GgufArray::from_le_bytes(elem, len, bytes).ok_or_else(malformed)?;
                        Ok(GgufValue::Array(a))
                    }
                    None => {
                        // Strings or arrays: walk them (each at least 8 bytes, so a bogus
                        // count runs out of input long before it runs out of time).
                        for _ in 0..len {
                            self.value(elem, depth + 1)?;
                        }
                        let bytes = &self.bytes[start..self.pos];
                        Ok(GgufValue::Array(GgufArray::opaque(elem, len, bytes)))
                    }
                }
            }
        }
    }
}

impl<'a> GgufHeader<'a> {
    /// Parses the header and metadata at the start of `bytes` (see the type docs).
    ///
    /// ```
    /// assert!(posenc::load::GgufHeader::parse(b"GGUF").is_err()); // truncated
    /// assert!(posenc::load::GgufHeader::parse(b"GGML\x03\0\0\0").is_err()); // wrong magic
    /// ```
    pub fn parse(bytes: &'a [u8]) -> Result<GgufHeader<'a>, GgufError> {
        let mut r = Reader { bytes, pos: 0 };
        if r.take(4)? != b"GGUF" {
            return Err(GgufError {
                key: "gguf.magic",
                kind: GgufErrorKind::Unknown,
                rope: None,
            });
        }
        let version = r.u32()?;
        if !(version == 2 || version == 3) {
            return Err(GgufError {
                key: "gguf.version",
                kind: GgufErrorKind::Unsupported,
                rope: None,
            });
        }
        let tensor_count = r.u64()?;
        let kv_count = r.u64()?;
        let mut kv = Vec::new();
        for _ in 0..kv_count {
            let key = r.string()?;
            let ty = GgufType::from_code(r.u32()?).ok_or_else(malformed)?;
            let value = r.value(ty, 0)?;
            kv.push((key, value));
        }
        Ok(GgufHeader {
            version,
            tensor_count,
            kv,
        })
    }

    /// The GGUF version (2 or 3).
    ///
    /// ```
    /// # let mut b = b"GGUF".to_vec(); b.extend(2u32.to_le_bytes()); b.extend([0u8; 16]);
    /// assert_eq!(posenc::load::GgufHeader::parse(&b).unwrap().version(), 2);
    /// ```
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The number of tensors the file declares.
    ///
    /// ```
    /// # let mut b = b"GGUF".to_vec(); b.extend(3u32.to_le_bytes()); b.extend(5u64.to_le_bytes()); b.extend(0u64.to_le_bytes());
    /// assert_eq!(posenc::load::GgufHeader::parse(&b).unwrap().tensor_count(), 5);
    /// ```
    pub fn tensor_count(&self) -> u64 {
        self.tensor_count
    }

    /// The value of `key` (the first one, if a file repeats a key), for
    /// [`rope_from_gguf`](super::rope_from_gguf)'s lookup: `|k| header.get(k)`.
    ///
    /// ```
    /// # let mut b = b"GGUF".to_vec(); b.extend(3u32.to_le_bytes()); b.extend([0u8; 16]);
    /// assert_eq!(posenc::load::GgufHeader::parse(&b).unwrap().get("general.architecture"), None);
    /// ```
    pub fn get(&self, key: &str) -> Option<GgufValue<'a>> {
        self.kv.iter().find(|(k, _)| *k == key).map(|&(_, v)| v)
    }

    /// Every key/value pair, in file order.
    ///
    /// ```
    /// # let mut b = b"GGUF".to_vec(); b.extend(3u32.to_le_bytes()); b.extend([0u8; 16]);
    /// assert_eq!(posenc::load::GgufHeader::parse(&b).unwrap().iter().count(), 0);
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = (&'a str, GgufValue<'a>)> + '_ {
        self.kv.iter().copied()
    }
}
