//! The loom model's hardware tier: an episode is a yield that returns `Woken`, i.e. a
//! wait that may end spuriously at any point, which is all the contract promises.
//! Outside the model its type is empty (see `sys::ModelHardware`).

use super::{CState, HwWake, LineMonitor};
use crate::sys::Watchable;
use crate::sys::{self, ModelHardware};

/// The stand-in tier.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Model(ModelHardware);

impl Model {
    /// The stand-in, in the loom model only.
    pub(crate) fn new() -> Option<Model> {
        sys::model_hardware().map(Model)
    }
}

impl LineMonitor for Model {
    fn episode(
        &self,
        _word: &impl Watchable,
        _changed: impl Fn() -> bool,
        _deadline_ns: u64,
        _cstate: CState,
    ) -> HwWake {
        self.0.episode();
        HwWake::Woken
    }
}
