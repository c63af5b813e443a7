//! 8-bit quantised vectors and the integer dot-product scan over them.
//!
//! Why integers: a 1,536-dimension record is 6 KiB as `f32` and 1.5 KiB as `i8`, so a scan reads 4× fewer
//! bytes and a game holds 4× more records in the same memory. And integer sums are exact, so the scan
//! gives bit-identical scores whatever the order of the additions — scalar, SSE2, AVX2 or NEON — which
//! keeps rankings deterministic across machines without pinning the summation order as `f32` needs.
//!
//! Records are `i8` with one `f32` scale each (the largest magnitude maps to ±127). The query is kept
//! at higher precision, `i16`: widening `i8` to `i16` is what the multiply-add instructions need anyway
//! (`pmaddwd`), so the finer query costs nothing and the query's rounding error is ~100× smaller than
//! the records'.

use super::topk::Best;

/// Elements per step of the dot product, and the multiple every stored row is padded to (with zeros, which
/// add nothing), so neither kernel has a tail loop. 32 codes are the AVX2 kernel's step (two registers of
/// `i16` after widening); at this width LLVM also vectorises the portable kernel into multiply-adds
/// (`pmaddwd` on SSE2), where 16 or 64 gave slower code in a stand-alone test.
pub const LANES: usize = 32;

/// Largest magnitude of a stored record element: symmetric, so `-128` is never used and negation is exact.
const RECORD_MAX: f32 = 127.0;

/// Largest dimension count quantised. The query's `i16` range is cut so that no partial sum of a dot product
/// can overflow `i32` (see [`query_max`]); beyond this the query would keep fewer than 10 bits.
pub const MAX_DIMS: usize = 16_384;

/// Row length in the flat buffer for `dims` dimensions: rounded up to [`LANES`].
pub fn stride(dims: usize) -> usize {
    dims.div_ceil(LANES) * LANES
}

/// Largest magnitude of a query element for rows of `stride` elements: every product is at most
/// `query_max × 127`, so with this bound `stride` of them — any partial sum, in any order — stays within
/// `i32`. At 1,536 dims that is 11,008 (13.4 bits); up to 516 dims the full `i16` range.
pub fn query_max(stride: usize) -> i32 {
    let bound = i32::MAX / (RECORD_MAX as i32 * stride.max(1) as i32);
    bound.min(i32::from(i16::MAX))
}

/// Writes `v` quantised to `out` (same length or longer; the rest is zeroed) and returns the scale that
/// maps a code back to a value (`value ≈ code × scale`). The zero vector gets scale 0. Callers check that
/// `v` is finite.
pub fn quantise_record(v: &[f32], out: &mut [i8]) -> f32 {
    let max = v.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    out.fill(0);
    if max == 0.0 {
        return 0.0;
    }
    let inv = RECORD_MAX / max;
    for (o, x) in out.iter_mut().zip(v) {
        // In range by construction; the clamp only guards rounding at the extremes.
        *o = (x * inv).round().clamp(-RECORD_MAX, RECORD_MAX) as i8;
    }
    max / RECORD_MAX
}

/// The query quantised to `i16` over `stride` elements (zero-padded), and its scale.
pub fn quantise_query(q: &[f32], stride: usize) -> (Vec<i16>, f32) {
    let limit = query_max(stride) as f32;
    let max = q.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    let mut out = vec![0i16; stride];
    if max == 0.0 {
        return (out, 0.0);
    }
    let inv = limit / max;
    for (o, x) in out.iter_mut().zip(q) {
        *o = (x * inv).round().clamp(-limit, limit) as i16;
    }
    (out, max / limit)
}

/// Exact integer dot product of a query row and a record row (both a multiple of [`LANES`] long).
///
/// Written as `LANES` independent `i32` accumulators over fixed-width chunks so LLVM vectorises it with no
/// bounds checks (on the SSE2 baseline: unpack, shift and `pmaddwd`); the sum is exact, so how it
/// vectorises does not change the result. `query_max` guarantees no overflow.
#[inline(always)]
fn dot_i16_i8(q: &[i16], c: &[i8]) -> i32 {
    let mut acc = [0i32; LANES];
    for (x, y) in q.chunks_exact(LANES).zip(c.chunks_exact(LANES)) {
        for i in 0..LANES {
            acc[i] += i32::from(x[i]) * i32::from(y[i]);
        }
    }
    acc.iter().sum()
}

