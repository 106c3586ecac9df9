//! A page is meant to be copied off the machine (`scp`, a ticket, a chat):
//! the user's home directory is not part of what it says. Every path under
//! it is shown as `~/...`, wherever in the page it appears (a result's file,
//! a results directory, a baseline named as a floor's source).

use std::path::Path;

/// `page` with every `HOME/` written as `~/` (and a bare `HOME` at the end
/// of a path as `~`). A home of `/` or a relative one is left alone: there
/// is nothing private to take out, and `/` would rewrite every path.
pub fn without_home(page: &str, home: Option<&Path>) -> String {
    let Some(home) = home.and_then(Path::to_str) else {
        return page.to_string();
    };
    let home = home.trim_end_matches('/');
    if home.is_empty() || !home.starts_with('/') {
        return page.to_string();
    }
    let mut out = String::with_capacity(page.len());
    let mut rest = page;
    while let Some(i) = rest.find(home) {
        let after = &rest[i + home.len()..];
        // Only the whole directory: `/home/al` is not the start of `/home/alice`.
        let whole = after.is_empty()
            || !after.starts_with(|c: char| c.is_alphanumeric() || "._-".contains(c));
        out.push_str(&rest[..i]);
        out.push_str(if whole { "~" } else { home });
        rest = after;
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_under_home_become_tilde_and_others_stay() {
        let home = Some(Path::new("/home/al"));
        let page = "<code>/home/al/.local/share/greta/smoke/x.json</code> /home/alice/y /home/al";
        assert_eq!(
            without_home(page, home),
            "<code>~/.local/share/greta/smoke/x.json</code> /home/alice/y ~"
        );
        assert_eq!(
            without_home(page, Some(Path::new("/home/al/"))),
            without_home(page, home)
        );
        assert_eq!(without_home(page, Some(Path::new("/"))), page);
        assert_eq!(without_home(page, None), page);
        assert_eq!(without_home(page, Some(Path::new("rel"))), page);
    }
}
