//! Each verdict proven to fail on the fault it is for, from facts injected
//! directly and from synthetic amdgpu sysfs trees read by the runtime's
//! reader (the path `--sysroot` replays).

use super::*;
use greta_runtime::{
    amd_cards, amd_cards_of, bus_gpu_count, kfd_gpu_count, AmdSysfsSource, ClockLimits as Limits,
    Reading,
};
use std::fs;
use std::path::{Path, PathBuf};

fn reading(power: f64, limit: f64, limits: Option<Limits>) -> Reading {
    Reading {
        device: "nvml:0".into(),
        power_w: Some(power),
        power_limit_w: Some(limit),
        temp_c: Some(70.0),
        sm_mhz: Some(1980),
        mem_mhz: Some(2619),
        limits,
        link: Some(LinkState { gen: 5, width: 16 }),
    }
}

fn timed(rs: Vec<Reading>) -> Vec<Timed> {
    rs.into_iter()
        .enumerate()
        .map(|(i, r)| Timed {
            at: Duration::from_millis(100 * i as u64),
            readings: vec![r],
        })
        .collect()
}

const POWER: Limits = Limits {
    power: true,
    thermal: false,
    current: false,
    other: false,
};

#[test]
fn power_capped_share_is_reported_with_the_limit() {
    // 38 of 100 samples held by the power cap at 700 W.
    let rs = (0..100)
        .map(|i| {
            reading(
                690.0,
                700.0,
                Some(if i < 38 { POWER } else { Limits::default() }),
            )
        })
        .collect();
    let s = summarize(&timed(rs), "nvml:0").unwrap();
    assert_eq!(s.samples, 100);
    assert!((s.power_capped - 0.38).abs() < 1e-12);
    assert!(!s.power_inferred);
    assert_eq!(
        describe("612 TFLOP/s", &s),
        "sustained 612 TFLOP/s, power-capped 38% of the time at 700 W"
    );
    assert_eq!(
        shortfall_reason(&s),
        "nvml:0: power-capped 38% of the time at 700 W"
    );
}

#[test]
fn no_limit_seen_says_so_and_names_power_and_clocks() {
    let rs = (0..10)
        .map(|_| reading(350.0, 700.0, Some(Limits::default())))
        .collect();
    let s = summarize(&timed(rs), "nvml:0").unwrap();
    assert_eq!(
        describe("400 TFLOP/s", &s),
        "sustained 400 TFLOP/s, no clock limit seen in 10 samples"
    );
    assert_eq!(
        shortfall_reason(&s),
        "nvml:0: no throttling seen in 10 samples, 350 W of 700 W, clocks 1980 MHz"
    );
    assert_eq!(summarize(&timed(vec![]), "nvml:0"), None);
}

#[test]
fn without_reasons_power_at_the_cap_counts_as_capped() {
    let rs = vec![reading(299.0, 300.0, None), reading(200.0, 300.0, None)];
    let s = summarize(&timed(rs), "nvml:0").unwrap();
    assert!(s.power_inferred);
    assert!((s.power_capped - 0.5).abs() < 1e-12);
}

fn counter(block: &str, kind: &str, value: u64) -> Counter {
    Counter {
        device: "card1".into(),
        block: block.into(),
        kind: kind.into(),
        value,
    }
}

#[test]
fn a_rising_counter_fails_and_names_the_block() {
    let before = vec![
        counter("umc", "uncorrectable", 0),
        counter("gfx", "correctable", 4),
    ];
    let same = counters_rose(&before, &before, &[]);
    assert!(same.is_empty(), "{same:?}");
    let after = vec![
        counter("umc", "uncorrectable", 2),
        counter("gfx", "correctable", 4),
    ];
    let v = counters_rose(&before, &after, &[]);
    assert_eq!(
        v,
        vec!["umc error counter rose on card1: umc uncorrectable 0 -> 2"]
    );
    // Gone after the run: not a pass.
    let v = counters_rose(&before, &[counter("umc", "uncorrectable", 0)], &[]);
    assert_eq!(
        v,
        vec!["gfx correctable on card1 could not be read after the run"]
    );
    let v = counters_rose(&before, &before, &["ras/umc_err_count: busy".into()]);
    assert_eq!(
        v,
        vec!["error counter unreadable after the run: ras/umc_err_count: busy"]
    );
}

