//! The one short line a scheduler's health check shows (`--oneline`):
//! Kubernetes node-problem-detector's custom plugins take a plugin's exit
//! code (0 OK, 1 problem, 2 unknown) and its stdout as the condition's
//! message; Slurm's drain reason is the same line. It starts with `OK`,
//! `FAIL` or `UNKNOWN` and names the first failure with its device.

use crate::results::{GateStatus, Report, RunStatus};
use greta_vocab::Visible;

/// Longest line printed; node-problem-detector's default
/// `max_output_length` is 80, so the head of the line carries the verdict
/// and the device.
pub const MAX_LINE: usize = 200;

/// The line for a run that produced a report.
pub fn line(r: &Report) -> String {
    let n = r.devices.len();
    let devices = if n == 1 {
        "1 device".to_string()
    } else {
        format!("{n} devices")
    };
    let mut s = match r.status {
        RunStatus::Pass => {
            let ran = r
                .devices
                .iter()
                .map(|d| {
                    d.gates
                        .iter()
                        .filter(|g| g.status == GateStatus::Pass)
                        .count()
                })
                .min()
                .unwrap_or(0);
            let each = if n == 1 { "" } else { "each of " };
            format!(
                "OK: {}: {ran} gates passed on {each}{devices} in {:.1} s",
                r.profile, r.wall_s
            )
        }
        RunStatus::Fail => {
            let mut failures = Vec::new();
            for d in &r.devices {
                let who = format!("device {} ({})", d.index, d.device.name);
                for g in d.gates.iter().filter(|g| g.status == GateStatus::Fail) {
                    failures.push(format!(
                        "{who} {}: {}",
                        g.id,
                        g.reason.as_deref().unwrap_or("failed")
                    ));
                }
                if let Some(l) = &d.lost {
                    if !d.gates.iter().any(|g| g.status == GateStatus::Fail) {
                        failures.push(format!("{who}: {l}"));
                    }
                }
                if let Some(m) = d.validation_messages.first() {
                    failures.push(format!("{who}: validation message: {m}"));
                }
                // A node check (error counters, PCIe link) fails the run
                // with every gate passed: the line must still say why.
                for c in d.checks.iter().filter(|c| !c.pass) {
                    failures.push(format!("{who}: {}: {}", c.check, c.detail));
                }
            }
            for c in r.checks.iter().filter(|c| !c.pass) {
                failures.push(format!("{}: {}", c.check, c.detail));
            }
            let more = match failures.len() {
                0 | 1 => String::new(),
                k => format!(" (+{} more)", k - 1),
            };
            let first = failures.into_iter().next().unwrap_or_default();
            format!("FAIL: {} on {devices}{more}: {first}", r.profile)
        }
        RunStatus::Undecided => {
            let why = r
                .devices
                .iter()
                .flat_map(|d| d.gates.iter())
                .find_map(|g| g.reason.clone())
                .unwrap_or_else(|| "no gate ran".into());
            format!("UNKNOWN: {}: no gate ran on {devices}: {why}", r.profile)
        }
    };
    if r.settings.inject.is_empty() {
        return clip(&s, MAX_LINE);
    }
    // The faults are always said, whatever is clipped before them.
    let tag = format!(" [TEST faults injected: {}]", r.settings.inject.join(" "));
    let tag = clip(&tag, MAX_LINE / 2);
    s = clip(&s, MAX_LINE - tag.chars().count());
    s + &tag
}

/// The line for a run that could not start (exit 2).
pub fn unknown(why: &str) -> String {
    clip(&format!("UNKNOWN: {why}"), MAX_LINE)
}

