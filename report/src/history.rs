pub fn render_history(_runs: &[crate::Run], _skipped: &[crate::Skipped], _source: &str) -> String {
    String::new()
}