#[test]
fn a_trained_down_link_fails_with_the_sentence() {
    let link = Link {
        current: LinkState { gen: 4, width: 8 },
        max: LinkState { gen: 5, width: 16 },
    };
    assert_eq!(
        link_check("card1", link.current, &link),
        Err("PCIe Gen5 x16 card trained at Gen4 x8 (card1)".into())
    );
    // Width alone, speed alone.
    assert!(link_check("c", LinkState { gen: 5, width: 8 }, &link).is_err());
    assert!(link_check("c", LinkState { gen: 3, width: 16 }, &link).is_err());
    assert_eq!(link_check("c", link.max, &link), Ok(()));
}

#[test]
fn a_missing_gpu_is_a_count_mismatch_never_a_pass() {
    let c = Census {
        bus: Some(8),
        kfd: None,
        nvml: None,
    };
    assert_eq!(
        census_check(&c, "HIP", 7),
        Err("GPU count mismatch: 8 on the bus, 7 in HIP".into())
    );
    let c = Census {
        bus: Some(8),
        kfd: Some(8),
        nvml: None,
    };
    assert_eq!(
        census_check(&c, "HIP", 8),
        Ok("8 on the bus, 8 in KFD, 8 in HIP".into())
    );
    // KFD alone short of the bus still fails the backend that matches KFD.
    let c = Census {
        bus: Some(8),
        kfd: Some(7),
        nvml: None,
    };
    assert!(census_check(&c, "HIP", 7).is_err());
    assert!(census_check(&Census::default(), "Vulkan", 1)
        .unwrap()
        .contains("no other record"));
}

#[test]
fn results_type_round_trips_as_json() {
    let mut t = RunTelemetry::default();
    assert_eq!(serde_json::to_string(&t).unwrap(), "{}");
    let rs = vec![reading(690.0, 700.0, Some(POWER))];
    t.gates.insert(
        "stress".into(),
        vec![summarize(&timed(rs), "nvml:0").unwrap()],
    );
    t.checks.push(NodeCheck {
        check: "gpu_count".into(),
        pass: false,
        detail: "GPU count mismatch: 8 on the bus, 7 in HIP".into(),
    });
    let j = serde_json::to_string(&t).unwrap();
    let back: RunTelemetry = serde_json::from_str(&j).unwrap();
    assert_eq!(back, t);
}

// --- synthetic amdgpu sysfs trees, read through the runtime's reader ---

/// A card of an MI300-class node: PCI device with its link files, KFD node.
fn mi300_card(root: &Path, n: u32, cur: (&str, u32)) -> PathBuf {
    let bdf = format!("0000:{:02x}:00.0", 0x10 + n);
    let pci = root.join("sys/bus/pci/devices").join(&bdf);
    fs::create_dir_all(pci.join("ras")).unwrap();
    fs::write(pci.join("vendor"), "0x1002\n").unwrap();
    fs::write(pci.join("class"), "0x038000\n").unwrap();
    fs::write(pci.join("current_link_speed"), format!("{} PCIe\n", cur.0)).unwrap();
    fs::write(pci.join("current_link_width"), format!("{}\n", cur.1)).unwrap();
    fs::write(pci.join("max_link_speed"), "32.0 GT/s PCIe\n").unwrap();
    fs::write(pci.join("max_link_width"), "16\n").unwrap();
    fs::write(pci.join("ras/umc_err_count"), "ue: 0\nce: 0\n").unwrap();
    let drm = root.join(format!("sys/class/drm/card{n}"));
    fs::create_dir_all(&drm).unwrap();
    // As in real sysfs, `device` is a relative link (from
    // sys/class/drm/cardN up to sys/) to the PCI device.
    std::os::unix::fs::symlink(
        format!("../../../bus/pci/devices/{bdf}"),
        drm.join("device"),
    )
    .unwrap();
    let kfd = root.join(format!("sys/class/kfd/kfd/topology/nodes/{}", n + 1));
    fs::create_dir_all(&kfd).unwrap();
    fs::write(kfd.join("gpu_id"), format!("{}\n", 1000 + n)).unwrap();
    pci
}

