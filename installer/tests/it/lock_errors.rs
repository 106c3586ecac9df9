//! Malformed matrix.toml / pylock.toml: every command stops with
//! `file:line:col: what`, exit 2, no panic, and writes nothing.

use crate::lock_support::*;

/// Break `file` by replacing `from` with `to`, run `args`, and expect an
/// error on the line of `at` (text inside `to`), at a column within it.
fn expect_error_at(file: &str, from: &str, to: &str, at: &str, args: &[&str], message: &str) {
    let (d, text) = edited_lock_dir(file, |t| t.replacen(from, to, 1));
    let before = snapshot(d.path());
    let o = greta_lock(d.path(), args);
    let err = stderr(&o);
    assert_eq!(
        o.status.code(),
        Some(2),
        "stdout: {}\nstderr: {err}",
        stdout(&o)
    );
    assert!(!err.contains("panicked"), "{err}");
    let (line, col) = position_of(&text, at);
    let prefix = format!("{file}:{line}:");
    let i = err
        .find(&prefix)
        .unwrap_or_else(|| panic!("expected {prefix:?} in {err:?}"));
    let got: usize = err[i + prefix.len()..]
        .split(':')
        .next()
        .unwrap()
        .parse()
        .expect("a column");
    assert!(
        (col..=col + at.len()).contains(&got),
        "column {got} outside {col}..={} for {at:?} in {err:?}",
        col + at.len()
    );
    assert!(err.contains(message), "expected {message:?} in {err:?}");
    assert_eq!(
        before,
        snapshot(d.path()),
        "{args:?} wrote into the lock dir"
    );
}

#[test]
fn matrix_syntax_error() {
    expect_error_at(
        "matrix.toml",
        "backend = \"cuda\"",
        "backend = \"cuda",
        "backend = \"cuda",
        &["check"],
        "TOML syntax",
    );
}

#[test]
fn matrix_unknown_key() {
    expect_error_at(
        "matrix.toml",
        "lockfile = \"pylock.cuda.toml\"",
        "lockfile = \"pylock.cuda.toml\"\nbackedn = \"cuda\"",
        "backedn",
        &["list"],
        "unknown key `backedn`",
    );
}

#[test]
fn matrix_bad_gfx_target() {
    expect_error_at(
        "matrix.toml",
        "\"gfx942\", \"gfx950\"",
        "\"gfx942\", \"mi350\"",
        "\"mi350\"",
        &["show", "rocm7.2"],
        "`mi350` is not a gfx target",
    );
}

#[test]
fn matrix_bad_version_range() {
    expect_error_at(
        "matrix.toml",
        "serves = \">=6.4.0, <7.3.0\"",
        "serves = \"from 6.4 on\"",
        "\"from 6.4 on\"",
        &["check"],
        "is not a semver requirement",
    );
}

#[test]
fn matrix_lockfile_with_dots_is_refused() {
    expect_error_at(
        "matrix.toml",
        "lockfile = \"pylock.rocm6-4.toml\"",
        "lockfile = \"pylock.rocm6.4.toml\"",
        "\"pylock.rocm6.4.toml\"",
        &["list"],
        "no dots in <name>",
    );
}

#[test]
fn matrix_bad_requirement() {
    expect_error_at(
        "matrix.toml",
        "\"pytorch-triton-rocm==3.3.1\",",
        "\"pytorch-triton-rocm===\",",
        "\"pytorch-triton-rocm===\"",
        &["check"],
        "is not PEP 508",
    );
}

#[test]
fn matrix_update_with_broken_matrix_writes_nothing() {
    // `update` must fail before running anything (no uv needed to see it).
    expect_error_at(
        "matrix.toml",
        "status = \"locked\"",
        "status = \"lockd\"",
        "\"lockd\"",
        &["update", "cpu", "--uv", "/nonexistent/uv"],
        "must be \"locked\" or \"not-locked\"",
    );
}

#[test]
fn pylock_syntax_error() {
    expect_error_at(
        "pylock.cpu.toml",
        "name = \"sympy\"",
        "name = sympy\"",
        "sympy\"",
        &["show", "cpu", "--python", "3.11"],
        "TOML syntax",
    );
}

#[test]
fn pylock_bad_hash() {
    expect_error_at(
        "pylock.rocm6-3.toml",
        "sha256 = \"b0c10342f64a34998ae8d5084aa1beae7e11defa46a4e05fe9aa6f09ffb0db37\"",
        "sha256 = \"b0c10342f64a34998ae8d5084aa1beae\"",
        "\"b0c10342f64a34998ae8d5084aa1beae\"",
        &["show", "rocm6.3"],
        "must be 64 hex digits",
    );
}

