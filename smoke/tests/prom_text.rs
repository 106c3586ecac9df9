//! The `--prom` textfile with hostile names (a device, a gate, a backend or
//! a profile holding ESC, CR, LF, VT, FF, NEL, U+2028, U+2029, a double
//! quote, a backslash, a closing brace), read three ways, each of which
//! must find every sample written with every label value intact:
//!
//! - a strict reader written here from the text format's rules (what the
//!   Go `expfmt` parser that node_exporter and Prometheus use accepts, and
//!   stricter: no raw control character anywhere, so that a reader that
//!   splits lines on any Unicode line break sees the same lines);
//! - `promtool check metrics` (Prometheus' own Go parser and linter;
//!   `scripts/setup.sh --test` installs it).
//!
//! Not prometheus-parse 0.2 (the crate prom.rs's unit tests use): it drops
//! a sample whose label value holds a `}` and cuts a value at a `,` (so it
//! misreads lavapipe's own name, `llvmpipe (LLVM 15.0.6, 256 bits)`), with
//! no error; it returned 3 of 9 samples of a file of hostile names.

use greta_smoke::results::{GateStatus, Report};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// Every name the test writes: one hostile character each, and all of
/// them in one.
const HOSTILE: [&str; 12] = [
    "esc\u{1b}[31mred",
    "cr\rx",
    "lf\nx",
    "vt\u{b}x",
    "ff\u{c}x",
    "nel\u{85}x",
    "ls\u{2028}x",
    "ps\u{2029}x",
    "quote\"x",
    "backslash\\x",
    "brace}x",
    "all \u{1b}\r\n\u{b}\u{c}\u{85}\u{2028}\u{2029}\"\\} {x=\"1\"} 2\n# HELP",
];

/// A real lavapipe result, one device per hostile name, the gates of each
/// renamed too.
fn hostile_report() -> Report {
    let p =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../report/tests/data/lavapipe-default.json");
    let mut r: Report = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
    r.profile = format!("default{}", HOSTILE[11]);
    let one = r.devices[0].clone();
    r.devices = HOSTILE
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let mut d = one.clone();
            d.index = i;
            d.device.name = (*name).to_string();
            d.backend = format!("vulkan{name}");
            for g in &mut d.gates {
                g.id = format!("{}{name}", g.id);
            }
            d
        })
        .collect();
    r
}

/// The label values a reader must get back: what was written, with every
/// control character but the line feed (which the format escapes) as the
/// text `\xNN` and the two Unicode separators as `\u2028`, `\u2029`.
fn readable(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '\n' => c.to_string(),
            '\u{2028}' | '\u{2029}' => format!("\\u{:04x}", u32::from(c)),
            c if c.is_control() => format!("\\x{:02x}", u32::from(c)),
            c => c.to_string(),
        })
        .collect()
}

/// Each sample the textfile must hold, from the report itself, family by
/// family (the format wants a family's samples together): (metric, device
/// index or none, gate id or none).
fn expected(r: &Report) -> Vec<(String, Option<usize>, Option<String>)> {
    let mut want: Vec<(String, Option<usize>, Option<String>)> = [
        "greta_smoke_status",
        "greta_smoke_run_duration_seconds",
        "greta_smoke_last_run_timestamp_seconds",
    ]
    .iter()
    .map(|m| (m.to_string(), None, None))
    .collect();
    for m in ["greta_smoke_device_pass", "greta_smoke_device_open_seconds"] {
        for d in &r.devices {
            want.push((m.to_string(), Some(d.index), None));
        }
    }
    type Has = fn(&greta_smoke::results::GateResult) -> bool;
    let per_gate: [(&str, Has); 5] = [
        ("greta_smoke_gate_pass", |g| g.status != GateStatus::Skip),
        ("greta_smoke_gate_skipped", |g| g.status == GateStatus::Skip),
        ("greta_smoke_gate_rate", |g| {
            g.metrics
                .as_ref()
                .and_then(|m| m.rate)
                .is_some_and(f64::is_finite)
        }),
        ("greta_smoke_gate_floor", |g| g.floor.is_some()),
        ("greta_smoke_gate_peer_median", |g| g.peer.is_some()),
    ];
    for (metric, has) in per_gate {
        for d in &r.devices {
            for g in d.gates.iter().filter(|g| has(g)) {
                want.push((metric.to_string(), Some(d.index), Some(g.id.clone())));
            }
        }
    }
    want
}

#[derive(Debug)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

