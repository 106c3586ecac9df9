//! One split of a paste into lines, shared by every reader: `parse_text`
//! splits the paste once ([`share`]), and each reader's walk over it
//! ([`lines_of`]) reads the stored line bounds instead of searching the
//! text for line ends again. A 16 MiB paste is then split once, not once
//! per reader and recogniser.
//!
//! Only the text being parsed is shared, for as long as `parse_text` holds
//! the guard: any other text (a block of a paste, a test's literal) is
//! split as `str::lines` splits it, so the bounds can never belong to a
//! text they were not made from.

use std::cell::RefCell;
use std::rc::Rc;

/// Where each line starts and ends (byte offsets).
type Bounds = Rc<[(usize, usize)]>;

thread_local! {
    /// The shared text's address and length, and its lines' bounds.
    static SHARED: RefCell<Option<(usize, usize, Bounds)>> = const { RefCell::new(None) };
    /// Counts the texts shared so far: what is derived from one shared
    /// text is valid while the count stays.
    static GENERATION: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// The number of the text now shared, when `text` is it.
pub(super) fn shared_generation(text: &str) -> Option<u64> {
    let shared = SHARED.with(|s| {
        s.borrow()
            .as_ref()
            .is_some_and(|(p, n, _)| *p == text.as_ptr() as usize && *n == text.len())
    });
    shared.then(|| GENERATION.with(std::cell::Cell::get))
}

/// While it lives, [`lines_of`] of `text` reads the bounds split here.
pub(super) struct Shared(());

impl Drop for Shared {
    fn drop(&mut self) {
        SHARED.with(|s| *s.borrow_mut() = None);
    }
}

/// Splits `text` once (exactly as `str::lines` does) for the readers that
/// walk it while the guard lives.
pub(super) fn share(text: &str) -> Shared {
    let base = text.as_ptr() as usize;
    let bounds: Bounds = text
        .lines()
        .map(|l| {
            let start = l.as_ptr() as usize - base;
            (start, start + l.len())
        })
        .collect();
    SHARED.with(|s| *s.borrow_mut() = Some((base, text.len(), bounds)));
    GENERATION.with(|g| g.set(g.get() + 1));
    Shared(())
}

/// The lines of `text`, as `str::lines` gives them.
pub(crate) fn lines_of(text: &str) -> Lines<'_> {
    let shared = SHARED.with(|s| {
        s.borrow()
            .as_ref()
            .filter(|(p, n, _)| *p == text.as_ptr() as usize && *n == text.len())
            .map(|(_, _, b)| Rc::clone(b))
    });
    match shared {
        Some(bounds) => Lines::Shared {
            text,
            end: bounds.len(),
            bounds,
            next: 0,
        },
        None => Lines::Own(text.lines()),
    }
}

pub(crate) enum Lines<'a> {
    Shared {
        text: &'a str,
        bounds: Bounds,
        next: usize,
        end: usize,
    },
    Own(std::str::Lines<'a>),
}

impl<'a> Iterator for Lines<'a> {
    type Item = &'a str;
    fn next(&mut self) -> Option<&'a str> {
        match self {
            Lines::Shared {
                text,
                bounds,
                next,
                end,
            } => {
                if *next >= *end {
                    return None;
                }
                let (a, b) = bounds[*next];
                *next += 1;
                Some(&text[a..b])
            }
            Lines::Own(l) => l.next(),
        }
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            Lines::Shared { next, end, .. } => (end - next, Some(end - next)),
            Lines::Own(l) => l.size_hint(),
        }
    }
}

impl<'a> DoubleEndedIterator for Lines<'a> {
    fn next_back(&mut self) -> Option<&'a str> {
        match self {
            Lines::Shared {
                text,
                bounds,
                next,
                end,
            } => {
                if *next >= *end {
                    return None;
                }
                *end -= 1;
                let (a, b) = bounds[*end];
                Some(&text[a..b])
            }
            Lines::Own(l) => l.next_back(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shared lines are `str::lines`' own, on every kind of line end,
    /// from both ends; another text (even a block of the shared one) is
    /// split on its own.
    #[test]
    fn shared_lines_are_str_lines() {
        for t in [
            "",
            "\n",
            "a",
            "a\n",
            "a\r\nb\r\n\r\nc",
            "\n\nx\n\r\ny\r",
            "ünï\ncödé\n",
        ] {
            let want: Vec<&str> = t.lines().collect();
            let back: Vec<&str> = t.lines().rev().collect();
            let g = share(t);
            assert!(matches!(lines_of(t), Lines::Shared { .. }) || t.is_empty());
            assert_eq!(lines_of(t).collect::<Vec<_>>(), want, "{t:?}");
            assert_eq!(lines_of(t).rev().collect::<Vec<_>>(), back, "{t:?}");
            if let Some((i, _)) = t.char_indices().nth(1) {
                let part = &t[i..];
                assert_eq!(
                    lines_of(part).collect::<Vec<_>>(),
                    part.lines().collect::<Vec<_>>()
                );
                assert!(matches!(lines_of(part), Lines::Own(_)));
            }
            drop(g);
            assert!(matches!(lines_of(t), Lines::Own(_)), "the guard ends it");
        }
    }
}