fn tree(cards: u32, cur: (&str, u32)) -> (tempfile::TempDir, Vec<PathBuf>) {
    let t = tempfile::tempdir().unwrap();
    let cpu = t.path().join("sys/class/kfd/kfd/topology/nodes/0");
    fs::create_dir_all(&cpu).unwrap();
    fs::write(cpu.join("gpu_id"), "0\n").unwrap();
    let pcis = (0..cards).map(|n| mi300_card(t.path(), n, cur)).collect();
    (t, pcis)
}

#[test]
fn tree_missing_gpu_in_the_backend_fails() {
    let (t, _) = tree(8, ("32.0 GT/s", 16));
    let c = Census {
        bus: bus_gpu_count(t.path(), 0x1002),
        kfd: kfd_gpu_count(t.path()),
        nvml: None,
    };
    assert_eq!(amd_cards(t.path()).len(), 8, "the device links resolve");
    assert_eq!(
        census_check(&c, "HIP", 7),
        Err("GPU count mismatch: 8 on the bus, 8 in KFD, 7 in HIP".into())
    );
    assert!(census_check(&c, "HIP", 8).is_ok());
}

#[test]
fn tree_trained_down_link_fails() {
    let (t, _) = tree(1, ("16.0 GT/s", 8));
    let card = &amd_cards(t.path())[0];
    let link = card.link().unwrap();
    assert_eq!(
        link_check(&card.name, link.current, &link),
        Err("PCIe Gen5 x16 card trained at Gen4 x8 (card0)".into())
    );
    let (t, _) = tree(1, ("32.0 GT/s", 16));
    let card = &amd_cards(t.path())[0];
    let link = card.link().unwrap();
    assert_eq!(link_check(&card.name, link.current, &link), Ok(()));
}

#[test]
fn tree_rising_ras_counter_and_bad_pages_fail() {
    let (t, pcis) = tree(1, ("32.0 GT/s", 16));
    let card = &amd_cards(t.path())[0];
    let (before, bad) = card.counters();
    assert!(bad.is_empty());
    fs::write(pcis[0].join("ras/umc_err_count"), "ue: 1\nce: 0\n").unwrap();
    fs::write(
        pcis[0].join("ras/gpu_vram_bad_pages"),
        "0x00000abc : 0x00001000 : R\n",
    )
    .unwrap();
    let (after, bad) = card.counters();
    let v = counters_rose(&before, &after, &bad);
    assert_eq!(
        v,
        vec!["umc error counter rose on card0: umc uncorrectable 0 -> 1"]
    );
    // Bad pages appear as a new counter; read before the run they rise too.
    let (before2, _) = card.counters();
    fs::write(
        pcis[0].join("ras/gpu_vram_bad_pages"),
        "0x00000abc : 0x00001000 : R\n0x00000abd : 0x00001000 : P\n",
    )
    .unwrap();
    let (after2, _) = card.counters();
    assert_eq!(
        counters_rose(&before2, &after2, &[]),
        vec!["vram error counter rose on card0: vram bad pages 1 -> 2"]
    );
}

