//! The controller command (no subcommand). Owned by the controller engineer; this placeholder only keeps
//! the binary whole until the controller lands.

use crate::flags::Flags;

pub async fn run(flags: Flags) -> anyhow::Result<()> {
    let _ = flags;
    anyhow::bail!("controller not implemented yet")
}
