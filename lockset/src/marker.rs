//! PEP 508 markers of the lock set (a lockfile entry's `marker`, the `;
//! marker` of a matrix requirement), read within bounds.
//!
//! uv-pep508 reads a marker by recursion, a few stack frames per
//! parenthesis (15,000 nested ones overflowed the stack and aborted `greta
//! lock show`), and builds it in its decision-diagram algebra, whose nodes
//! are interned for the life of the process and never freed (5,000 terms
//! `'device-gfxN' in extras` allocated more than 4 GB). So the structure
//! (parentheses, `and`, `or`) is read here, exactly as uv-pep508's grammar
//! reads it, with a bound on the nesting and on the number of comparisons;
//! each comparison alone is handed to uv-pep508; and the combinations are
//! made here with `MarkerTree::and`/`or`, each only after its worst-case
//! cost (the product of the two sides' sizes) fits what is left of the
//! marker's and the file's budget.

use std::cell::Cell;
use std::collections::HashSet;
use std::str::FromStr;
use uv_pep508::{MarkerTree, MarkerTreeKind};

/// The longest marker text read (the longest in the shipped lockfiles is
/// under 500 bytes).
pub const MAX_BYTES: usize = 16 * 1024;
/// The deepest nesting of parentheses (the shipped lockfiles nest 3 deep).
pub const MAX_DEPTH: usize = 32;
/// The most comparisons in one marker (the shipped lockfiles have at most
/// 18; a `device-gfxN` clause per GPU target of a family is a few dozen).
pub const MAX_TERMS: usize = 128;
/// The most work one marker may cost the algebra: the sum, over its `and`s
/// and `or`s, of the product of the two sides' sizes (see [`size`]),
/// which bounds the nodes each combination can create. A node costs uv's
/// interner about 1 KiB (measured: 128 markers of 256 fresh extras each,
/// 4.2 million units, grew the process by 4.7 GB), so this is some 9 MB.
/// An `or` of 128 distinct extras (the term bound) costs 8,128; the worst
/// marker of the shipped lockfiles 128.
pub const MAX_WORK: u64 = 1 << 13;
/// The most work the markers of one file may cost together (some 70 MB):
/// the algebra's nodes are never freed, so a file of many markers each just
/// under [`MAX_WORK`] must not add up to gigabytes. The shipped lockfiles
/// use at most 1,002.
pub const FILE_WORK: u64 = 1 << 16;
/// The most work all the markers one process reads may cost together (some
/// 560 MB, eight files at [`FILE_WORK`]): the nodes outlive each file, so a
/// process reading file after file (a long run over hostile lockfiles)
/// stays bounded too. greta reads its shipped lockfiles for some thousands.
pub const PROCESS_WORK: u64 = 1 << 19;

/// What is left of [`PROCESS_WORK`].
static PROCESS_LEFT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(PROCESS_WORK);

/// What is left of [`PROCESS_WORK`] in this process. A reader of file
/// after file (the fuzz harness's persistent loop) can tell when a next
/// file could be refused for what the files before it cost, not for itself.
pub fn process_work_left() -> u64 {
    PROCESS_LEFT.load(std::sync::atomic::Ordering::Relaxed)
}

/// Why a marker was refused, and where in its text (a byte offset).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkerError {
    pub offset: usize,
    pub message: String,
}

impl std::fmt::Display for MarkerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} (at byte {} of the marker)",
            self.message, self.offset
        )
    }
}

impl std::error::Error for MarkerError {}

/// The algebra work the markers of one file may still cost ([`FILE_WORK`]
/// to start with).
#[derive(Debug)]
pub struct Budget(Cell<u64>);

impl Budget {
    pub fn per_file() -> Budget {
        Budget(Cell::new(FILE_WORK))
    }
}

/// Parses `text` as a PEP 508 marker (the same tree as
/// `MarkerTree::from_str`), within the bounds above, drawing on `budget`.
pub fn parse(text: &str, budget: &Budget) -> Result<MarkerTree, MarkerError> {
    let mut p = Parser {
        text,
        pos: 0,
        terms: 0,
        work: 0,
        budget,
    };
    let tree = p.or(0)?;
    p.eat_ws();
    p.within_bytes()?;
    if let Some(c) = p.peek() {
        return Err(MarkerError {
            offset: p.pos,
            // uv-pep508's words for it.
            message: format!("Unexpected character '{c}', expected 'and', 'or' or end of input"),
        });
    }
    Ok(tree)
}

