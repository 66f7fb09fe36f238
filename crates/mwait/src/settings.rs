//! [`Settings`]: the process's settings from code, applied before the first wait.

use crate::backend::kind::Backend;
use crate::detect::Capabilities;
use crate::select::plan::missing_reason;
use crate::sys::settings::{self, Applied};
use std::fmt;

/// How a notifier orders its store before its look for parked waiters.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NotifyMode {
    /// The asymmetric barrier where the kernel offers it (`membarrier` on Linux):
    /// a notify is a plain store and a load, a park runs the barrier. The default.
    Membarrier,
    /// Every notify is a locked instruction or a fence, every park a fence: what
    /// `MWAIT_MEMBARRIER=0` asks for.
    Fenced,
}

/// The process's settings from code: what `MWAIT_BACKEND`, `MWAIT_DISABLE` and
/// `MWAIT_MEMBARRIER` say from the environment, said by the program, and applied
/// before its first wait.
///
/// The environment's variables, where set, come first (they are the operator's
/// word): `MWAIT_BACKEND` over [`backend`](Self::backend), `MWAIT_MEMBARRIER` over
/// [`notify_mode`](Self::notify_mode); the backends of
/// [`disable`](Self::disable) are turned off beside `MWAIT_DISABLE`'s.
///
/// # Examples
///
/// ```
/// use mwait::platform::NotifyMode;
/// use mwait::{Backend, Settings};
///
/// // Early in main, before anything waits.
/// Settings::new()
///     .disable(Backend::Kernel)
///     .notify_mode(NotifyMode::Fenced)
///     .apply()
///     .expect("nothing has waited yet");
/// assert!(mwait::selection().disabled.contains(&Backend::Kernel));
/// // Once the process has chosen, settings are refused.
/// assert!(Settings::new().apply().is_err());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[must_use = "settings do nothing until `apply` is called"]
pub struct Settings {
    backend: Option<Backend>,
    disable: Vec<Backend>,
    notify: Option<NotifyMode>,
}

impl Settings {
    /// Nothing set: every choice automatic.
    pub fn new() -> Settings {
        Settings::default()
    }

    /// Use `backend` for every wait (as `MWAIT_BACKEND` does). It must be offered by
    /// this machine ([`Capabilities::offers`]), else [`apply`](Self::apply) refuses.
    pub fn backend(mut self, backend: Backend) -> Settings {
        self.backend = Some(backend);
        self
    }

    /// Turn `backend` off for the automatic choice (as `MWAIT_DISABLE` does); may be
    /// called for several backends.
    pub fn disable(mut self, backend: Backend) -> Settings {
        if !self.disable.contains(&backend) {
            self.disable.push(backend);
        }
        self
    }

    /// How notifiers order their store (as `MWAIT_MEMBARRIER` does).
    pub fn notify_mode(mut self, mode: NotifyMode) -> Settings {
        self.notify = Some(mode);
        self
    }

    /// Makes these the process's settings, replacing any applied before.
    ///
    /// # Errors
    ///
    /// [`SettingsError::AlreadyChosen`] once the process has made its choice (a wait,
    /// [`selection`](crate::selection), [`prepare`](crate::prepare) or a park came
    /// first); [`SettingsError::NotOffered`] for a backend this machine does not
    /// offer; [`SettingsError::Conflict`] for a backend both forced and turned off.
    pub fn apply(self) -> Result<(), SettingsError> {
        if let Some(b) = self.backend {
            let caps = Capabilities::for_waits();
            if !caps.offers(b) {
                return Err(SettingsError::NotOffered {
                    backend: b,
                    reason: missing_reason(caps, b),
                });
            }
            if self.disable.contains(&b) {
                return Err(SettingsError::Conflict(b));
            }
        }
        settings::apply(Applied {
            backend: self.backend.map(Backend::name),
            disable: self.disable.iter().map(|b| b.name()).collect(),
            membarrier: self.notify.map(|m| m == NotifyMode::Membarrier),
        })
        .map_err(|()| SettingsError::AlreadyChosen)
    }
}

/// Why [`Settings::apply`] refused.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SettingsError {
    /// The process has already made its choice: settings apply before the first wait.
    AlreadyChosen,
    /// This machine does not offer the backend.
    NotOffered {
        /// The backend asked for.
        backend: Backend,
        /// Why it is not offered (the missing CPUID bit or device).
        reason: String,
    },
    /// The backend is both forced and turned off.
    Conflict(Backend),
}

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SettingsError::AlreadyChosen => f.write_str(
                "mwait's settings are final: this process has already chosen its backend \
                 (apply settings before the first wait)",
            ),
            SettingsError::NotOffered { backend, reason } => {
                write!(
                    f,
                    "backend {backend}: this machine does not offer it ({reason})"
                )
            }
            SettingsError::Conflict(b) => write!(f, "backend {b} is both forced and disabled"),
        }
    }
}

impl std::error::Error for SettingsError {}