fn is_name(s: &str, colon: bool) -> bool {
    let mut cs = s.chars();
    cs.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || (colon && c == ':'))
        && cs.all(|c| c.is_ascii_alphanumeric() || c == '_' || (colon && c == ':'))
}

/// A line break for some reader: the text must hold none but `\n`.
fn breaks_a_line(c: char) -> bool {
    c != '\n' && (c.is_control() || c == '\u{2028}' || c == '\u{2029}')
}

/// The text exposition format (0.0.4), read strictly: every line a
/// `# HELP`, a `# TYPE` (once per family, before its samples) or a sample
/// `name{label="value",...} value [timestamp]`; in a label value only the
/// escapes `\\`, `\"` and `\n`, in a HELP text only `\\` and `\n`. Err
/// names the line and what is wrong.
fn strict(text: &str) -> Result<Vec<Sample>, String> {
    if let Some((at, c)) = text.char_indices().find(|(_, c)| breaks_a_line(*c)) {
        return Err(format!("raw {c:?} at byte {at}"));
    }
    let body = text.strip_suffix('\n').ok_or("no final line feed")?;
    let mut typed: BTreeMap<String, String> = BTreeMap::new();
    let mut helped: Vec<String> = Vec::new();
    let mut sampled: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for (n, line) in body.split('\n').enumerate() {
        let bad = |why: &str| format!("line {}: {why}: {line:?}", n + 1);
        if let Some(rest) = line.strip_prefix("# ") {
            let (kw, rest) = rest.split_once(' ').ok_or_else(|| bad("comment"))?;
            let (name, arg) = rest.split_once(' ').ok_or_else(|| bad("no text"))?;
            if !is_name(name, true) {
                return Err(bad("metric name"));
            }
            match kw {
                "HELP" => {
                    unescape(arg, &['\\', 'n']).map_err(|e| bad(&e))?;
                    if helped.contains(&name.to_string()) {
                        return Err(bad("second HELP"));
                    }
                    helped.push(name.to_string());
                }
                "TYPE" => {
                    if !["counter", "gauge", "histogram", "summary", "untyped"].contains(&arg) {
                        return Err(bad("type"));
                    }
                    if sampled.contains(&name.to_string()) {
                        return Err(bad("TYPE after samples"));
                    }
                    if typed.insert(name.to_string(), arg.to_string()).is_some() {
                        return Err(bad("second TYPE"));
                    }
                }
                _ => return Err(bad("a comment that is neither HELP nor TYPE")),
            }
            continue;
        }
        let name_end = line.find(['{', ' ']).ok_or_else(|| bad("no value"))?;
        let name = &line[..name_end];
        if !is_name(name, true) {
            return Err(bad("metric name"));
        }
        let mut rest = &line[name_end..];
        let mut labels = BTreeMap::new();
        if let Some(mut r) = rest.strip_prefix('{') {
            loop {
                if let Some(after) = r.strip_prefix('}') {
                    r = after;
                    break;
                }
                let (lname, after) = r.split_once("=\"").ok_or_else(|| bad("label"))?;
                if !is_name(lname, false) {
                    return Err(bad("label name"));
                }
                // The value runs to the first double quote not escaped.
                let mut end = None;
                let mut esc = false;
                for (i, c) in after.char_indices() {
                    match (esc, c) {
                        (true, _) => esc = false,
                        (false, '\\') => esc = true,
                        (false, '"') => {
                            end = Some(i);
                            break;
                        }
                        _ => {}
                    }
                }
                let end = end.ok_or_else(|| bad("unterminated label value"))?;
                let value = unescape(&after[..end], &['\\', '"', 'n']).map_err(|e| bad(&e))?;
                if labels.insert(lname.to_string(), value).is_some() {
                    return Err(bad("duplicate label"));
                }
                r = &after[end + 1..];
                r = r.strip_prefix(',').unwrap_or(r);
            }
            rest = r;
        }
        let rest = rest
            .strip_prefix(' ')
            .ok_or_else(|| bad("no space before the value"))?;
        let mut parts = rest.split(' ');
        let value: f64 = match parts.next() {
            Some("+Inf") => f64::INFINITY,
            Some("-Inf") => f64::NEG_INFINITY,
            Some(v) => v.parse().map_err(|_| bad("value"))?,
            None => return Err(bad("no value")),
        };
        if let Some(ts) = parts.next() {
            ts.parse::<i64>().map_err(|_| bad("timestamp"))?;
        }
        if parts.next().is_some() {
            return Err(bad("text after the timestamp"));
        }
        if !typed.contains_key(name) {
            return Err(bad("a sample before its TYPE"));
        }
        if !sampled.contains(&name.to_string()) {
            sampled.push(name.to_string());
        }
        out.push(Sample {
            name: name.to_string(),
            labels,
            value,
        });
    }
    Ok(out)
}