/// Parses a PEP 508 requirement (`name[extras] version ; marker`), its
/// marker through [`parse`]. The marker starts at the first `;` (a URL
/// requirement whose URL holds a `;` is refused; the matrix pins versions).
pub fn requirement(
    text: &str,
    budget: &Budget,
) -> Result<uv_pep508::Requirement, RequirementError> {
    let (head, marker) = match text.split_once(';') {
        Some((head, marker)) => (head, Some(marker)),
        None => (text, None),
    };
    // No marker in `head`, so uv-pep508 reads it without recursion.
    let mut req = uv_pep508::Requirement::from_str(head)
        .map_err(|e| RequirementError::Pep508(e.to_string()))?;
    if let Some(m) = marker {
        let at = head.len() + 1;
        req.marker = parse(m, budget).map_err(|e| {
            RequirementError::Marker(MarkerError {
                offset: at + e.offset,
                message: e.message,
            })
        })?;
    }
    Ok(req)
}

/// Why a requirement was refused: uv-pep508's own message, or its marker's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequirementError {
    Pep508(String),
    Marker(MarkerError),
}

impl std::fmt::Display for RequirementError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RequirementError::Pep508(e) => f.write_str(e),
            RequirementError::Marker(e) => write!(f, "marker: {e}"),
        }
    }
}

impl std::error::Error for RequirementError {}

/// The marker text as an error message quotes it: whole when short, else
/// its start (a refused marker may be 16 KiB of parentheses).
pub fn shown(text: &str) -> String {
    const SHOWN: usize = 80;
    if text.chars().count() <= SHOWN {
        format!("{text:?}")
    } else {
        let head: String = text.chars().take(SHOWN).collect();
        format!("{head:?}... ({} bytes)", text.len())
    }
}

struct Parser<'a> {
    text: &'a str,
    pos: usize,
    terms: usize,
    /// This marker's work so far.
    work: u64,
    budget: &'a Budget,
}

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.text[self.pos..].chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn take_while(&mut self, keep: impl Fn(char) -> bool) -> &str {
        let start = self.pos;
        while let Some(c) = self.peek().filter(|c| keep(*c)) {
            self.pos += c.len_utf8();
        }
        &self.text[start..self.pos]
    }

    fn eat_ws(&mut self) {
        self.take_while(char::is_whitespace);
    }

    /// The text read so far is within [`MAX_BYTES`]. Checked as the parse
    /// goes (after each comparison and at the end) rather than up front, so
    /// that a deep or long marker is refused for what it first breaks.
    fn within_bytes(&self) -> Result<(), MarkerError> {
        if self.pos <= MAX_BYTES {
            return Ok(());
        }
        Err(MarkerError {
            offset: MAX_BYTES,
            message: format!(
                "longer than {MAX_BYTES} bytes ({} in all), the most greta reads",
                self.text.len()
            ),
        })
    }

    /// `marker_or = marker_and ('or' marker_and)*`
    fn or(&mut self, depth: usize) -> Result<MarkerTree, MarkerError> {
        self.op("or", depth)
    }

    /// `marker_and = marker_expr ('and' marker_expr)*`
    fn and(&mut self, depth: usize) -> Result<MarkerTree, MarkerError> {
        self.op("and", depth)
    }

    /// One level of `or` or `and`, folded from the left. As in uv-pep508,
    /// the operator is the whole next run of non-whitespace characters.
    fn op(&mut self, word: &str, depth: usize) -> Result<MarkerTree, MarkerError> {
        let inner = |p: &mut Self| {
            if word == "or" {
                p.and(depth)
            } else {
                p.expr(depth)
            }
        };
        let mut tree = inner(self)?;
        loop {
            self.eat_ws();
            let at = self.pos;
            let next = self.text[at..]
                .split(char::is_whitespace)
                .next()
                .unwrap_or("");
            if next != word {
                return Ok(tree);
            }
            self.pos += word.len();
            let rhs = inner(self)?;
            tree = self.combine(tree, rhs, word == "and", at)?;
        }
    }

    /// `marker_expr = '(' marker_or ')' | comparison`
    fn expr(&mut self, depth: usize) -> Result<MarkerTree, MarkerError> {
        self.eat_ws();
        if self.peek() != Some('(') {
            return self.comparison();
        }
        let open = self.pos;
        if depth >= MAX_DEPTH {
            return Err(MarkerError {
                offset: open,
                message: format!("parentheses nested deeper than {MAX_DEPTH}"),
            });
        }
        self.pos += 1;
        let tree = self.or(depth + 1)?;
        match self.bump() {
            Some(')') => Ok(tree),
            found => Err(MarkerError {
                offset: open,
                message: match found {
                    Some(c) => format!("this '(' is not closed: found {c:?} where ')' belongs"),
                    None => "this '(' is not closed".to_string(),
                },
            }),
        }
    }

    /// `marker_var marker_op marker_var`: its extent found as uv-pep508
    /// consumes it, then the text handed to uv-pep508 alone.
    fn comparison(&mut self) -> Result<MarkerTree, MarkerError> {
        self.eat_ws();
        let start = self.pos;
        self.terms += 1;
        if self.terms > MAX_TERMS {
            return Err(MarkerError {
                offset: start,
                message: format!("more than {MAX_TERMS} comparisons"),
            });
        }
        self.value();
        self.eat_ws();
        self.operator();
        self.eat_ws();
        self.value();
        self.within_bytes()?;
        let text = &self.text[start..self.pos];
        let tree = MarkerTree::from_str(text).map_err(|e| MarkerError {
            offset: start + e.start.min(text.len()),
            message: e.message.to_string(),
        })?;
        // A comparison uv-pep508 ignores (two quoted strings, `extra >
        // 'x'`, `~=` on strings) parses alone as "always true", and inside a
        // whole marker as nothing at all: neither is a lockfile's meaning.
        if tree.is_true() {
            return Err(MarkerError {
                offset: start,
                message: format!(
                    "`{}` is no comparison uv evaluates (it would ignore it)",
                    text.trim_end()
                ),
            });
        }
        Ok(tree)
    }

    /// A quoted string or a marker name (uv-pep508's `parse_marker_value`).
    fn value(&mut self) {
        match self.peek() {
            Some(q @ ('"' | '\'')) => {
                self.pos += 1;
                self.take_while(|c| c != q);
                self.bump();
            }
            Some(_) => {
                self.take_while(|c| !c.is_whitespace() && !"><=!~)".contains(c));
            }
            None => {}
        }
    }

    /// `in`, `not in` or a comparison operator (uv-pep508's
    /// `parse_marker_operator`): consumed as far as uv-pep508 consumes it.
    fn operator(&mut self) {
        if self.peek().is_some_and(char::is_alphabetic) {
            let word = self.take_while(|c| !c.is_whitespace() && c != '\'' && c != '"');
            if word == "not" {
                if !self.bump().is_some_and(char::is_whitespace) {
                    return;
                }
                self.eat_ws();
                for want in ['i', 'n'] {
                    if self.bump() != Some(want) {
                        return;
                    }
                }
            }
        } else {
            self.take_while(|c| "<=>~!".contains(c));
        }
    }

    /// `a and b` / `a or b`, after charging its worst case to the budgets.
    fn combine(
        &mut self,
        a: MarkerTree,
        b: MarkerTree,
        and: bool,
        at: usize,
    ) -> Result<MarkerTree, MarkerError> {
        use std::sync::atomic::Ordering::Relaxed;
        let file_left = self.budget.0.get();
        let process_left = PROCESS_LEFT.load(Relaxed);
        let left = (MAX_WORK - self.work).min(file_left).min(process_left);
        let sb = size(b, left);
        let sa = size(a, left / sb);
        let cost = sa.saturating_mul(sb);
        if cost > left {
            let whose = if process_left < file_left.min(MAX_WORK - self.work) {
                format!("the markers this process has read together exceed {PROCESS_WORK}")
            } else if file_left < MAX_WORK - self.work {
                format!("the markers of this file together exceed {FILE_WORK}")
            } else {
                format!("its terms combine beyond {MAX_WORK}")
            };
            return Err(MarkerError {
                offset: at,
                message: format!(
                    "too large an expression: {whose} units of work in the marker algebra"
                ),
            });
        }
        self.work += cost;
        self.budget.0.set(file_left - cost);
        let _ = PROCESS_LEFT.fetch_update(Relaxed, Relaxed, |l| Some(l.saturating_sub(cost)));
        Ok(if and { a.and(b) } else { a.or(b) })
    }
}

