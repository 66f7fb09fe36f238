//! Helpers shared by the loom test files.

/// `loom::model` with a preemption bound of 3 unless `LOOM_MAX_PREEMPTIONS` says
/// otherwise: three preemptions cover every two-sided race here, and unbounded the
/// two-waiter models run for hours.
pub fn model<F: Fn() + Sync + Send + 'static>(f: F) {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(3);
    }
    b.check(f);
}
