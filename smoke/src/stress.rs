//! The `stress` gate: f16 GEMMs at full size for a configured time (the
//! vendor's where the backend has it, greta's own `gemm_f16` otherwise),
//! every interval's inputs fresh from a seed, sampled output tiles checked
//! against an f64 CPU product, and the sustained TFLOP/s with its spread
//! per interval, as DCGM's targeted_stress and RVS's gst report.

use crate::gates::{Gate, StressConfig};
use crate::results::StressSummary;
use greta_kernels::{HostBuf, Op};
use greta_runtime::{
    input_f16, sample_tiles, Operand, StressEngine, StressInterval, StressReport, StressRequest,
    TileSample,
};
use greta_runtime::{Backend, Job, RunOpts, RuntimeError};
use rayon::prelude::*;
use std::time::{Duration, Instant};

/// The request a stress gate makes of the backend.
pub fn request(
    gate: &Gate,
    cfg: &StressConfig,
    seed: u64,
    timeout: Duration,
) -> Option<StressRequest> {
    let Op::GemmF16 { m, n, k } = gate.op else {
        return None;
    };
    Some(StressRequest {
        m: u32::try_from(m).ok()?,
        n: u32::try_from(n).ok()?,
        k: u32::try_from(k).ok()?,
        duration: Duration::from_secs_f64(cfg.seconds),
        interval: Duration::from_secs_f64(cfg.interval_s),
        intervals: None,
        seed,
        tiles_per_interval: cfg.tiles,
        tile: cfg.tile,
        timeout,
    })
}

/// Runs the stress loop: the backend's own ([`Backend::stress`]) where it
/// has one, else greta's `gemm_f16` through [`Backend::run`].
pub fn run(backend: &mut dyn Backend, req: &StressRequest) -> Result<StressReport, RuntimeError> {
    match backend.stress(req) {
        Some(r) => r,
        None => via_run(backend, req),
    }
}

/// The stress loop over [`Backend::run`]: one submission per interval,
/// its dispatch count sized from the first, until the duration is spent.
fn via_run(backend: &mut dyn Backend, req: &StressRequest) -> Result<StressReport, RuntimeError> {
    let (m, n, k) = (req.m as usize, req.n as usize, req.k as usize);
    let op = Op::GemmF16 { m, n, k };
    let engine = StressEngine {
        source: "greta gemm_f16".into(),
        library: None,
        version: None,
        note: Some(format!(
            "the {} backend has no vendor BLAS path: greta's own gemm_f16 ran",
            backend.info().backend.as_str()
        )),
    };
    let start = Instant::now();
    let mut intervals = Vec::new();
    let mut repeats = 1u32;
    let mut seed = req.seed;
    loop {
        // Each element on its own (a counter-based hash): on every core.
        let inputs = [
            HostBuf::F16(
                (0..m * k)
                    .into_par_iter()
                    .map(|i| input_f16(seed, Operand::A, i as u64))
                    .collect(),
            ),
            HostBuf::F16(
                (0..k * n)
                    .into_par_iter()
                    .map(|i| input_f16(seed, Operand::B, i as u64))
                    .collect(),
            ),
        ];
        let mut outs = [HostBuf::poisoned(greta_kernels::DType::F32, m * n)];
        let opts = RunOpts {
            repeats,
            timeout: req.timeout,
            tuning: None,
        };
        let stats = backend.run(Job::new(&op, &inputs, &mut outs, &opts))?;
        let ns: u64 = stats.device_ns.iter().sum();
        let c = outs[0].as_f32().unwrap_or(&[]);
        let tiles = sample_tiles(req.m, req.n, req.tile, req.tiles_per_interval, seed)
            .into_iter()
            .map(|t| TileSample {
                tile: t,
                values: (0..t.rows)
                    .flat_map(|r| {
                        let at = (t.row + r) as usize * n + t.col as usize;
                        c.get(at..at + t.cols as usize).unwrap_or(&[]).to_vec()
                    })
                    .collect(),
            })
            .collect();
        intervals.push(StressInterval {
            seed,
            gemms: repeats,
            device_ns: ns,
            tiles,
        });
        if !req.more_after(intervals.len(), start.elapsed()) {
            break;
        }
        // Sized from the last interval's time per GEMM (the first carries
        // one-time costs).
        let per = (ns / u64::from(repeats)).max(1);
        repeats = (req.interval.as_nanos() as u64 / per).clamp(1, 1000) as u32;
        seed += 1;
    }
    Ok(StressReport { engine, intervals })
}