/// The size of `tree`'s decision diagram (at least 1), counted no further
/// than just past `cap`: each node counts 1, or one less than its edges
/// where it has more than two (a version split into ranges), which is what
/// combining it with another node can allocate.
fn size(tree: MarkerTree, cap: u64) -> u64 {
    let mut seen = HashSet::new();
    let mut stack = vec![tree];
    let mut n = 0u64;
    while let Some(t) = stack.pop() {
        if n > cap {
            break;
        }
        if !seen.insert(t) {
            continue;
        }
        let before = stack.len();
        match t.kind() {
            MarkerTreeKind::True | MarkerTreeKind::False => {}
            MarkerTreeKind::Version(v) => stack.extend(v.edges().map(|(_, c)| c)),
            MarkerTreeKind::String(s) => stack.extend(s.children().map(|(_, c)| c)),
            MarkerTreeKind::In(s) => stack.extend(s.children().map(|(_, c)| c)),
            MarkerTreeKind::Contains(s) => stack.extend(s.children().map(|(_, c)| c)),
            MarkerTreeKind::List(s) => stack.extend(s.children().map(|(_, c)| c)),
            MarkerTreeKind::Extra(s) => stack.extend(s.children().map(|(_, c)| c)),
        }
        let edges = (stack.len() - before) as u64;
        if edges > 0 {
            n += edges.saturating_sub(1).max(1);
        }
    }
    n.max(1)
}

#[cfg(test)]
mod tests;