#[test]
fn tree_gpu_metrics_throttle_bits_reach_the_summary() {
    let (t, pcis) = tree(1, ("32.0 GT/s", 16));
    // A gpu_metrics v1.3 table (layout in the runtime's gpu_metrics.rs),
    // 0xFF-filled like the kernel's, socket power 300 W and the SPL (power)
    // bit in indep_throttle_status at offset 112.
    let mut b = vec![0xFFu8; 120];
    b[..4].copy_from_slice(&[120, 0, 1, 3]);
    b[22..24].copy_from_slice(&300u16.to_le_bytes());
    b[112..120].copy_from_slice(&(1u64 << 4).to_le_bytes());
    fs::write(pcis[0].join("gpu_metrics"), &b).unwrap();
    let hw = pcis[0].join("hwmon/hwmon0");
    fs::create_dir_all(&hw).unwrap();
    fs::write(hw.join("power1_cap"), "300000000\n").unwrap();
    let mut src = AmdSysfsSource::new(t.path());
    use greta_runtime::TelemetrySource as Source;
    let samples = timed(src.sample());
    let s = summarize(&samples, "card0").unwrap();
    assert_eq!(s.power_capped, 1.0);
    assert_eq!(
        describe("95 TFLOP/s", &s),
        "sustained 95 TFLOP/s, power-capped 100% of the time at 300 W"
    );
    assert_eq!(s.best_link, Some(LinkState { gen: 5, width: 16 }));
}

#[test]
fn a_failing_watched_gate_names_what_held_the_clocks() {
    use crate::results::{GateResult, GateStatus};
    let rs = (0..10)
        .map(|i| {
            reading(
                700.0,
                700.0,
                Some(if i < 4 { POWER } else { Limits::default() }),
            )
        })
        .collect();
    let s = summarize(&timed(rs), "nvml:0").unwrap();
    let gate = |status, reason: Option<&str>| {
        let mut g = GateResult::new(
            "stress".into(),
            "gemm_f16".into(),
            "8192".into(),
            status,
            reason.map(Into::into),
            crate::Tolerance::Exact,
            1,
        );
        g.in_run.telemetry = vec![s.clone()];
        g
    };
    let mut g = gate(GateStatus::Fail, Some("612 TFLOP/s under the floor of 700"));
    attribute(&mut g);
    assert_eq!(
        g.reason.as_deref(),
        Some("612 TFLOP/s under the floor of 700; nvml:0: power-capped 40% of the time at 700 W")
    );
    let mut g = gate(GateStatus::Pass, None);
    attribute(&mut g);
    assert_eq!(g.reason, None);
}

// --- the throttle verdict, the recount, and the injected faults ---

fn summary_of(rs: Vec<Reading>) -> Summary {
    let d = rs[0].device.clone();
    summarize(&timed(rs), &d).unwrap()
}

#[test]
fn heat_holding_the_clocks_fails_a_gate_and_a_power_cap_does_not() {
    let hot = Limits {
        thermal: true,
        ..Limits::default()
    };
    // 2 of 10 samples thermally limited: at or over THERMAL_FAIL.
    let mut rs: Vec<Reading> = (0..8).map(|_| reading(690.0, 700.0, Some(POWER))).collect();
    rs.extend((0..2).map(|_| reading(690.0, 700.0, Some(hot))));
    let s = summary_of(rs);
    assert_eq!(
        throttle_check(std::slice::from_ref(&s)),
        Err("thermal throttling on nvml:0 for 10% or more of the gate".into())
    );
    // One stray sample in 20 passes; power-capped all the time passes.
    let mut rs: Vec<Reading> = (0..19)
        .map(|_| reading(690.0, 700.0, Some(POWER)))
        .collect();
    rs.push(reading(690.0, 700.0, Some(hot)));
    assert_eq!(throttle_check(&[summary_of(rs)]), Ok(()));
    assert_eq!(throttle_check(&[]), Ok(()));
}

#[test]
fn a_device_that_vanished_during_the_run_fails_the_recount() {
    let c = recount("vulkan", 2, 1);
    assert!(!c.pass);
    assert_eq!(c.check, "gpu_count_stable");
    assert_eq!(
        c.detail,
        "GPU count fell during the run: 2 vulkan device(s) before, 1 after: 1 vanished"
    );
    assert!(recount("cuda", 8, 8).pass);
    // A device that appears (hot-plug) is no fault of the node's.
    assert!(recount("cuda", 7, 8).pass);
}

