//! Prints what greta's telemetry readers see on this machine (NVML and
//! amdgpu sysfs under `/`, or under the directory given as the first
//! argument), for comparison with the vendor tools (`nvidia-smi -q`,
//! `amd-smi`): scripts/gpu/telemetry.sh runs both in one call.

use greta_runtime::{
    amd_cards, bus_gpu_count, kfd_gpu_count, AmdSysfsSource, Nvml, NvmlSource, Sampler,
};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

fn main() {
    let root = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"));
    println!("root: {}", root.display());
    println!(
        "PCI bus GPUs: AMD {:?}, NVIDIA {:?}; KFD GPU nodes: {:?}",
        bus_gpu_count(&root, 0x1002),
        bus_gpu_count(&root, 0x10de),
        kfd_gpu_count(&root)
    );
    match Nvml::open() {
        Err(e) => println!("NVML: {e}"),
        Ok(n) => {
            println!("NVML: {} ({})", n.loaded.path.display(), n.loaded.why);
            let n = Arc::new(n);
            let count = n.count();
            println!("nvmlDeviceGetCount_v2: {count:?}");
            for i in 0..count.unwrap_or(0) {
                println!("GPU {i}: {:?}", n.reading(i));
                println!("GPU {i} link: {:?}", n.link(i));
                let (c, bad) = n.counters(i);
                for c in c {
                    println!("GPU {i} counter: {} {} = {}", c.block, c.kind, c.value);
                }
                for b in bad {
                    println!("GPU {i} counter unreadable: {b}");
                }
            }
            match NvmlSource::new(n.clone()) {
                Ok(src) => sample(Box::new(src)),
                Err(e) => println!("NVML sampler: {e}"),
            }
        }
    }
    let cards = amd_cards(&root);
    println!("amdgpu cards: {}", cards.len());
    for c in &cards {
        println!("{}: gpu_metrics {:?}", c.name, c.metrics());
        println!("{}: {:?}", c.name, c.reading());
        println!("{}: link {:?}", c.name, c.link());
        println!("{}: counters {:?}", c.name, c.counters());
    }
    if !cards.is_empty() {
        sample(Box::new(AmdSysfsSource::new(&root)));
    }
}

fn sample(src: Box<dyn greta_runtime::TelemetrySource>) {
    match Sampler::start(src, Duration::from_millis(100)) {
        Err(e) => println!("sampler: {e}"),
        Ok(s) => {
            std::thread::sleep(Duration::from_millis(1000));
            let v = s.stop();
            println!("sampler: {} samples in 1 s at 100 ms", v.len());
            if let Some(last) = v.last() {
                for r in &last.readings {
                    println!("  last: {r:?}");
                }
            }
        }
    }
}