#[test]
fn pylock_bad_marker() {
    expect_error_at(
        "pylock.rocm7-2.toml",
        "marker = \"(python_full_version < '3.12') and python_version == '3.11'\"",
        "marker = \"python_version === '3.11'\"",
        "\"python_version === '3.11'\"",
        &["show", "rocm7.2", "--python", "3.11"],
        "marker",
    );
}

#[test]
fn pylock_wrong_lock_version() {
    expect_error_at(
        "pylock.cuda.toml",
        "lock-version = \"1.0\"",
        "lock-version = \"2.0\"",
        "\"2.0\"",
        &["show", "cuda"],
        "lock-version",
    );
}

#[test]
fn pylock_not_a_wheel_name() {
    expect_error_at(
        "pylock.cpu.toml",
        "typing_extensions-4.16.0-py3-none-any.whl\"",
        "typing_extensions-4.16.0.tar.gz\"",
        "\"https://files.pythonhosted.org/packages/49/d3/b8441a820a491ddfc024b0b0cf0393375b75ea13866d9c66727e54c2fc80/typing_extensions-4.16.0.tar.gz\"",
        &["show", "cpu"],
        "is not a wheel file name",
    );
}

#[test]
fn check_reports_a_broken_lockfile_as_a_failure() {
    // `check` goes on past a broken lockfile and fails (exit 1) naming it.
    let (d, t) = edited_lock_dir("pylock.rocm6-4.toml", |t| {
        t.replacen("[[packages]]", "[[packages]\n", 1)
    });
    let o = greta_lock(d.path(), &["check"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let (line, _) = position_of(&t, "[[packages]\n");
    assert!(
        stdout(&o).contains(&format!("pylock.rocm6-4.toml:{line}:")),
        "{}",
        stdout(&o)
    );
}

/// pep508_rs 0.9.2 panicked ("end byte index 25 is not a char
/// boundary") on a non-ASCII character after a complete marker. uv's parser
/// reports it; greta points at the marker.
#[test]
fn pylock_marker_with_a_non_ascii_character() {
    let (from, to) = (
        "marker = \"(python_full_version < '3.12') and python_version == '3.11'\"",
        "marker = \"python_version == '3.11' α\"",
    );
    expect_error_at(
        "pylock.rocm7-2.toml",
        from,
        to,
        "\"python_version == '3.11' α\"",
        &["show", "rocm7.2", "--python", "3.11"],
        "Unexpected character 'α'",
    );
    // `check` reports a broken lockfile as a failed check (exit 1), at the same place.
    let (d, text) = edited_lock_dir("pylock.rocm7-2.toml", |t| t.replacen(from, to, 1));
    let o = greta_lock(d.path(), &["check"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{}", stderr(&o));
    let (line, _) = position_of(&text, "\"python_version == '3.11' α\"");
    assert!(
        out.contains(&format!("pylock.rocm7-2.toml:{line}:")) && out.contains("'α'"),
        "{out}"
    );
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
}

/// An extra ending in `.` panicked pep508_rs ("`ExtraName`
/// validation should match PEP 508 parsing") in `lock check` and `lock show`.
#[test]
fn matrix_requirement_with_an_extra_ending_in_a_dot() {
    for args in [&["check"][..], &["show", "cuda"][..]] {
        expect_error_at(
            "matrix.toml",
            "\"triton==3.9.0\",\n  \"jax[cuda13]",
            "\"triton[x.]==3.9.0\",\n  \"jax[cuda13]",
            "\"triton[x.]==3.9.0\"",
            args,
            "is not PEP 508",
        );
    }
}

/// Found by the lock_files fuzz target: a python version with an absurd
/// minor made the tag list grow without bound (a hang, then memory). It is
/// refused where it is written.
#[test]
fn matrix_python_version_with_an_absurd_minor() {
    expect_error_at(
        "matrix.toml",
        "python = [\"3.11\", \"3.12\", \"3.13\"]",
        "python = [\"3.11111111\", \"3.12\", \"3.13\"]",
        "\"3.11111111\"",
        &["check"],
        "must look like 3.12",
    );
}

#[test]
fn matrix_plain_http_index_is_refused() {
    expect_error_at(
        "matrix.toml",
        "indexes = [\"https://pypi.org/simple\"]",
        "indexes = [\"http://pypi.org/simple\"]",
        "\"http://pypi.org/simple\"",
        &["list"],
        "profiles.cpu: indexes[0] `http://pypi.org/simple` must be an https URL",
    );
}

#[test]
fn matrix_unknown_backend() {
    expect_error_at(
        "matrix.toml",
        "backend = \"cpu\"",
        "backend = \"vulkan\"",
        "\"vulkan\"",
        &["list"],
        "profiles.cpu: backend `vulkan` must be cpu, cuda or rocm",
    );
}

#[test]
fn matrix_incomplete_names_a_listed_python_with_a_text() {
    let cpu = "python = [\"3.11\", \"3.12\", \"3.13\"]";
    expect_error_at(
        "matrix.toml",
        cpu,
        &format!("{cpu}\nincomplete = {{ \"3.9\" = \"no wheels\" }}"),
        "\"no wheels\"",
        &["list"],
        "profiles.cpu: incomplete.3.9 names a python version not in `python`",
    );
    expect_error_at(
        "matrix.toml",
        cpu,
        &format!("{cpu}\nincomplete = {{ \"3.13\" = 7 }}"),
        "7 }",
        &["list"],
        "profiles.cpu: incomplete.3.13 must be a string",
    );
    expect_error_at(
        "matrix.toml",
        cpu,
        &format!("{cpu}\nincomplete = \"3.13\""),
        "\"3.13\"\n",
        &["list"],
        "profiles.cpu: `incomplete` must map python versions to reasons",
    );
}

#[test]
fn matrix_gfx_override_env_holds_strings() {
    expect_error_at(
        "matrix.toml",
        "env = { HSA_OVERRIDE_GFX_VERSION = \"11.0.0\" }",
        "env = { HSA_OVERRIDE_GFX_VERSION = 11 }",
        "11 }",
        &["list"],
        "[[gfx-override]]: env.HSA_OVERRIDE_GFX_VERSION must be a string",
    );
    expect_error_at(
        "matrix.toml",
        "env = { HSA_OVERRIDE_GFX_VERSION = \"11.0.0\" }",
        "env = \"HSA_OVERRIDE_GFX_VERSION=11.0.0\"",
        "\"HSA_OVERRIDE_GFX_VERSION=11.0.0\"",
        &["list"],
        "[[gfx-override]]: `env` must be a table of strings",
    );
}

/// 15,000 nested parentheses in a lockfile marker overflowed the marker
/// parser's stack and aborted `greta lock show`; now exit 2 at the marker.
#[test]
fn pylock_marker_nested_too_deep() {
    let deep = format!(
        "marker = \"{}sys_platform == 'linux'{}\"",
        "(".repeat(15_000),
        ")".repeat(15_000)
    );
    expect_error_at(
        "pylock.cpu.toml",
        "marker = \"sys_platform == 'linux'\"",
        &deep,
        &deep,
        &["show", "cpu"],
        "parentheses nested deeper than 32",
    );
}

/// A marker of 5,000 `'device-gfxN' in extras` terms made the marker
/// algebra allocate gigabytes; now exit 2 at the term past the bound.
#[test]
fn pylock_marker_with_too_many_terms() {
    let terms: Vec<String> = (0..5000)
        .map(|i| format!("'device-gfx{i}' in extras"))
        .collect();
    let to = format!("marker = \"{}\"", terms.join(" or "));
    expect_error_at(
        "pylock.cpu.toml",
        "marker = \"sys_platform == 'linux'\"",
        &to,
        "'device-gfx128' in extras",
        &["show", "cpu"],
        "more than 128 comparisons",
    );
}

/// A wheel URL whose file name decodes to a control character or a path
/// separator (`%00`, `%0A`, `%2F`) is refused where the URL is.
#[test]
fn pylock_wheel_name_with_percent_encoded_control_characters() {
    for (enc, why) in [
        ("%00", "a control character"),
        ("%0A", "a control character"),
        ("%2F", "a path separator"),
    ] {
        let from = "typing_extensions-4.16.0-py3-none-any.whl\"";
        let to = format!("typing_extensions-4.16.0-py3-none-any{enc}.whl\"");
        let (_, text) = edited_lock_dir("pylock.cpu.toml", |t| t.replacen(from, &to, 1));
        // The error points at the start of the URL's value.
        let line_start = text[..text.find(&to).unwrap()].rfind('\n').unwrap() + 1;
        let url_at = &text[line_start..][text[line_start..].find("\"https://").unwrap()..];
        let url_at = &url_at[..url_at.find(".whl\"").unwrap() + 5];
        expect_error_at("pylock.cpu.toml", from, &to, url_at, &["show", "cpu"], why);
    }
}
