//! greta-report: `greta.smoke/v1` results as one self-contained HTML page
//! (`greta report`, `greta smoke --html`): per device each gate's rate as a
//! bar beside its floor, in-run ceiling and spec figure; for a node of
//! several devices a gates x devices grid coloured by each rate's ratio to
//! the node's median; and the history of a results directory, each gate's
//! rate over time per device with version changes marked.
//!
//! The page needs nothing from the network: inline SVG, a little inline CSS
//! and JS, no fonts or scripts from elsewhere. Every number drawn is also in
//! the page as text.

// Front door: reading runs (one file, a directory), and the two pages.
mod bars;
mod digest;
mod grid;
mod health;
mod history;
mod home;
mod html;
mod load;
mod node;
mod page;
mod trace;

pub use digest::{KEPT_CAP, NAMES_CAP};
pub use history::{render_history, History};
pub use home::without_home;
pub use load::{newest_in, read_run, Run, Skipped, DEVICE_CAP, DIR_ENTRY_CAP, FILE_CAP};
pub use page::{render_runs, Page, PAGE_BYTES, PAGE_RUNS};
