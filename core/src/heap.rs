//! The policy runtime's allocator: size classes with free lists, over wasi-libc's `malloc`.
//!
//! An evaluation makes thousands of small allocations (JSON values, CEL values, strings)
//! and frees nearly all of them before it returns; a host that follows computeguard's
//! isolation promise then throws the instance away. wasi-libc's dlmalloc, the default,
//! spent a sixth of a GPU Pod evaluation in `malloc` and `free` (bins, coalescing,
//! boundary tags). Here a small block (up to 4 KiB, alignment up to 8)
//! comes from the free list of its size class, or is carved from a 64 KiB chunk taken
//! from `malloc`; freeing it pushes it back on its list, so the next allocation of that
//! class reuses the most recently freed block (a hot cache line, an already dirty page).
//! Classes are 8 bytes apart up to 64, then four per doubling, so above 64 bytes a block
//! wastes at most a fifth of itself. Larger or more aligned blocks go straight to `malloc`.
//!
//! Small blocks never return to `malloc`: an embedder that reuses one instance for many
//! evaluations keeps, per class, the most it ever had live at once. Measurements:
//! docs/benchmarks.md, section 11.
//!
//! The state is not synchronised: install it only in a single-threaded program, as the
//! runtime component does (wasm32-wasip2 has no threads):
//!
//! ```ignore
//! #[cfg(all(target_family = "wasm", not(target_feature = "atomics")))]
//! #[global_allocator]
//! // SAFETY: the component is single-threaded.
//! static HEAP: computeguard_policy_core::heap::Heap =
//!     unsafe { computeguard_policy_core::heap::Heap::new() };
//! ```

// An allocator cannot be written without `unsafe`; every block says why it holds.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::UnsafeCell;
use std::ptr::{self, NonNull};

/// The largest block served from a size class.
const MAX_SMALL: usize = 4096;
/// Size classes: 8..=64 in steps of 8, then four per doubling up to [`MAX_SMALL`].
const CLASSES: usize = 32;
/// What a class carves its blocks from when its list is empty.
const CHUNK: usize = 64 << 10;
/// The alignment every block of a class has (chunks and class sizes are multiples of it).
const ALIGN: usize = 8;

/// The class of a block of `size` bytes (`1..=MAX_SMALL`).
const fn class_of(size: usize) -> usize {
    if size <= 64 {
        return size.saturating_sub(1) / 8;
    }
    let p = (usize::BITS - 1 - (size - 1).leading_zeros()) as usize; // floor(log2(size - 1)), >= 6
    let quarter = ((size - 1) >> (p - 2)) & 3;
    8 + (p - 6) * 4 + quarter
}

/// The size of class `c`'s blocks.
const fn class_size(c: usize) -> usize {
    if c < 8 {
        return (c + 1) * 8;
    }
    let p = (c - 8) / 4 + 6;
    let quarter = (c - 8) % 4;
    (4 + quarter + 1) << (p - 2)
}

struct State {
    /// Head of each class's free list; a free block's first word points to the next.
    free: [*mut u8; CLASSES],
    /// The unused rest of the current chunk.
    bump: *mut u8,
    end: *mut u8,
}

/// The size-class allocator this module describes; install it as the global allocator
/// of a single-threaded program only (its state is not synchronised).
pub struct Heap(UnsafeCell<State>);

// SAFETY: a `Heap` exists only where [`Heap::new`]'s caller promised one thread.
unsafe impl Sync for Heap {}

impl Heap {
    /// # Safety
    /// The heap is used from one thread only: its state is not synchronised.
    pub const unsafe fn new() -> Self {
        Heap(UnsafeCell::new(State {
            free: [ptr::null_mut(); CLASSES],
            bump: ptr::null_mut(),
            end: ptr::null_mut(),
        }))
    }

    /// Forgets every free block and the rest of the current chunk, so the next
    /// allocations are carved from new chunks, next to each other.
    ///
    /// The runtime calls it once, at the end of `prepare`, before the pre-initialised
    /// snapshot is taken. Without it, an evaluation reuses the blocks that decoding
    /// the pack freed, which lie scattered over the snapshot's pages: it then
    /// dirties many pages for a few bytes each, and the host copies every dirtied
    /// page back from the image before the next instance. The forgotten blocks
    /// stay in the snapshot, unused. Measurements: docs/benchmarks.md, section 22.
    ///
    /// # Safety
    /// As for every call on the heap: one thread, not re-entered.
    pub unsafe fn start_fresh(&self) {
        // SAFETY: see the function's contract.
        let s = unsafe { &mut *self.0.get() };
        s.free = [ptr::null_mut(); CLASSES];
        s.bump = ptr::null_mut();
        s.end = ptr::null_mut();
    }

    fn small(layout: Layout) -> Option<usize> {
        (layout.size() <= MAX_SMALL && layout.align() <= ALIGN)
            .then(|| class_of(layout.size().max(1)))
    }

    /// A fresh block of class `c`, carved from the current chunk or a new one.
    ///
    /// # Safety
    /// No other reference to the state is live (single thread, not re-entered: `System`
    /// never calls back into this allocator).
    unsafe fn carve(&self, c: usize) -> *mut u8 {
        // SAFETY: see the function's contract.
        let s = unsafe { &mut *self.0.get() };
        let size = class_size(c);
        if (s.end as usize) - (s.bump as usize) < size {
            // SAFETY: CHUNK is a valid, non-zero size and ALIGN a power of two.
            let chunk = unsafe { System.alloc(Layout::from_size_align_unchecked(CHUNK, ALIGN)) };
            if chunk.is_null() {
                return chunk;
            }
            s.bump = chunk;
            // SAFETY: `chunk` is CHUNK bytes long.
            s.end = unsafe { chunk.add(CHUNK) };
        }
        let block = s.bump;
        // SAFETY: at least `size` bytes remain in the chunk.
        s.bump = unsafe { block.add(size) };
        block
    }
}

