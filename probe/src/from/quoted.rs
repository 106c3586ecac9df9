//! Tool output pasted as a markdown block quote: every line of it starts
//! with `> ` (filecoin-project/rust-gpu-tools#45 quotes a whole `clinfo`
//! that way; mail and forum replies quote the same). The markers would hide
//! every key from the parsers, so a text whose every non-blank line is
//! quoted is read without them (nested quotes too). Lines are only
//! shortened, never dropped, so evidence line numbers stay those of the file.

use std::borrow::Cow;

/// `text` without its block-quote markers, or as it is when not every
/// non-blank line is quoted (a REPL's `>>>` prompt or a shell's `> `
/// continuation among output lines is not a quote).
pub fn unquote(text: &str) -> Cow<'_, str> {
    let mut out: Cow<'_, str> = Cow::Borrowed(text);
    // Each pass strips one level; a paste is rarely quoted more than twice.
    for _ in 0..4 {
        let mut non_blank = out.lines().filter(|l| !l.trim().is_empty()).peekable();
        let any = non_blank.peek().is_some();
        if !any || !non_blank.all(|l| l.trim_start().starts_with('>')) {
            break;
        }
        let mut s = String::with_capacity(out.len());
        for l in out.lines() {
            let t = l.trim_start();
            let rest = t.strip_prefix('>').unwrap_or(t);
            s.push_str(rest.strip_prefix(' ').unwrap_or(rest));
            s.push('\n');
        }
        out = Cow::Owned(s);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quoted_paste_loses_its_markers_and_keeps_its_lines() {
        let t = "> Number of platforms                               1\n>   Platform Name                                   AMD Accelerated Parallel Processing\n> \n>   Device Name                                     gfx1030\n";
        let u = unquote(t);
        assert_eq!(u.lines().count(), t.lines().count());
        assert!(u.starts_with("Number of platforms"));
        assert!(u.contains("\n  Device Name                                     gfx1030\n"));
        assert_eq!(
            unquote("> > ROCk module is loaded\n> > HSA Agents\n"),
            "ROCk module is loaded\nHSA Agents\n"
        );
    }

    #[test]
    fn prompts_and_partly_quoted_text_are_left_alone() {
        for t in [
            ">>> import torch\nTrue\n",
            "$ echo 'a\n> b'\na\nb\n",
            "",
            "\n\n",
        ] {
            assert!(matches!(unquote(t), Cow::Borrowed(_)), "{t:?}");
        }
    }

    /// The whole reader sees through the quote (rust-gpu-tools#45: an RX
    /// 6800 XT in a quoted clinfo).
    #[test]
    fn a_quoted_clinfo_lists_its_gpu() {
        let t = ">   Platform Name                                   AMD Accelerated Parallel Processing\n> Number of devices                                 1\n>   Device Name                                     gfx1030\n>   Device Type                                     GPU\n";
        let (formats, f) = super::super::parse_text(t, "clinfo.txt");
        assert!(formats.iter().any(|f| f.name() == "clinfo"));
        assert_eq!(f.gpus.len(), 1);
        assert_eq!(f.gpus[0].gfx.as_deref(), Some("gfx1030"));
    }
}
