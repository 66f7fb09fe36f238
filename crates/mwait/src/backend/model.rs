//! The loom model's hardware tier: an episode is a yield that returns `Woken`, i.e. a
//! wait that may end spuriously at any point, which is all the contract promises.
//! Outside the model its type is empty (see `sys::ModelHardware`).

use super::{CState, HardwareWait, HwWake};
use crate::primitive::AtomicU32;
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

impl HardwareWait for Model {
    fn wait_episode(
        &self,
        _word: &AtomicU32,
        _old: u32,
        _deadline_ns: u64,
        _cstate: CState,
    ) -> HwWake {
        self.0.episode();
        HwWake::Woken
    }
}