/// `s` with its escapes read; only a backslash before one of `allowed`
/// is one (`n` a line feed).
fn unescape(s: &str, allowed: &[char]) -> Result<String, String> {
    let mut out = String::new();
    let mut cs = s.chars();
    while let Some(c) = cs.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match cs.next() {
            Some(e) if allowed.contains(&e) => out.push(if e == 'n' { '\n' } else { e }),
            other => return Err(format!("invalid escape \\{other:?}")),
        }
    }
    Ok(out)
}

/// The strict reader itself refuses what the format refuses.
#[test]
fn the_strict_reader_refuses_what_the_format_refuses() {
    let ok = "# HELP a x \\\\ y\n# TYPE a gauge\na{l=\"v\\\"\\n\\\\\"} 1\na 2 1700000000\n";
    let s = strict(ok).unwrap();
    assert_eq!(s.len(), 2);
    assert_eq!(s[0].labels["l"], "v\"\n\\");
    for bad in [
        "# TYPE a gauge\na{l=\"v\rw\"} 1\n",
        "# TYPE a gauge\na{l=\"v\\rw\"} 1\n",
        "# TYPE a gauge\na{l=\"v\u{2028}\"} 1\n",
        "# TYPE a gauge\na{l=\"v} 1\n",
        "# TYPE a gauge\na{l=\"v\",l=\"w\"} 1\n",
        "a 1\n",
        "# TYPE a gauge\na 1\n# TYPE a gauge\n",
        "# TYPE a gauge\na one\n",
        "# TYPE a gauge\na 1",
        "# HELP a \\q\n",
        "# a comment\n",
    ] {
        assert!(strict(bad).is_err(), "accepted {bad:?}");
    }
}

fn promtool(text: &str) -> (i32, String) {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("promtool (Prometheus' own parser) must be installed: run `bash scripts/setup.sh --test`: {e}")
        });
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[test]
fn hostile_names_keep_every_sample_for_every_reader() {
    let r = hostile_report();
    let text = greta_smoke::prom::render(&r);
    let want = expected(&r);

    // 1. The strict reader: every sample, every name back as written.
    let got = strict(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(got.len(), want.len(), "samples read vs written");
    for (s, (metric, dev, gate)) in got.iter().zip(&want) {
        assert_eq!(&s.name, metric);
        assert!(s.value.is_finite(), "{s:?}");
        assert_eq!(s.labels["profile"], readable(&r.profile), "{s:?}");
        if let Some(i) = dev {
            let d = &r.devices[*i];
            assert_eq!(s.labels["device"], i.to_string());
            assert_eq!(s.labels["name"], readable(&d.device.name), "{s:?}");
            assert_eq!(s.labels["backend"], readable(&d.backend), "{s:?}");
        }
        if let Some(g) = gate {
            assert_eq!(s.labels["gate"], readable(g), "{s:?}");
        }
    }
    // Every name is a distinct label value: nothing was merged.
    let names: std::collections::BTreeSet<&str> = got
        .iter()
        .filter_map(|s| s.labels.get("name").map(String::as_str))
        .collect();
    assert_eq!(names.len(), HOSTILE.len());

    // 2. Prometheus' own parser.
    let (code, said) = promtool(&text);
    assert_eq!(code, 0, "promtool check metrics: {said}\n{text}");

    // The undecided file too (a hostile profile name is the only text).
    let u = greta_smoke::prom::render_undecided(HOSTILE[11], 0.5);
    let got = strict(&u).unwrap_or_else(|e| panic!("{e}\n{u}"));
    assert_eq!(got.len(), 3);
    assert!(got
        .iter()
        .all(|s| s.labels["profile"] == readable(HOSTILE[11])));
    let (code, said) = promtool(&u);
    assert_eq!(code, 0, "promtool check metrics: {said}\n{u}");
}

/// promtool is the real check: it must refuse what Prometheus refuses
/// (or the test above would prove nothing).
#[test]
fn promtool_refuses_a_broken_textfile() {
    let (code, said) = promtool("# TYPE a gauge\na{l=\"v\\rw\"} 1\n");
    assert_eq!(code, 1, "{said}");
    assert!(said.contains("escape"), "{said}");
}
