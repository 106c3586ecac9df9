//! `greta lock` (not yet implemented).

use crate::exit::Exit;

#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<Exit> {
    eprintln!("greta lock: not yet implemented");
    Ok(Exit::Undecided)
}