/// The AVX2 kernel, written with intrinsics: the same exact integer sum as [`dot_i16_i8`], in the
/// instruction sequence we want. The auto-vectorised kernel compiled to `vpmaddwd` in a stand-alone test but,
/// inlined into the scan in the library, to `vpmovsxwd` + `vpmulld` on 32-bit lanes with twice the
/// instructions (measured ~3× slower), so the fast path does not rely on the vectoriser's pattern matching.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::{
        __m128i, __m256i, _mm256_add_epi32, _mm256_cvtepi8_epi16, _mm256_loadu_si256,
        _mm256_madd_epi16, _mm256_setzero_si256, _mm_loadu_si128,
    };

    use super::LANES;

    /// `q · c` for rows a multiple of [`LANES`] long: per 32 elements, two sign-extensions of 16 codes to
    /// `i16` and two multiply-adds of adjacent pairs into `i32` lanes.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub fn dot_i16_i8(q: &[i16], c: &[i8]) -> i32 {
        let mut acc0 = _mm256_setzero_si256();
        let mut acc1 = _mm256_setzero_si256();
        for (x, y) in q.chunks_exact(LANES).zip(c.chunks_exact(LANES)) {
            // SAFETY: `x` is 32 `i16` (64 bytes) and `y` 32 `i8` (32 bytes), so the four unaligned loads
            // (32 + 32 bytes of `x`, 16 + 16 of `y`) stay inside them.
            let (xa, xb, ya, yb) = unsafe {
                (
                    _mm256_loadu_si256(x.as_ptr().cast::<__m256i>()),
                    _mm256_loadu_si256(x.as_ptr().add(16).cast::<__m256i>()),
                    _mm_loadu_si128(y.as_ptr().cast::<__m128i>()),
                    _mm_loadu_si128(y.as_ptr().add(16).cast::<__m128i>()),
                )
            };
            acc0 = _mm256_add_epi32(acc0, _mm256_madd_epi16(xa, _mm256_cvtepi8_epi16(ya)));
            acc1 = _mm256_add_epi32(acc1, _mm256_madd_epi16(xb, _mm256_cvtepi8_epi16(yb)));
        }
        // SAFETY: `__m256i` and `[i32; 8]` have the same size, and every bit pattern is a valid `i32`.
        let lanes: [i32; 8] = unsafe { std::mem::transmute(_mm256_add_epi32(acc0, acc1)) };
        lanes.iter().sum()
    }
}

/// The rows to score, and the `k` best so far.
pub struct Scan<'a> {
    pub query: &'a [i16],
    pub codes: &'a [i8],
    pub scales: &'a [f32],
    pub stride: usize,
    pub candidates: &'a [u32],
}

