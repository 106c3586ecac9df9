//! `ls -l /dev/kfd /dev/dri/*` output: whether the nodes exist, their mode
//! and owning group (which group a user must be in).

use super::shared_lines::lines_of;
use crate::facts::{DeviceNode, Facts};

fn is_mode(s: &str) -> bool {
    let s = s.trim_end_matches(['+', '.', '@']);
    s.len() == 10
        && matches!(s.as_bytes()[0], b'c' | b'b' | b'd' | b'l' | b'-')
        && s[1..].bytes().all(|b| b"rwxsStT-".contains(&b))
}

/// This format's entry in the registry of readers (`super::readers`).
pub const READER: super::readers::Fns = super::readers::Fns {
    name: "device-node-listing",
    label: "ls -l of device nodes",
    detect: recognise,
    parse: |t, _| parse(t),
    alone: false,
    markers: &[&["/dev/kfd", "renderD", "/dev/dri", "ls: cannot access"]],
};

pub fn recognise(text: &str) -> bool {
    lines_of(text).any(|l| {
        let t = l.trim();
        (t.split_whitespace().next().is_some_and(is_mode)
            && (t.contains("/dev/kfd") || t.contains("renderD") || t.contains("/dev/dri")))
            || (t.starts_with("ls: cannot access") && t.contains("/dev/"))
    })
}

pub fn parse(text: &str) -> Facts {
    let mut f = Facts::default();
    let mut dir = String::new();
    for l in lines_of(text) {
        let t = l.trim();
        if t.starts_with("/dev/") && t.ends_with(':') {
            dir = t.trim_end_matches(':').to_string();
            continue;
        }
        if let Some(rest) = t.strip_prefix("ls: cannot access ") {
            if rest.contains("No such file") {
                let path = rest
                    .split(':')
                    .next()
                    .unwrap_or("")
                    .trim_matches(['\'', '"', ' '])
                    .to_string();
                f.device_nodes.push(DeviceNode {
                    path,
                    exists: false,
                    ..DeviceNode::default()
                });
            }
            continue;
        }
        let cols: Vec<&str> = t.split_whitespace().collect();
        if cols.len() < 6 || !is_mode(cols[0]) {
            continue;
        }
        let name = *cols.last().unwrap_or(&"");
        let path = if name.starts_with('/') {
            name.to_string()
        } else if !dir.is_empty() {
            format!("{dir}/{name}")
        } else if name.starts_with("renderD") || name.starts_with("card") {
            format!("/dev/dri/{name}")
        } else {
            continue;
        };
        if !(path.starts_with("/dev/kfd") || path.starts_with("/dev/dri/")) {
            continue;
        }
        let m = cols[0].as_bytes();
        let bits = |o: usize| {
            (if m[o] == b'r' { 4 } else { 0 })
                + (if m[o + 1] == b'w' { 2 } else { 0 })
                + (if matches!(m[o + 2], b'x' | b's' | b't') {
                    1
                } else {
                    0
                })
        };
        f.device_nodes.push(DeviceNode {
            path,
            exists: true,
            mode: Some(format!("0{}{}{}", bits(1), bits(4), bits(7))),
            group: cols.get(3).map(|s| s.to_string()),
            ..DeviceNode::default()
        });
    }
    f
}
