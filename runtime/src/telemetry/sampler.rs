//! A thread that reads a [`Source`] every period while a gate runs:
//! [`Sampler::start`] before the gate, [`Sampler::stop`] after it.

use super::Reading;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Where readings come from (NVML, amdgpu sysfs, a test's script).
pub trait Source: Send {
    /// One reading per device it watches.
    fn sample(&mut self) -> Vec<Reading>;
}

/// A reading and when it was taken, from the sampler's start.
#[derive(Clone, Debug, PartialEq)]
pub struct Timed {
    pub at: Duration,
    pub readings: Vec<Reading>,
}

/// A running sampler; [`Sampler::stop`] ends it and hands the samples back.
pub struct Sampler {
    stop: mpsc::Sender<()>,
    thread: JoinHandle<Vec<Timed>>,
}

impl Sampler {
    /// At most this many sample times are kept (an hour at 100 ms); later
    /// ones are dropped, so a long gate cannot grow memory without bound.
    pub const MAX_SAMPLES: usize = 36_000;

    /// Starts sampling `source` now and then every `period`.
    pub fn start(mut source: Box<dyn Source>, period: Duration) -> std::io::Result<Sampler> {
        let (stop, rx) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("greta-telemetry".into())
            .spawn(move || {
                let t0 = Instant::now();
                let mut out = Vec::new();
                loop {
                    if out.len() < Sampler::MAX_SAMPLES {
                        let readings = source.sample();
                        out.push(Timed {
                            at: t0.elapsed(),
                            readings,
                        });
                    }
                    match rx.recv_timeout(period) {
                        Err(RecvTimeoutError::Timeout) => continue,
                        // Asked to stop, or the owner is gone.
                        _ => return out,
                    }
                }
            })?;
        Ok(Sampler { stop, thread })
    }

    /// Stops the thread (after a last sample already taken) and returns
    /// every sample. A source that panicked yields no samples.
    pub fn stop(self) -> Vec<Timed> {
        let _ = self.stop.send(());
        self.thread.join().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Counting(u32);
    impl Source for Counting {
        fn sample(&mut self) -> Vec<Reading> {
            self.0 += 1;
            vec![Reading {
                device: "fake".into(),
                sm_mhz: Some(self.0),
                ..Default::default()
            }]
        }
    }

    #[test]
    fn samples_in_order_until_stopped() {
        let s = Sampler::start(Box::new(Counting(0)), Duration::from_millis(5)).unwrap();
        std::thread::sleep(Duration::from_millis(60));
        let v = s.stop();
        assert!(v.len() >= 3, "{} samples in 60 ms at 5 ms", v.len());
        let clocks: Vec<u32> = v.iter().map(|t| t.readings[0].sm_mhz.unwrap()).collect();
        let want: Vec<u32> = (1..=v.len() as u32).collect();
        assert_eq!(clocks, want);
        assert!(v.windows(2).all(|w| w[0].at <= w[1].at));
    }

    #[test]
    fn stop_returns_promptly_with_a_long_period() {
        let s = Sampler::start(Box::new(Counting(0)), Duration::from_secs(3600)).unwrap();
        let t = Instant::now();
        let v = s.stop();
        assert_eq!(v.len(), 1);
        assert!(t.elapsed() < Duration::from_secs(5));
    }
}
