//! Word vectors: what lets a query find a tool that says the same thing in other words
//! ("hover the mouse", "shelve my changes", "coordinates of an address").
//!
//! `data/vectors.bin` holds 50,000 common English words' GloVe vectors (built by
//! `data/gen_vectors.py`; source and license in `data/NOTICE`), reduced to 32 dimensions of one
//! byte each (2 MB). A word's vector is found by its search term (its stem), the most frequent word
//! of a stem standing for it. A tool's vector and a query's are their terms' vectors added up,
//! each weighted by how rare the term is among the indexed tools, and scaled to length 1; their
//! dot product says how close the two are in meaning.

use std::collections::HashMap;
use std::sync::OnceLock;

use super::text;

const DATA: &[u8] = include_bytes!("data/vectors.bin");

/// The word vectors, loaded on first use.
pub struct Vectors {
    dims: usize,
    scale: f32,
    rows: HashMap<String, u32>,
    matrix: &'static [u8],
}

fn u32_at(at: usize) -> u32 {
    u32::from_le_bytes([DATA[at], DATA[at + 1], DATA[at + 2], DATA[at + 3]])
}

/// The vectors shipped in the binary.
pub fn vectors() -> &'static Vectors {
    static VECTORS: OnceLock<Vectors> = OnceLock::new();
    VECTORS.get_or_init(|| {
        assert_eq!(&DATA[..4], b"TSV1", "vectors.bin: unknown format");
        let (count, dims) = (u32_at(4) as usize, u32_at(8) as usize);
        let scale = f32::from_bits(u32_at(12));
        let names_len = u32_at(16) as usize;
        let names = std::str::from_utf8(&DATA[20..20 + names_len]).unwrap_or_default();
        let matrix = &DATA[20 + names_len..];
        assert_eq!(matrix.len(), count * dims, "vectors.bin: truncated");
        let mut rows = HashMap::with_capacity(count);
        for (row, word) in names.split('\n').enumerate() {
            rows.entry(text::stem(word)).or_insert(row as u32);
        }
        Vectors { dims, scale, rows, matrix }
    })
}

impl Vectors {
    /// How many components a vector has.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// Adds `weight` times the vector of the search term `term` to `into`; false if the term
    /// has none.
    pub fn add(&self, term: &str, weight: f32, into: &mut [f32]) -> bool {
        let Some(&row) = self.rows.get(term) else { return false };
        let start = row as usize * self.dims;
        let w = weight * self.scale;
        for (acc, &b) in into.iter_mut().zip(&self.matrix[start..start + self.dims]) {
            *acc += w * f32::from(b as i8);
        }
        true
    }
}

/// Scales `v` to length 1 (a zero vector stays zero).
pub fn normalise(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        for x in v {
            *x /= norm;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vector(word: &str) -> Vec<f32> {
        let mut v = vec![0.0; vectors().dims()];
        assert!(vectors().add(&text::stem(word), 1.0, &mut v), "{word}");
        normalise(&mut v);
        v
    }

    fn similarity(a: &str, b: &str) -> f32 {
        vector(a).iter().zip(vector(b)).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn words_of_like_meaning_are_closer_than_unrelated_ones() {
        assert!(similarity("delete", "remove") > similarity("delete", "weather"));
        assert!(similarity("schedule", "postpone") > similarity("schedule", "picture"));
        assert!(similarity("coordinates", "latitude") > similarity("coordinates", "holiday"));
        assert!(!vectors().add("zzzzqq", 1.0, &mut [0.0; 32]));
    }
}
