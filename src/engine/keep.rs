//! Keeping each check run's full output (zstd, capped) for `replay --offline
//! --reparse`; see [`crate::receipt::replay::keep_output`].

use super::Loop;
use crate::proc::Spools;

impl Loop<'_> {
    /// Keeps the check run's streams before their spools are removed. Best effort by
    /// design: a failure is reported on stderr and the run goes on (the receipt, not
    /// the kept output, is the record).
    pub(super) fn keep_check_output(
        &self,
        iteration: u32,
        attempt: u32,
        spools: &Spools,
    ) -> Option<crate::receipt::replay::KeptOutput> {
        let dir = self.ws.run_dir(&self.run_id);
        match crate::receipt::replay::keep_output(
            &dir,
            iteration,
            attempt,
            spools.source(crate::proc::Stream::Stdout),
            spools.source(crate::proc::Stream::Stderr),
        ) {
            Ok(kept) => kept,
            Err(e) => {
                self.say(&format!(
                    "cannot keep the check's output in {}: {e}",
                    dir.display()
                ));
                None
            }
        }
    }
}