// SAFETY: every block handed out is at least `layout.size()` bytes, aligned to
// `layout.align()`, and owned by one caller until it is freed with the same layout.
unsafe impl GlobalAlloc for Heap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let Some(c) = Self::small(layout) else {
            // SAFETY: forwarded contract.
            return unsafe { System.alloc(layout) };
        };
        // SAFETY: single thread, not re-entered (see `carve`).
        let s = unsafe { &mut *self.0.get() };
        let head = s.free[c];
        if let Some(block) = NonNull::new(head) {
            // SAFETY: a free block's first word holds the next free block of its class.
            s.free[c] = unsafe { block.cast::<*mut u8>().read() };
            return head;
        }
        // SAFETY: as above.
        unsafe { self.carve(c) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let Some(c) = Self::small(layout) else {
            // SAFETY: forwarded contract: `ptr` came from `System` with this layout.
            return unsafe { System.dealloc(ptr, layout) };
        };
        // SAFETY: single thread; `ptr` is a block of class `c` (at least 8 bytes,
        // 8-aligned) that the caller no longer uses.
        unsafe {
            let s = &mut *self.0.get();
            ptr.cast::<*mut u8>().write(s.free[c]);
            s.free[c] = ptr;
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `layout.align()` is a power of two and `new_size` does not overflow
        // when rounded to it (GlobalAlloc::realloc's contract).
        let new = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        match (Self::small(layout), Self::small(new)) {
            // The block already has room: a `String` or `Vec` growing within its class.
            (Some(a), Some(b)) if a == b => ptr,
            // SAFETY: forwarded contract.
            (None, None) => unsafe { System.realloc(ptr, layout, new_size) },
            _ => {
                // SAFETY: forwarded contract; the old block is read only up to the
                // smaller of the two sizes and freed with its own layout.
                unsafe {
                    let moved = self.alloc(new);
                    if !moved.is_null() {
                        ptr::copy_nonoverlapping(ptr, moved, layout.size().min(new_size));
                        self.dealloc(ptr, layout);
                    }
                    moved
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_size_gets_the_smallest_class_that_holds_it() {
        let mut previous = 0;
        for c in 0..CLASSES {
            let size = class_size(c);
            assert!(
                size > previous && size.is_multiple_of(ALIGN),
                "class {c}: {size}"
            );
            assert_eq!(class_of(size), c, "size {size}");
            assert_eq!(class_of(previous + 1), c, "size {}", previous + 1);
            // At most a fifth wasted above 64 bytes.
            assert!(c < 8 || (size - previous - 1) * 5 <= size, "class {c}");
            previous = size;
        }
        assert_eq!(previous, MAX_SMALL);
    }

    #[test]
    fn after_start_fresh_blocks_are_carved_next_to_each_other_not_reused() {
        // SAFETY: this test is the heap's only thread.
        let heap = unsafe { Heap::new() };
        let layout = Layout::from_size_align(48, 8).expect("a valid layout");
        unsafe {
            let freed = heap.alloc(layout);
            let kept = heap.alloc(layout);
            heap.dealloc(freed, layout);
            heap.start_fresh();
            let (a, b) = (heap.alloc(layout), heap.alloc(layout));
            assert!(!a.is_null() && !b.is_null());
            assert!(
                a != freed && b != freed && a != kept && b != kept,
                "a block freed before start_fresh is never handed out again"
            );
            assert_eq!(
                b as usize,
                a as usize + 48,
                "the next blocks come from one new chunk, side by side"
            );
            // The block that was live before keeps working and can be freed.
            ptr::write_bytes(kept, 7, 48);
            heap.dealloc(kept, layout);
        }
    }

    #[test]
    fn blocks_are_distinct_aligned_reused_and_keep_their_bytes() {
        // SAFETY: this test is the heap's only thread.
        let heap = unsafe { Heap::new() };
        unsafe {
            let mut blocks = Vec::new();
            for size in [1, 7, 8, 9, 64, 65, 100, 1000, 4096, 4097, 70_000] {
                let layout = Layout::from_size_align(size, 8).expect("a valid layout");
                let p = heap.alloc(layout);
                assert!(!p.is_null() && (p as usize).is_multiple_of(8));
                ptr::write_bytes(p, size as u8, size);
                blocks.push((p, layout));
            }
            for &(p, layout) in &blocks {
                let bytes = std::slice::from_raw_parts(p, layout.size());
                assert!(bytes.iter().all(|&b| b == layout.size() as u8));
            }
            let (p, layout) = blocks[6];
            heap.dealloc(p, layout);
            assert_eq!(
                heap.alloc(layout),
                p,
                "the last freed block of a class is reused"
            );
            ptr::write_bytes(p, 100, 100);
            // Growing within a class keeps the block; across classes moves the bytes.
            let grown = heap.realloc(p, layout, 110);
            assert_eq!(grown, p);
            let moved = heap.realloc(
                grown,
                Layout::from_size_align(110, 8).expect("a valid layout"),
                5000,
            );
            assert_ne!(moved, p);
            assert!(
                std::slice::from_raw_parts(moved, 100)
                    .iter()
                    .all(|&b| b == 100)
            );
        }
    }
}