fn faults(specs: &[&str]) -> crate::inject::TelemetryFaults {
    let plan = crate::gates::Catalog::builtin()
        .plan(crate::gates::Profile::Default, &[], false)
        .unwrap();
    let specs: Vec<String> = specs.iter().map(|s| s.to_string()).collect();
    crate::inject::Faults::parse(&specs, &plan)
        .unwrap()
        .telemetry(0)
}

#[test]
fn injected_faults_on_a_device_without_telemetry_fail_each_verdict() {
    use greta_runtime::TelemetrySource as Source;
    // Nothing to read and nothing injected: nothing watched.
    assert!(Reader::with_faults(None, &faults(&[])).is_none());
    let f = faults(&["throttle:0", "link:0:3x8", "ecc:0"]);
    let mut src = injected::InjectedSource {
        inner: None,
        faults: f.clone(),
    };
    let samples: Vec<Timed> = (0..3)
        .map(|i| Timed {
            at: Duration::from_millis(100 * i),
            readings: src.sample(),
        })
        .collect();
    let s = summarize(&samples, "inject:0").unwrap();
    assert_eq!((s.samples, s.thermal), (3, 1.0));
    assert!(throttle_check(std::slice::from_ref(&s)).is_err());
    let reader = Reader::with_faults(None, &f).unwrap();
    let (before, _) = reader.counters();
    let (after, bad) = reader.counters();
    assert_eq!(
        counters_rose(&before, &after, &bad),
        vec!["umc error counter rose on inject:0: umc uncorrectable 0 -> 1"]
    );
    let links = reader.links();
    assert_eq!(links.len(), 1);
    let (dev, link) = &links[0];
    assert_eq!(
        link_check(dev, s.best_link.unwrap(), link),
        Err("PCIe Gen5 x16 card trained at Gen3 x8 (inject:0)".into())
    );
    // A power cap alone is attributed, not failed.
    let mut src = injected::InjectedSource {
        inner: None,
        faults: faults(&["throttle:0:power"]),
    };
    let s = summarize(&timed(src.sample()), "inject:0").unwrap();
    assert_eq!(s.power_capped, 1.0);
    assert_eq!(throttle_check(&[s]), Ok(()));
}

#[test]
fn injected_faults_lay_over_a_real_cards_readings() {
    use greta_runtime::TelemetrySource as Source;
    let (t, _) = tree(2, ("32.0 GT/s", 16));
    let cards = amd_cards(t.path());
    let f = faults(&["throttle:0:thermal", "link:0:4x16", "ecc:0:umc"]);
    let mut src = injected::InjectedSource {
        inner: Some(Box::new(AmdSysfsSource::new(t.path()))),
        faults: f.clone(),
    };
    let rs = src.sample();
    let names: Vec<&str> = rs.iter().map(|r| r.device.as_str()).collect();
    assert_eq!(names, ["card0", "card1"], "the cards' own names");
    assert!(rs.iter().all(|r| r.limits.unwrap().thermal));
    assert!(rs
        .iter()
        .all(|r| r.link == Some(LinkState { gen: 4, width: 16 })));
    let reader = Reader::with_faults(Some(Reader::Amd(cards.clone())), &f).unwrap();
    let (before, _) = reader.counters();
    assert_eq!(
        before.len(),
        4,
        "both cards' umc counts, unchanged on the first read"
    );
    let (after, bad) = reader.counters();
    let rose = counters_rose(&before, &after, &bad);
    assert_eq!(
        rose,
        vec![
            "umc error counter rose on card0: umc uncorrectable 0 -> 1",
            "umc error counter rose on card1: umc uncorrectable 0 -> 1",
        ]
    );
    for (dev, link) in reader.links() {
        assert_eq!(
            link.max,
            LinkState { gen: 5, width: 16 },
            "the card's own maximum"
        );
        assert!(link_check(&dev, link.current, &link).is_err());
    }
    // The same reader without faults: counters unchanged, links as trained.
    let clean = Reader::Amd(cards);
    let (b, _) = clean.counters();
    let (a, bad) = clean.counters();
    assert!(counters_rose(&b, &a, &bad).is_empty());
}