impl Scan<'_> {
    /// Offers every candidate to `best`, its dot product computed by `dot`, ranked by
    /// `dot × record scale` in `f64`: the integer dot and the `f32` scale are both exact in `f64`, so the
    /// one rounding of the product is the only one and the key is the same on every machine. (The query's
    /// scale is common to all and left out.)
    #[inline(always)]
    fn run_with(&self, best: &mut Best<f64>, dot: impl Fn(&[i16], &[i8]) -> i32) {
        for &id in self.candidates {
            let i = id as usize;
            let row = &self.codes[i * self.stride..(i + 1) * self.stride];
            best.offer(
                id,
                f64::from(dot(self.query, row)) * f64::from(self.scales[i]),
            );
        }
    }

    /// The portable scan: [`dot_i16_i8`] as the compiler vectorises it for the baseline target.
    fn run_portable(&self, best: &mut Best<f64>) {
        self.run_with(best, dot_i16_i8)
    }

    /// The scan with the AVX2 kernel, compiled for AVX2 so the kernel inlines.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn run_avx2(&self, best: &mut Best<f64>) {
        self.run_with(best, |q, c| avx2::dot_i16_i8(q, c))
    }

    /// Scores every candidate into `best`. On x86-64 the baseline target has only SSE2, where widening
    /// `i8` takes unpack-and-shift sequences; AVX2 (almost every x86-64 CPU since 2013) is used when the
    /// CPU has it, detected at run time so the binary needs no `target-cpu` flag. Both kernels compute the
    /// same exact integers, so which one runs never changes a score or a ranking.
    pub fn run(&self, best: &mut Best<f64>) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: `run_avx2` only needs the CPU to support AVX2, which was just checked.
            unsafe { self.run_avx2(best) };
            return;
        }
        self.run_portable(best)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_round_trip_within_half_a_step() {
        let v = [0.5f32, -0.25, 0.125, 0.0, -0.5];
        let mut out = [1i8; LANES];
        let scale = quantise_record(&v, &mut out);
        assert_eq!(&out[..5], &[127, -64, 32, 0, -127]);
        assert!(out[5..].iter().all(|&c| c == 0), "padding is zeroed");
        for (x, &c) in v.iter().zip(&out) {
            assert!((f32::from(c) * scale - x).abs() <= scale / 2.0 + f32::EPSILON);
        }
        assert_eq!(quantise_record(&[0.0; 3], &mut out), 0.0);
    }

    #[test]
    fn the_query_range_rules_out_overflow() {
        assert_eq!(query_max(stride(256)), i32::from(i16::MAX));
        assert_eq!(query_max(stride(1_536)), 11_008);
        for dims in [1, 512, 1_536, 3_072, MAX_DIMS] {
            let s = stride(dims);
            // The worst case: every element at its extreme, all products of one sign.
            let worst = i64::from(query_max(s)) * 127 * s as i64;
            assert!(worst <= i64::from(i32::MAX), "{dims} dims");
            let q = vec![query_max(s) as i16; s];
            let c = vec![127i8; s];
            assert_eq!(i64::from(dot_i16_i8(&q, &c)), worst);
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_avx2_kernel_computes_the_same_integers() {
        if !std::arch::is_x86_feature_detected!("avx2") {
            return;
        }
        let s = stride(1_536);
        let m = query_max(s) as i16;
        let q: Vec<i16> = (0..s)
            .map(|i| {
                if i % 3 == 0 {
                    m
                } else {
                    -m / (i as i16 % 7 + 1)
                }
            })
            .collect();
        let c: Vec<i8> = (0..s)
            .map(|i| ((i * 37 % 255) as i16 - 127) as i8)
            .collect();
        let extremes = (vec![m; s], vec![-127i8; s]);
        for (q, c) in [(&q, &c), (&extremes.0, &extremes.1)] {
            // SAFETY: AVX2 was just detected.
            let fast = unsafe { avx2::dot_i16_i8(q, c) };
            assert_eq!(fast, dot_i16_i8(q, c));
        }
    }

    #[test]
    fn the_dispatched_scan_equals_the_portable_one() {
        let dims = 100;
        let s = stride(dims);
        let rows: Vec<Vec<f32>> = (0..40)
            .map(|r| {
                (0..dims)
                    .map(|d| ((r * 31 + d * 7) % 23) as f32 - 11.0)
                    .collect()
            })
            .collect();
        let mut codes = vec![0i8; rows.len() * s];
        let scales: Vec<f32> = rows
            .iter()
            .zip(codes.chunks_exact_mut(s))
            .map(|(v, out)| quantise_record(v, out))
            .collect();
        let (query, _) = quantise_query(&rows[3], s);
        let candidates: Vec<u32> = (0..rows.len() as u32).collect();
        let scan = Scan {
            query: &query,
            codes: &codes,
            scales: &scales,
            stride: s,
            candidates: &candidates,
        };
        let mut a = Best::new(5);
        let mut b = Best::new(5);
        scan.run(&mut a);
        scan.run_portable(&mut b);
        assert_eq!(a.into_sorted(), b.into_sorted());
    }
}
