//! The progress bar of a summarizer that calls a model: shown on a
//! terminal only, and cleared when it goes.

/// A progress bar that leaves nothing on the terminal when it goes.
pub struct ClearOnDrop(indicatif::ProgressBar);

impl Drop for ClearOnDrop {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}

impl ClearOnDrop {
    /// `call DONE/PLANNED`.
    pub fn set(&self, done: usize, planned: usize) {
        self.0.set_length(planned as u64);
        self.0.set_position(done as u64);
    }
}

/// A spinner saying `message: call N/M [elapsed]` (hidden when standard
/// error is not a terminal), cleared when dropped.
pub fn calls(message: String) -> ClearOnDrop {
    let bar = indicatif::ProgressBar::new(1).with_message(message);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} {msg}: call {pos}/{len} [{elapsed}]")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
    );
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    ClearOnDrop(bar)
}