#[test]
fn an_amd_device_is_matched_to_its_card_by_pci_address() {
    let (t, _) = tree(3, ("32.0 GT/s", 16));
    let names = |bus: Option<&str>| -> Vec<String> {
        amd_cards_of(t.path(), bus)
            .into_iter()
            .map(|c| c.name)
            .collect()
    };
    let cards = amd_cards(t.path());
    assert_eq!(
        cards[1].bus_id().map(|a| a.to_string()).as_deref(),
        Some("0000:11:00.0")
    );
    assert_eq!(names(Some("0000:11:00.0")), ["card1"]);
    assert_eq!(names(Some("0000:12:00.0")), ["card2"]);
    assert_eq!(
        names(Some(" 0000:1A:00.0 ")),
        ["card0", "card1", "card2"],
        "no card there: all"
    );
    assert_eq!(names(None), ["card0", "card1", "card2"]);
    // Only the matched card's counters and link are read.
    let reader = Reader::Amd(amd_cards_of(t.path(), Some("0000:10:00.0")));
    let (c, _) = reader.counters();
    assert!(c.iter().all(|c| c.device == "card0") && !c.is_empty());
    let links = reader.links();
    assert_eq!(links.len(), 1);
    assert_eq!(links[0].0, "card0");
}

// --- the readings over time kept in the results ---

/// A gate under a minute keeps every sample as its own point, in order,
/// with the clock, power and temperature read and the limits named.
#[test]
fn a_short_gate_keeps_every_sample_as_a_point() {
    let rs: Vec<Reading> = (0..10)
        .map(|i| {
            let mut r = reading(
                600.0 + f64::from(i),
                700.0,
                Some(if i == 3 { POWER } else { Limits::default() }),
            );
            r.temp_c = Some(60.0 + f64::from(i));
            r
        })
        .collect();
    let s = summarize(&timed(rs), "nvml:0").unwrap();
    assert_eq!(s.series.len(), 10);
    let p = &s.series[3];
    assert_eq!(
        (p.t_s, p.sm_mhz, p.power_w, p.temp_c),
        (0.3, Some(1980.0), Some(603.0), Some(63.0))
    );
    assert_eq!(p.held, vec![Held::Power]);
    assert!(s
        .series
        .iter()
        .enumerate()
        .all(|(i, p)| i == 3 || p.held.is_empty()));
    // Another device's readings are not this one's.
    assert_eq!(series(&timed(vec![]), "nvml:0", SERIES_CAP), vec![]);
}

/// The sampler's most (an hour at 100 ms) comes down to the cap: runs of
/// samples merged, clock and power their mean, temperature its peak, and a
/// single thermal sample in a run still marks its point.
#[test]
fn a_long_gate_is_merged_down_to_the_cap_without_losing_a_short_limit() {
    let n = greta_runtime::Sampler::MAX_SAMPLES;
    let rs: Vec<Reading> = (0..n)
        .map(|i| {
            let mut r = reading(
                if i % 2 == 0 { 600.0 } else { 700.0 },
                700.0,
                Some(Limits {
                    thermal: i == 12_345,
                    ..Limits::default()
                }),
            );
            r.temp_c = Some(if i == 12_346 { 95.0 } else { 70.0 });
            r.sm_mhz = Some(if i < n / 2 { 2000 } else { 1000 });
            r
        })
        .collect();
    let s = summarize(&timed(rs), "nvml:0").unwrap();
    assert_eq!(s.samples, n);
    assert_eq!(s.series.len(), SERIES_CAP, "36 000 samples in runs of 60");
    let per = n / SERIES_CAP;
    let hot = 12_345 / per;
    for (k, p) in s.series.iter().enumerate() {
        assert!(
            (p.t_s - (k * per) as f64 * 0.1).abs() < 1e-6,
            "{k}: {}",
            p.t_s
        );
        assert_eq!(p.power_w, Some(650.0), "{k}: the mean of 600 and 700");
        assert_eq!(
            p.sm_mhz,
            Some(if k < SERIES_CAP / 2 { 2000.0 } else { 1000.0 })
        );
        let (temp, held) = if k == hot {
            (95.0, vec![Held::Thermal])
        } else {
            (70.0, vec![])
        };
        // The source gives reasons (none of them power): 700 W of 700 W is
        // not taken for the cap.
        assert_eq!((p.temp_c, &p.held), (Some(temp), &held), "{k}");
    }
    // A cap that does not divide the count still holds.
    let few = series(
        &timed((0..7).map(|_| reading(1.0, 2.0, None)).collect()),
        "nvml:0",
        3,
    );
    assert_eq!(few.len(), 3);
    assert!(few.iter().all(|p| p.held.is_empty()));
}

