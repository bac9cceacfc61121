//! Conversions between character and byte positions in the source text.

use crate::Span;

/// Number of characters between two checkpoints of [`ByteOffsets`].
const STRIDE: usize = 64;

/// Converts character indices (as counted by the YAML scanner) to byte offsets.
///
/// ASCII text needs no table. Otherwise the byte offset of every [`STRIDE`]-th character is
/// kept, so a lookup walks at most [`STRIDE`] characters whatever the order of the lookups:
/// memory is an eighth of the text and the total work stays linear.
pub(crate) struct ByteOffsets<'t> {
    text: &'t str,
    checkpoints: Option<Vec<usize>>,
}

impl<'t> ByteOffsets<'t> {
    pub(crate) fn new(text: &'t str) -> Self {
        let checkpoints = (!text.is_ascii()).then(|| {
            text.char_indices()
                .step_by(STRIDE)
                .map(|(byte, _)| byte)
                .collect()
        });
        Self { text, checkpoints }
    }

    /// Byte offset of the character at `char_index`; the text's length past its end.
    pub(crate) fn byte_offset(&self, char_index: usize) -> usize {
        let len = self.text.len();
        let Some(checkpoints) = &self.checkpoints else {
            return char_index.min(len);
        };
        let Some(&start) = checkpoints.get(char_index / STRIDE) else {
            return len;
        };
        self.text
            .get(start..)
            .and_then(|rest| rest.char_indices().nth(char_index % STRIDE))
            .map_or(len, |(byte, _)| start + byte)
    }
}

/// Converts a count to the `u32` used in spans, saturating on absurdly large inputs.
pub(crate) fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Line starts of the text, to turn byte offsets into 1-based lines and character columns.
pub(crate) struct LineIndex<'t> {
    text: &'t str,
    starts: Vec<usize>,
    base: usize,
}

impl<'t> LineIndex<'t> {
    pub(crate) fn new(text: &'t str, base: usize) -> Self {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Self { text, starts, base }
    }

    pub(crate) fn span(&self, offset: usize) -> Span {
        let offset = offset.min(self.text.len());
        let line = self.starts.partition_point(|&s| s <= offset).max(1);
        let start = self.starts.get(line - 1).copied().unwrap_or(0);
        let column = self
            .text
            .get(start..offset)
            .map_or(offset - start, |s| s.chars().count());
        Span {
            line: to_u32(line),
            column: to_u32(column + 1),
            offset: self.base + offset,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ByteOffsets;

    #[test]
    fn byte_offsets_follow_multibyte_characters() {
        let text = "aé€😀b".repeat(40);
        let offsets = ByteOffsets::new(&text);
        for (char_index, (byte, _)) in text.char_indices().enumerate() {
            assert_eq!(offsets.byte_offset(char_index), byte);
        }
        let count = text.chars().count();
        assert_eq!(offsets.byte_offset(count), text.len());
        assert_eq!(offsets.byte_offset(count + 1000), text.len());
    }

    #[test]
    fn byte_offsets_of_ascii_are_indices() {
        let offsets = ByteOffsets::new("abc");
        assert_eq!(offsets.byte_offset(2), 2);
        assert_eq!(offsets.byte_offset(9), 3);
    }
}
