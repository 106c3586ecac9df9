//! The child's side: one [`Request`] served in this process.

use super::DEVICES_SCHEMA;
use super::{
    ChildError, DevicesAnswer, ErrorKind, GpuBackend, Reply, Request, RuntimeAnswer,
    RuntimeRequest, SmokeRequest, TuneRequest, RUNTIME_SCHEMA,
};
use crate::session::{run_profile, BackendChoice};
use greta_runtime::RuntimeError;
use greta_vocab::DevicesError;

/// What serving a request produced: the reply to print, the exit code,
/// and whether a device was lost (a hung GPU may block the driver's
/// teardown at exit: the caller then leaves with `_exit` after printing).
#[derive(Debug)]
pub struct Served {
    pub reply: Reply,
    pub code: u8,
    pub device_lost: bool,
}

/// Serves `req` here (the child calls this; so may a test).
pub fn serve(req: Request) -> Served {
    match req {
        Request::Devices(d) => devices(d.backend),
        Request::Smoke(s) => smoke(&s),
        Request::Tune(t) => tune(&t),
        Request::Runtime(r) => runtime(&r),
    }
}

/// Opens the backend's runtime library here, in the child, and says which.
fn runtime(req: &RuntimeRequest) -> Served {
    let (runtime, error) = match greta_runtime::runtime_library(req.backend.kind(), &req.env_roots)
    {
        Ok(r) => (Some(r), None),
        Err(e) => (None, Some(e.to_string())),
    };
    Served {
        code: if runtime.is_some() { 0 } else { 2 },
        reply: Reply::Runtime(Box::new(RuntimeAnswer {
            schema: RUNTIME_SCHEMA.into(),
            backend: req.backend.as_str().into(),
            runtime,
            error,
        })),
        device_lost: false,
    }
}

impl Served {
    /// A request the child turned down or failed to serve: an error reply,
    /// exit code 2, no device lost.
    fn refused(kind: ErrorKind, message: String) -> Served {
        Served {
            reply: Reply::Error(ChildError::new(kind, message)),
            code: 2,
            device_lost: false,
        }
    }
}

/// The child tunes on HIP and CUDA only (`greta smoke --tune` on Vulkan
/// runs in the parent); any other backend is refused as a usage error
/// saying what the child `does`.
fn hip_or_cuda(backend: BackendChoice, does: &str) -> Result<(), Served> {
    if matches!(backend, BackendChoice::Hip | BackendChoice::Cuda) {
        Ok(())
    } else {
        Err(Served::refused(
            ErrorKind::Usage,
            format!("the GPU child {does} --backend hip or cuda only"),
        ))
    }
}

fn tune(req: &TuneRequest) -> Served {
    if let Err(refused) = hip_or_cuda(req.backend, "tunes") {
        return refused;
    }
    match req.options().and_then(|o| crate::tune::tune_gpu_here(&o)) {
        Ok((r, lost)) => Served {
            // A lost device leaves with _exit (its teardown may block).
            device_lost: lost,
            code: 0,
            reply: Reply::Tune(Box::new(r)),
        },
        Err(e) => Served::refused(ErrorKind::of(&e), e.to_string()),
    }
}

/// The kind of a listing failure, from the runtime's typed error.
fn devices_error_of(e: &RuntimeError) -> DevicesError {
    match e {
        RuntimeError::NoDevice(_) => DevicesError::NoDevice,
        RuntimeError::LoaderMissing(_) => DevicesError::LoaderMissing,
        _ => DevicesError::Other,
    }
}

fn devices(backend: GpuBackend) -> Served {
    let (devices, error, error_kind) = match greta_runtime::list_devices(backend.kind()) {
        Ok(d) => (d, None, None),
        Err(e) => (vec![], Some(e.to_string()), Some(devices_error_of(&e))),
    };
    let no_device = matches!(
        error_kind,
        Some(DevicesError::NoDevice | DevicesError::LoaderMissing)
    );
    let code = if devices.is_empty() { 2 } else { 0 };
    Served {
        reply: Reply::Devices(DevicesAnswer {
            schema: DEVICES_SCHEMA.into(),
            backend: backend.as_str().into(),
            devices,
            error,
            no_device,
            error_kind,
        }),
        code,
        device_lost: false,
    }
}

/// Every backend's gates run here: HIP and CUDA for `greta smoke`, any of
/// them (Vulkan too) for `greta install`'s proof step, which asks the child
/// directly. `auto` here is Vulkan, as in [`run_profile`]: the machine's
/// choice is made before the request (the `greta` binary makes it).
fn smoke(req: &SmokeRequest) -> Served {
    let outcome = req.options().and_then(|opts| run_profile(&opts));
    match outcome {
        Ok(outcome) => Served {
            code: outcome.report.status.exit_code(),
            device_lost: outcome.report.devices.iter().any(|d| d.lost.is_some()),
            reply: Reply::Report(Box::new(outcome.report)),
        },
        Err(e) => Served::refused(ErrorKind::of(&e), e.to_string()),
    }
}