/// One line, at most `max` characters. A multi-line reason is read as one
/// line (line breaks and tabs become spaces); every other control or bidi
/// character, which device names and driver errors may hold, is shown
/// through [`Visible`], never acted on by the reader's terminal.
fn clip(s: &str, max: usize) -> String {
    let flat: String = s
        .chars()
        .map(|c| if matches!(c, '\n' | '\t') { ' ' } else { c })
        .collect();
    let flat = Visible(&flat).to_string();
    if flat.chars().count() <= max {
        return flat;
    }
    let mut cut: String = flat.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::tests::sample_report;

    #[test]
    fn each_verdict_has_its_word_and_names_the_failure() {
        let mut r = sample_report();
        let l = line(&r);
        assert!(
            l.starts_with("FAIL: default on 1 device: device 0 (llvmpipe"),
            "{l}"
        );
        assert!(l.contains("softmax.256x1024: rel_err 1e-3"), "{l}");
        assert!(!l.contains('\n') && l.chars().count() <= MAX_LINE);

        r.devices[0].gates.remove(1);
        r.status = Report::summarize(&r.devices);
        assert_eq!(line(&r), "OK: default: 1 gates passed on 1 device in 2.9 s");

        r.devices[0].gates.remove(0);
        r.status = Report::summarize(&r.devices);
        assert_eq!(
            line(&r),
            "UNKNOWN: default: no gate ran on 1 device: an f32 gate failed"
        );
        r.settings.inject = vec!["corrupt:0".into()];
        assert!(line(&r).ends_with("[TEST faults injected: corrupt:0]"));
    }

    /// Every gate passed and a node check failed: the line names the check
    /// (it used to end at "FAIL: health on 1 device: " with nothing after).
    #[test]
    fn a_failed_node_check_is_named() {
        let mut r = sample_report();
        r.devices[0].gates.remove(1);
        r.devices[0].checks.push(crate::telemetry::NodeCheck {
            check: "pcie_link".into(),
            pass: false,
            detail: "PCIe Gen5 x16 card trained at Gen3 x8 (card1)".into(),
        });
        r.status = Report::summarize(&r.devices);
        let l = line(&r);
        assert!(
            l.starts_with("FAIL: default on 1 device: device 0 (llvmpipe")
                && l.ends_with(": pcie_link: PCIe Gen5 x16 card trained at Gen3 x8 (card1)"),
            "{l}"
        );
        r.devices[0].checks.clear();
        r.checks.push(crate::telemetry::recount("vulkan", 1, 0));
        r.status = RunStatus::Fail;
        assert_eq!(
            line(&r),
            "FAIL: default on 1 device: gpu_count_stable: GPU count fell during the run: 1 vulkan device(s) before, 0 after: 1 vanished"
        );
    }

    /// A device name from the driver holding ESC/OSC, CR and bidi
    /// overrides: the line a scheduler shows carries them as escapes.
    #[test]
    fn device_names_are_shown_never_acted_on() {
        let mut r = sample_report();
        r.devices[0].device.name = "gpu \u{1b}]0;owned\u{7} FAIL\rPASS \u{202e}SSAP\u{2069}".into();
        let l = line(&r);
        for c in ['\u{1b}', '\u{7}', '\r', '\u{202e}', '\u{2069}'] {
            assert!(!l.contains(c), "{c:?} in {l:?}");
        }
        assert!(
            l.contains("device 0 (gpu \\u{1b}]0;owned\\u{7} FAIL\\rPASS \\u{202e}SSAP\\u{2069})"),
            "{l}"
        );
    }

    #[test]
    fn long_or_multiline_reasons_are_clipped_to_one_line() {
        let mut r = sample_report();
        r.devices[0].gates[1].reason = Some(format!("first\nsecond {}", "x".repeat(500)));
        let l = line(&r);
        assert_eq!(l.chars().count(), MAX_LINE);
        assert!(l.ends_with('…') && !l.contains('\n') && l.contains("first second"));
        r.settings.inject = vec!["corrupt:0".into()];
        let l = line(&r);
        assert_eq!(l.chars().count(), MAX_LINE);
        assert!(l.ends_with("… [TEST faults injected: corrupt:0]"), "{l}");
        assert_eq!(unknown("no usable device"), "UNKNOWN: no usable device");
    }
}