/// Read over time from an amdgpu sysfs tree whose `gpu_metrics` changes
/// between samples (the runtime's reader, the path `--sysroot` replays):
/// the series follows the card, the SPL bit marks the capped samples.
#[test]
fn tree_readings_over_time_become_the_series() {
    use greta_runtime::TelemetrySource as Source;
    let (t, pcis) = tree(1, ("32.0 GT/s", 16));
    let blob = |temp: u16, power: u16, clock: u16, spl: bool| {
        let mut b = vec![0xFFu8; 120];
        b[..4].copy_from_slice(&[120, 0, 1, 3]);
        b[6..8].copy_from_slice(&temp.to_le_bytes());
        b[22..24].copy_from_slice(&power.to_le_bytes());
        b[54..56].copy_from_slice(&clock.to_le_bytes());
        b[112..120].copy_from_slice(&(u64::from(spl) << 4).to_le_bytes());
        b
    };
    let mut src = AmdSysfsSource::new(t.path());
    let mut samples = Vec::new();
    for i in 0..5u16 {
        fs::write(
            pcis[0].join("gpu_metrics"),
            blob(60 + i, 200 + 10 * i, 2100 - 100 * i, i >= 3),
        )
        .unwrap();
        samples.push(Timed {
            at: Duration::from_millis(100 * u64::from(i)),
            readings: src.sample(),
        });
    }
    let s = summarize(&samples, "card0").unwrap();
    type Row = (Option<f64>, Option<f64>, Option<f64>, bool);
    let got: Vec<Row> = s
        .series
        .iter()
        .map(|p| (p.temp_c, p.power_w, p.sm_mhz, p.held.contains(&Held::Power)))
        .collect();
    let want: Vec<_> = (0..5u16)
        .map(|i| {
            (
                Some(f64::from(60 + i)),
                Some(f64::from(200 + 10 * i)),
                Some(f64::from(2100 - 100 * i)),
                i >= 3,
            )
        })
        .collect();
    assert_eq!(got, want);
}

/// The series is part of the results: written, read back the same, and
/// absent from files of gates with no series (older greta).
#[test]
fn the_series_round_trips_and_older_summaries_still_read() {
    let s = summary_of((0..3).map(|_| reading(1.0, 2.0, Some(POWER))).collect());
    let text = serde_json::to_string(&s).unwrap();
    assert!(text.contains("\"series\":[{\"t_s\":0.0,\"sm_mhz\":1980.0,\"power_w\":1.0,\"temp_c\":70.0,\"held\":[\"power\"]}"), "{text}");
    assert_eq!(serde_json::from_str::<Summary>(&text).unwrap(), s);
    let old = Summary {
        series: vec![],
        ..s
    };
    let text = serde_json::to_string(&old).unwrap();
    assert!(!text.contains("series"));
    assert_eq!(serde_json::from_str::<Summary>(&text).unwrap(), old);
}
