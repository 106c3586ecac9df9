//! `greta env list | remove NAME`.

use crate::envs::EnvRoot;
use crate::exit::Exit;
use anyhow::Result;
use greta_vocab::Visible;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(clap::Subcommand)]
pub enum Command {
    /// List greta envs with their profile and receipt.
    List {
        /// Machine-readable list on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Remove an env (waits for no one: fails if an install holds it).
    Remove { name: String },
}

pub fn run(args: Args) -> Result<Exit> {
    let root = EnvRoot::default_root()?;
    match args.command {
        Command::List { json } => {
            let envs = root.list()?;
            if json {
                let v: Vec<_> = envs
                    .iter()
                    .map(|(name, path, r)| match r {
                        Ok(r) => serde_json::json!({"name": name, "path": path, "profile": r.profile, "backend": r.backend, "python": r.python.version, "wheels": r.wheels.len(), "created": r.created, "lock_sha256": r.lockfile.sha256}),
                        Err(e) => serde_json::json!({"name": name, "path": path, "error": format!("{e:#}")}),
                    })
                    .collect();
                crate::outln!(
                    "{}",
                    serde_json::to_string_pretty(
                        &serde_json::json!({"schema": "greta.envs/v1", "dir": root.dir, "envs": v})
                    )?
                );
            } else if envs.is_empty() {
                crate::outln!("no greta envs under {}", root.dir.display());
            } else {
                for (name, path, r) in &envs {
                    match r {
                        // Names, paths and receipts are files on disk: shown,
                        // never acted on by the terminal.
                        Ok(r) => crate::outln!(
                            "{:<16} {:<10} python {:<8} {} wheels  {}  {}",
                            Visible(name),
                            Visible(&r.profile),
                            Visible(&r.python.version.to_string()),
                            r.wheels.len(),
                            Visible(&r.created.to_string()),
                            Visible(&path.display().to_string())
                        ),
                        Err(e) => {
                            crate::outln!(
                                "{:<16} (no valid receipt: {})  {}",
                                Visible(name),
                                Visible(&format!("{e:#}")),
                                Visible(&path.display().to_string())
                            )
                        }
                    }
                }
            }
            Ok(Exit::Pass)
        }
        Command::Remove { name } => {
            let p = root.remove(&name)?;
            eprintln!("removed {}", p.display());
            Ok(Exit::Pass)
        }
    }
}