/// The tile's rows of A and columns of B for `seed`'s inputs, in f64
/// (each element made once, not once per product).
fn operands(seed: u64, t: &greta_runtime::Tile, n: u64, k: u64) -> (Vec<f64>, Vec<f64>) {
    let a = (0..u64::from(t.rows))
        .flat_map(|r| (0..k).map(move |p| (u64::from(t.row) + r) * k + p))
        .map(|i| f64::from(input_f16(seed, Operand::A, i).to_f32()))
        .collect();
    // Column-major: column c's k values together.
    let b = (0..u64::from(t.cols))
        .flat_map(|c| (0..k).map(move |p| p * n + u64::from(t.col) + c))
        .map(|i| f64::from(input_f16(seed, Operand::B, i).to_f32()))
        .collect();
    (a, b)
}

/// Checks one interval: its tiles must be exactly the sampled ones, each
/// within `tol` of the CPU product by norm (`‖got − ref‖ / ‖ref‖`), no
/// value NaN or infinite. `Err` names the interval's seed and the tile.
pub fn check_interval(req: &StressRequest, iv: &StressInterval, tol: f64) -> Result<u32, String> {
    let want = sample_tiles(req.m, req.n, req.tile, req.tiles_per_interval, iv.seed);
    let got: Vec<_> = iv.tiles.iter().map(|s| s.tile).collect();
    if got != want {
        return Err(format!(
            "seed {}: the backend returned tiles {got:?}, not the sampled {want:?}",
            iv.seed
        ));
    }
    // The tiles on every core; the first failing one (in order) is named.
    let tile = |s: &TileSample| -> Result<(), String> {
        let t = s.tile;
        if s.values.len() != (t.rows * t.cols) as usize {
            return Err(format!(
                "seed {}: tile at ({}, {}) has {} values, not {}",
                iv.seed,
                t.row,
                t.col,
                s.values.len(),
                t.rows * t.cols
            ));
        }
        let k = req.k as usize;
        let (a, b) = operands(iv.seed, &t, req.n.into(), req.k.into());
        let (mut diff, mut norm) = (0f64, 0f64);
        for r in 0..t.rows as usize {
            for c in 0..t.cols as usize {
                let g = s.values[r * t.cols as usize + c];
                if !g.is_finite() {
                    let (i, j) = (t.row as usize + r, t.col as usize + c);
                    return Err(format!("seed {}: C[{i}][{j}] = {g}", iv.seed));
                }
                let w: f64 = a[r * k..(r + 1) * k]
                    .iter()
                    .zip(&b[c * k..(c + 1) * k])
                    .map(|(x, y)| x * y)
                    .sum();
                diff += (f64::from(g) - w).powi(2);
                norm += w * w;
            }
        }
        let rel = (diff / norm.max(f64::MIN_POSITIVE)).sqrt();
        if rel > tol {
            return Err(format!(
                "seed {}: tile {}x{} at ({}, {}): relative error {rel:.3e} > {tol:.0e}",
                iv.seed, t.rows, t.cols, t.row, t.col
            ));
        }
        Ok(())
    };
    iv.tiles
        .par_iter()
        .map(tile)
        .collect::<Vec<_>>()
        .into_iter()
        .collect::<Result<(), String>>()?;
    Ok(iv.tiles.len() as u32)
}

