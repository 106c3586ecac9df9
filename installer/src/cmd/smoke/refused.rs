//! The flags a mode of `greta smoke` has no use for (`--profile
//! frameworks`, `--tune`, `--compile-only`): given, each is refused (exit
//! 2) with the reason, never silently ignored. One table: a flag, how to
//! tell it was given, and per mode why that mode does not take it (`None`:
//! the mode takes it).

use super::Args;
use greta_smoke::{BackendChoice, DeviceChoice, Profile};

/// A mode that takes fewer flags than a run of the kernel gates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Frameworks,
    Tune,
    CompileOnly,
}

impl Mode {
    fn flag(self) -> &'static str {
        match self {
            Mode::Frameworks => "--profile frameworks",
            Mode::Tune => "--tune",
            Mode::CompileOnly => "--compile-only",
        }
    }
}

struct Flag {
    name: &'static str,
    given: fn(&Args) -> bool,
    frameworks: Option<&'static str>,
    tune: Option<&'static str>,
    compile_only: Option<&'static str>,
}

impl Flag {
    fn why(&self, mode: Mode) -> Option<&'static str> {
        match mode {
            Mode::Frameworks => self.frameworks,
            Mode::Tune => self.tune,
            Mode::CompileOnly => self.compile_only,
        }
    }
}

const NOTHING_TIMED: &str = "nothing is timed";
const NOTHING_RUNS: &str = "nothing runs";
const NO_PAGE: &str = "it has no page; --json prints its report";
const NO_HEALTH: &str = "it is no health check; --json prints its report";

const FLAGS: &[Flag] = &[
    Flag {
        name: "--gate",
        given: |a| !a.gates.is_empty(),
        frameworks: Some("it selects kernel gates; the frameworks profile runs every framework gate"),
        tune: None,
        compile_only: None,
    },
    Flag {
        name: "--device",
        given: |a| a.device != DeviceChoice::default(),
        frameworks: Some("the frameworks choose their own device"),
        tune: None,
        compile_only: None,
    },
    Flag {
        name: "--backend",
        given: |a| a.backend != BackendChoice::Auto,
        frameworks: Some("each framework runs on its own runtime"),
        tune: None,
        compile_only: None,
    },
    Flag {
        name: "--profile",
        given: |a| !matches!(a.profile, Profile::Default | Profile::Frameworks),
        frameworks: None,
        tune: None,
        compile_only: Some("it compiles every profile's gates; --gate picks some"),
    },
    Flag {
        name: "--repeat",
        given: |a| a.repeat.is_some(),
        frameworks: None,
        tune: Some("each candidate is timed as the sweep decides"),
        compile_only: Some(NOTHING_RUNS),
    },
    Flag {
        name: "--timeout",
        given: |a| a.timeout.is_some(),
        frameworks: None,
        tune: None,
        compile_only: Some("nothing is submitted"),
    },
    Flag {
        name: "--seed",
        given: |a| a.seed.is_some(),
        frameworks: None,
        tune: None,
        compile_only: Some("no inputs are made"),
    },
    Flag {
        name: "--baseline",
        given: |a| a.baseline.is_some(),
        frameworks: Some("the framework gates have no rate floors"),
        tune: Some("a sweep has no rate floors; it compares candidates with each other"),
        compile_only: Some(NOTHING_TIMED),
    },
    Flag {
        name: "--floor-fraction",
        given: |a| a.floor_fraction != greta_smoke::DEFAULT_FLOOR_FRACTION,
        frameworks: Some("the framework gates have no rate floors"),
        tune: Some("a sweep has no rate floors; it compares candidates with each other"),
        compile_only: Some(NOTHING_TIMED),
    },
    Flag {
        name: "--peer-fraction",
        given: |a| a.peer_fraction != greta_smoke::DEFAULT_PEER_FRACTION,
        frameworks: Some("the frameworks run on one device"),
        tune: Some("it tunes one device"),
        compile_only: Some(NOTHING_TIMED),
    },
    Flag {
        name: "--deny-list",
        given: |a| a.deny_list.is_some(),
        frameworks: Some("it lists kernel gates"),
        tune: Some("the sweep tunes the gates it is given"),
        compile_only: Some("every planned pipeline is compiled"),
    },
    Flag {
        name: "--tune",
        given: |a| a.tune,
        frameworks: Some("it tunes greta's own kernels"),
        tune: None,
        compile_only: None,
    },
    Flag {
        name: "--compile-only",
        given: |a| a.compile_only,
        frameworks: Some("it compiles greta's own kernels"),
        tune: None,
        compile_only: None,
    },
    Flag {
        name: "--inject",
        given: |a| a.inject.iter().any(|s| !s.is_empty()),
        frameworks: Some("its faults are the kernel gates'"),
        tune: Some("its faults are a run's"),
        compile_only: Some(NOTHING_RUNS),
    },
    Flag {
        name: "--out",
        given: |a| a.out.is_some(),
        frameworks: None,
        tune: Some(
            "it writes no result files; the winners go to the tuning cache, GRETA_TUNING_CACHE=DIR chooses where",
        ),
        compile_only: Some("it writes no result files; --json prints its report"),
    },
    Flag {
        name: "--html",
        given: |a| a.html.is_some(),
        frameworks: None,
        tune: Some(NO_PAGE),
        compile_only: Some(NO_PAGE),
    },
    Flag {
        name: "--prom",
        given: |a| a.prom.is_some(),
        frameworks: None,
        tune: Some(NO_HEALTH),
        compile_only: Some(NO_HEALTH),
    },
    Flag {
        name: "--oneline",
        given: |a| a.oneline,
        frameworks: None,
        tune: Some(NO_HEALTH),
        compile_only: Some(NO_HEALTH),
    },
];

/// `None` when `mode` takes every flag given; else the message, naming
/// each refused flag with its reason.
pub fn refused(args: &Args, mode: Mode) -> Option<String> {
    let refused: Vec<String> = FLAGS
        .iter()
        .filter(|f| (f.given)(args))
        .filter_map(|f| f.why(mode).map(|why| format!("{} ({why})", f.name)))
        .collect();
    (!refused.is_empty()).then(|| format!("{} does not take {}", mode.flag(), refused.join(", ")))
}
