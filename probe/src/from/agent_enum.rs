//! `rocm_agent_enumerator` (rocminfo's companion script that build scripts
//! call to find the targets to compile for): one gfx target per line, one
//! line per GPU agent of the KFD topology. Before ROCm 6 it printed `gfx000`
//! first for the CPU (ggml-org/llama.cpp#11209: `gfx000 gfx803 gfx902`);
//! since then only the GPUs (iree-org/iree#22283: eight `gfx942`). With
//! `-name` each GPU may add its generic target (`gfx9-4-generic:...`), which
//! is no second GPU.

use super::amd::{self, find_gfx};
use super::shared_lines::lines_of;
use crate::facts::{Facts, Gpu};

const COMMAND: &str = "rocm_agent_enumerator";

/// The output is bare target lines: recognised after the command's prompt
/// line, or (without it) when the old CPU placeholder `gfx000` opens a run
/// of target lines.
/// This format's entry in the registry of readers (`super::readers`).
pub const READER: super::readers::Fns = super::readers::Fns {
    name: "agent-enumerator",
    label: "rocm_agent_enumerator",
    detect: recognise,
    parse: |t, _| parse(t),
    alone: false,
    markers: &[&[COMMAND, "gfx000"]],
};

pub fn recognise(text: &str) -> bool {
    !agent_lines(text).kept.is_empty()
}

/// The target line of one agent: `gfx942`, `gfx90a:sramecc+:xnack-`.
fn target(line: &str) -> Option<&str> {
    let t = line.trim();
    let name = t.split(':').next()?;
    (!t.contains(char::is_whitespace) && find_gfx(name).as_deref() == Some(name)).then_some(name)
}

/// The agent lines of the enumerator's output(s) in a text.
struct AgentLines<'a> {
    /// The first targets, `gfx000` included (at most
    /// [`super::MAX_LISTED`] GPUs' worth).
    kept: Vec<&'a str>,
    /// GPU targets (not `gfx000`) in all, kept or not.
    gpus: usize,
}

/// The target of every agent line of the enumerator's output(s) in `text`.
fn agent_lines(text: &str) -> AgentLines<'_> {
    let mut out = AgentLines {
        kept: Vec::new(),
        gpus: 0,
    };
    let mut lines = lines_of(text).peekable();
    while let Some(l) = lines.next() {
        let starts_run = target(l) == Some("gfx000");
        if !l.contains(COMMAND) && !starts_run {
            continue;
        }
        // The run of target lines that follows (or starts at `gfx000`);
        // `-name`'s generic targets sit among them and are skipped. The
        // line that ends a run may open the next.
        let mut run: Vec<&str> = Vec::new();
        if starts_run && !l.contains(COMMAND) {
            run.push("gfx000");
        }
        while let Some(&n) = lines.peek() {
            if let Some(g) = target(n) {
                run.push(g);
            } else if !is_generic(n) {
                break;
            }
            lines.next();
            // Counted as they come: a run of a million lines is not kept.
            if run.len() > 2 * super::MAX_LISTED {
                out.add(run.drain(..));
            }
        }
        out.add(run.drain(..));
    }
    out
}

impl<'a> AgentLines<'a> {
    fn add(&mut self, targets: impl Iterator<Item = &'a str>) {
        for g in targets {
            if g != "gfx000" {
                self.gpus += 1;
                if self.gpus > super::MAX_LISTED {
                    continue;
                }
            }
            if self.kept.len() < 2 * super::MAX_LISTED {
                self.kept.push(g);
            }
        }
    }
}

/// `gfx9-4-generic:sramecc+:xnack-`, `gfx11-generic`.
fn is_generic(line: &str) -> bool {
    let t = line.trim();
    t.starts_with("gfx") && t.split(':').next().is_some_and(|n| n.ends_with("-generic"))
}

pub fn parse(text: &str) -> Facts {
    let mut f = Facts::default();
    let lines = agent_lines(text);
    if lines.gpus > super::MAX_LISTED {
        f.cut.insert("GPUs", lines.gpus);
    }
    let agents = lines.kept;
    for g in agents.iter().filter(|g| **g != "gfx000") {
        super::limits::push_gpu(
            &mut f,
            Gpu {
                gfx: Some(g.to_string()),
                name: g.to_string(),
                vendor_id: Some(amd::AMD),
                integrated: amd::is_apu_target(g).then_some(true),
                ..Gpu::amdgpu_seen_by(COMMAND)
            },
        );
        if !f.rocm.agent_gfx.iter().any(|x| x == g) {
            f.rocm.agent_gfx.push(g.to_string());
        }
    }
    if !f.gpus.is_empty() {
        f.rocm.runtime_sees_gpu = Some(true);
    } else if agents.contains(&"gfx000") {
        // Old ROCm's whole answer was the CPU placeholder: the KFD topology
        // the runtime reads holds no GPU.
        f.rocm.runtime_sees_gpu = Some(false);
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_after_the_command_or_the_cpu_placeholder() {
        let old = "-> rocm_agent_enumerator\ngfx000\ngfx803\ngfx902\n";
        assert!(recognise(old));
        let f = parse(old);
        let got: Vec<_> = f
            .gpus
            .iter()
            .map(|g| (g.gfx.as_deref(), g.integrated))
            .collect();
        assert_eq!(got, [(Some("gfx803"), None), (Some("gfx902"), Some(true))]);
        // The placeholder alone opens the run (the prompt line not pasted).
        assert_eq!(parse("gfx000\ngfx900\n").gpus.len(), 1);
        let new = "$ rocm_agent_enumerator\ngfx942\ngfx942\n\n$ rocm_agent_enumerator -name\ngfx942:sramecc+:xnack-\ngfx9-4-generic:sramecc+:xnack-\n";
        assert_eq!(parse(new).gpus.len(), 3);
    }

    /// Targets in prose, build flags or other tools' lines are not agents.
    #[test]
    fn other_gfx_mentions_are_not_agents() {
        for t in [
            "  Name:                    gfx1030\n",
            "AMDGPU_TARGETS=gfx1030\n",
            "gfx1030\n",
            "Building for gfx1030 and gfx1100\n",
            "which rocm_agent_enumerator\n/opt/rocm/bin/rocm_agent_enumerator\n",
        ] {
            assert!(!recognise(t), "{t:?}");
        }
        // A CPU-only machine of old ROCm: the placeholder and nothing else.
        let f = parse("$ rocm_agent_enumerator\ngfx000\n");
        assert!(f.gpus.is_empty());
        assert_eq!(f.rocm.runtime_sees_gpu, Some(false));
    }
}