/// Checks every interval and summarises the rates: TFLOP/s per interval
/// (min, median, max) and sustained (all work over all device time).
pub fn summarize(
    req: &StressRequest,
    report: &StressReport,
    tol: f64,
) -> (StressSummary, Result<(), String>) {
    let flops = 2.0 * f64::from(req.m) * f64::from(req.n) * f64::from(req.k);
    let mut rates: Vec<f64> = report
        .intervals
        .iter()
        .filter(|iv| iv.device_ns > 0)
        .map(|iv| f64::from(iv.gemms) * flops / iv.device_ns as f64 / 1e3)
        .collect();
    rates.sort_by(f64::total_cmp);
    let total_ns: u64 = report.intervals.iter().map(|iv| iv.device_ns).sum();
    let gemms: u64 = report.intervals.iter().map(|iv| u64::from(iv.gemms)).sum();
    let mut checked = 0u32;
    let mut clean = 0u32;
    let mut first: Option<String> = None;
    let total = report.intervals.len();
    // The intervals checked on every core, their verdicts taken in order.
    let verdicts: Vec<Result<u32, String>> = report
        .intervals
        .par_iter()
        .map(|iv| check_interval(req, iv, tol))
        .collect();
    for (i, v) in verdicts.into_iter().enumerate() {
        match v {
            Ok(n) => {
                checked += n;
                clean += 1;
            }
            Err(e) => {
                first.get_or_insert_with(|| format!("repeat {}/{total} ({e})", i + 1));
            }
        }
    }
    let verdict = match first {
        _ if total == 0 => Err("no interval ran".into()),
        None => Ok(()),
        Some(f) => Err(format!("{clean}/{total} clean repeats; first failure: {f}")),
    };
    let summary = StressSummary {
        engine: report.engine.source.clone(),
        library: report.engine.library.clone(),
        version: report.engine.version.clone(),
        note: report.engine.note.clone(),
        seconds: total_ns as f64 / 1e9,
        intervals: report.intervals.len() as u32,
        intervals_clean: clean,
        gemms,
        tiles_checked: checked,
        tflops_sustained: (total_ns > 0).then(|| gemms as f64 * flops / total_ns as f64 / 1e3),
        tflops_min: rates.first().copied(),
        tflops_median: rates.get(rates.len() / 2).copied(),
        tflops_max: rates.last().copied(),
    };
    (summary, verdict)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req() -> StressRequest {
        StressRequest {
            m: 40,
            n: 24,
            k: 16,
            duration: Duration::from_millis(1),
            interval: Duration::from_millis(1),
            intervals: None,
            seed: 5,
            tiles_per_interval: 3,
            tile: 8,
            timeout: Duration::from_secs(1),
        }
    }

    /// An interval as a correct device computes it (f32 accumulation).
    fn honest(req: &StressRequest, seed: u64, ns: u64) -> StressInterval {
        let tiles = sample_tiles(req.m, req.n, req.tile, req.tiles_per_interval, seed)
            .into_iter()
            .map(|t| TileSample {
                tile: t,
                values: (0..t.rows * t.cols)
                    .map(|x| {
                        let (i, j) = (t.row + x / t.cols, t.col + x % t.cols);
                        (0..req.k)
                            .map(|p| {
                                input_f16(seed, Operand::A, u64::from(i * req.k + p)).to_f32()
                                    * input_f16(seed, Operand::B, u64::from(p * req.n + j)).to_f32()
                            })
                            .sum::<f32>()
                    })
                    .collect(),
            })
            .collect();
        StressInterval {
            seed,
            gemms: 10,
            device_ns: ns,
            tiles,
        }
    }

    #[test]
    fn honest_intervals_pass_and_the_spread_is_reported() {
        let r = req();
        let report = StressReport {
            engine: StressEngine {
                source: "cublasGemmEx".into(),
                library: Some("/x/libcublas.so.12".into()),
                version: Some("12.4.5".into()),
                note: None,
            },
            intervals: vec![
                honest(&r, 5, 1000),
                honest(&r, 6, 2000),
                honest(&r, 7, 4000),
            ],
        };
        let (s, v) = summarize(&r, &report, 1e-2);
        assert_eq!(v, Ok(()));
        assert_eq!(s.tiles_checked, 9);
        let flops = 2.0 * 40.0 * 24.0 * 16.0 * 10.0;
        assert_eq!(s.tflops_max, Some(flops / 1000.0 / 1e3));
        assert_eq!(s.tflops_median, Some(flops / 2000.0 / 1e3));
        assert_eq!(s.tflops_min, Some(flops / 4000.0 / 1e3));
        assert_eq!(s.tflops_sustained, Some(3.0 * flops / 7000.0 / 1e3));
        assert_eq!(s.gemms, 30);
    }

    #[test]
    fn a_wrong_tile_is_caught_and_named() {
        let r = req();
        let good = honest(&r, 9, 1000);
        // A tile computed from the previous interval's inputs (a stale
        // output) and a tile with one value badly off: both caught.
        let mut stale = good.clone();
        stale.tiles[1] = honest(&r, 8, 1000).tiles[1].clone();
        stale.tiles[1].tile = good.tiles[1].tile;
        let e = check_interval(&r, &stale, 1e-2).unwrap_err();
        let t = good.tiles[1].tile;
        assert!(
            e.contains(&format!("at ({}, {})", t.row, t.col)) && e.starts_with("seed 9"),
            "{e}"
        );
        let mut off = good.clone();
        off.tiles[2].values[3] += 5.0;
        assert!(check_interval(&r, &off, 1e-2).is_err());
        let mut nan = good.clone();
        nan.tiles[0].values[0] = f32::NAN;
        assert!(check_interval(&r, &nan, 1e-2).unwrap_err().contains("NaN"));
        // Tiles other than the sampled ones are refused, not trusted.
        let mut moved = good.clone();
        moved.tiles.swap(0, 1);
        assert!(check_interval(&r, &moved, 1e-2)
            .unwrap_err()
            .contains("not the sampled"));
        assert_eq!(check_interval(&r, &good, 1e-2), Ok(3));
        let report = StressReport {
            engine: StressEngine {
                source: "greta gemm_f16".into(),
                library: None,
                version: None,
                note: Some("none found".into()),
            },
            intervals: vec![good, off],
        };
        let (s, v) = summarize(&r, &report, 1e-2);
        let why = v.unwrap_err();
        assert!(
            why.starts_with("1/2 clean repeats; first failure: repeat 2/2 (seed 9: tile"),
            "{why}"
        );
        assert_eq!(s.intervals, 2);
    }
}
