//! Byte comparison for the policy runtime: the `memcmp` it links instead of wasi-libc's.
//!
//! Every `==` and `Ord` between strings in the runtime ends in `memcmp`: the readers look
//! keys up in `serde_json`'s ordered maps, and CEL compares strings. wasm has no
//! instruction for it, and wasi-libc's (musl's) compares one byte per loop iteration; a
//! profile of a GPU Pod's evaluation put it at 3-6 % of the component's time
//! (docs/benchmarks.md, sections 22 and 23). [`compare`] compares eight bytes at a time
//! while they are equal, then finds the first byte that differs, and answers what
//! `memcmp` answers: the sign of the difference of the first unequal pair of bytes, as
//! unsigned, or 0.
//!
//! The runtime component exports it under the C name (guest/runtime/src/lib.rs), which
//! takes the place of wasi-libc's: a build of the runtime with its name section has one
//! `memcmp`, this one (`scripts/guest-symbols.py`). Native code keeps its C library's,
//! which is vectorised.

// Reading through raw pointers is what a C function's contract asks; every block says why
// it holds.
#![allow(unsafe_code)]

/// Compares `n` bytes at `a` and `b` as `memcmp` does: negative, zero or positive as the
/// first unequal byte of `a` (unsigned) is less than, equal to or greater than `b`'s.
///
/// # Safety
///
/// `a` and `b` must each be valid for reads of `n` bytes (any alignment).
pub unsafe fn compare(a: *const u8, b: *const u8, n: usize) -> i32 {
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: `i + 8 <= n` bytes are readable at both; `read_unaligned` takes any
        // alignment.
        let (x, y) = unsafe {
            (
                a.add(i).cast::<u64>().read_unaligned(),
                b.add(i).cast::<u64>().read_unaligned(),
            )
        };
        if x != y {
            // Read little-endian, the lowest set bit of the difference lies in the first
            // byte that differs.
            let at = i + ((u64::from_le(x) ^ u64::from_le(y)).trailing_zeros() / 8) as usize;
            // SAFETY: `at < i + 8 <= n`.
            return unsafe { i32::from(*a.add(at)) - i32::from(*b.add(at)) };
        }
        i += 8;
    }
    while i < n {
        // SAFETY: `i < n`.
        let (x, y) = unsafe { (*a.add(i), *b.add(i)) };
        if x != y {
            return i32::from(x) - i32::from(y);
        }
        i += 1;
    }
    0
}

#[cfg(test)]
mod tests {
    use super::compare;
    use std::cmp::Ordering;

    fn sign(n: i32) -> Ordering {
        n.cmp(&0)
    }

    fn check(a: &[u8], b: &[u8]) {
        assert_eq!(a.len(), b.len());
        let got = unsafe { compare(a.as_ptr(), b.as_ptr(), a.len()) };
        assert_eq!(sign(got), a.cmp(b), "{a:?} vs {b:?}");
        // memcmp's value is the difference of the first unequal bytes, as unsigned.
        let want = a
            .iter()
            .zip(b)
            .find(|(x, y)| x != y)
            .map_or(0, |(x, y)| i32::from(*x) - i32::from(*y));
        assert_eq!(got, want, "{a:?} vs {b:?}");
    }

    #[test]
    fn answers_as_memcmp_for_every_length_and_every_position_of_a_difference() {
        // Lengths around the 8-byte step, a difference at every position, both signs,
        // bytes above 0x7f (unsigned), and at odd offsets (unaligned words).
        for len in 0..40 {
            let base: Vec<u8> = (0..len + 3).map(|i| (i * 37 + 11) as u8).collect();
            for offset in 0..3 {
                let a = &base[offset..offset + len];
                check(a, a);
                for at in 0..len {
                    for (x, y) in [(0x00, 0xff), (0xff, 0x00), (0x41, 0x42), (0x80, 0x7f)] {
                        let mut left = a.to_vec();
                        let mut right = a.to_vec();
                        left[at] = x;
                        right[at] = y;
                        check(&left, &right);
                        // A second difference later must not change the answer.
                        if at + 1 < len {
                            right[len - 1] = right[len - 1].wrapping_add(1);
                            if len - 1 != at {
                                check(&left, &right);
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn compares_strings_as_rust_orders_them() {
        let words = [
            "",
            "a",
            "apiVersion",
            "apiVersions",
            "metadata",
            "nvidia.com/gpu",
            "nvidia.com/mig-1g.5gb",
            "Standard_NC24ads_A100_v4",
            "Standard_NC24ads_A100_v5",
            "Standard_ND96isr_H100_v5",
            "é",
        ];
        for a in words {
            for b in words {
                let n = a.len().min(b.len());
                let head = unsafe { compare(a.as_ptr(), b.as_ptr(), n) };
                let ordered = sign(head).then(a.len().cmp(&b.len()));
                assert_eq!(ordered, a.cmp(b), "{a} vs {b}");
            }
        }
    }
}
