//! Streams and events: ordered queues of device work, and points in them.

use std::fmt;
use std::sync::Arc;

use cudarc::driver::{CudaEvent, CudaStream};

use crate::backend::{Backend, Device};
use crate::cuda::{driver_error, CudaDevice, StreamState};
use crate::error::{Error, Result};
use crate::sim::{SimEvent, SimStream};

/// An ordered queue of work on a [`Device`]: kernels launched on one stream run one after
/// another, in the order they were launched; work on different streams may run concurrently.
///
/// Every device has a [default stream](Device::default_stream), which the typed `launch`
/// functions and the buffer operations use; [`Device::new_stream`] makes more. Cheap to clone
/// (clones are the same stream), and it knows its device ([`Stream::device`]). On the CUDA
/// backend it is a CUDA stream of the device's context; on the simulator a queue that a worker
/// thread of its own runs in order (see [`Device::simulator`]), so that launches and copies
/// return before they have run there too, and streams run at the same time.
///
/// Buffers may be used on any stream of their device: a use on one stream waits for the earlier
/// conflicting uses of the same buffer on other streams (a read for the last write, a write for
/// every earlier use), so that streams need no manual ordering for the buffers they share.
/// Use [`Stream::record_event`] and [`Stream::wait_event`] to order other work.
#[derive(Clone)]
pub struct Stream {
    device: Device,
    kind: StreamKind,
}

#[derive(Clone)]
enum StreamKind {
    Cuda(Arc<StreamState>),
    Sim(Arc<SimStream>),
}

impl Device {
    /// The device's default stream: the one [`Launch`](crate::Launch)es of the typed `launch`
    /// functions, [`Device::upload`], [`Device::alloc`] and the buffer operations use. Cheap;
    /// every call returns the same stream.
    pub fn default_stream(&self) -> Stream {
        let kind = match self.backend() {
            Backend::Cuda(gpu) => StreamKind::Cuda(Arc::clone(gpu.default_stream())),
            Backend::Sim(sim) => StreamKind::Sim(Arc::clone(sim.default_stream())),
        };
        Stream {
            device: self.clone(),
            kind,
        }
    }

    /// A new stream of this device. On CUDA a new non-blocking stream of the device's context
    /// (with its own state for cancelling and reporting the failures of its launches); on the
    /// simulator a queue with a worker thread of its own (started when work is queued, ended
    /// when the stream has been idle for a second or its handles are gone).
    pub fn new_stream(&self) -> Result<Stream> {
        let kind = match self.backend() {
            Backend::Cuda(gpu) => StreamKind::Cuda(gpu.new_stream()?),
            Backend::Sim(sim) => StreamKind::Sim(sim.new_stream()),
        };
        Ok(Stream {
            device: self.clone(),
            kind,
        })
    }

    /// The cudarc stream of the device's [default stream](Device::default_stream) (from which the
    /// cudarc context can be reached), on the CUDA backend; `None` on the simulator.
    pub fn cudarc_stream(&self) -> Option<Arc<CudaStream>> {
        self.default_stream().cudarc_stream()
    }
}

impl Stream {
    /// The device the stream belongs to.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Records an event at the current end of the stream: it completes when all work issued to
    /// the stream so far has finished. Events record timing ([`Event::elapsed_ms`]).
    pub fn record_event(&self) -> Result<Event> {
        let kind = match &self.kind {
            StreamKind::Cuda(state) => EventKind::Cuda(state.record_event()?),
            StreamKind::Sim(stream) => {
                let event = SimEvent::new();
                stream.record(&event);
                EventKind::Sim(event)
            }
        };
        Ok(Event {
            device_id: self.device.id(),
            kind,
        })
    }

    /// Makes all work issued to this stream from now on wait until `event` has completed
    /// (`cuStreamWaitEvent`); the host does not wait. The event may come from any stream,
    /// also of another device. A simulator stream waits for a simulator event the same way (its
    /// worker waits). Between the backends the host waits instead: a simulator stream waiting for
    /// a CUDA event, or a CUDA stream for a simulator event, blocks the calling thread until the
    /// event has completed.
    pub fn wait_event(&self, event: &Event) -> Result<()> {
        match (&self.kind, &event.kind) {
            (StreamKind::Cuda(state), EventKind::Cuda(event)) => state.wait_event(event),
            (StreamKind::Cuda(_), EventKind::Sim(_)) | (StreamKind::Sim(_), EventKind::Cuda(_)) => {
                event.synchronize()
            }
            (StreamKind::Sim(stream), EventKind::Sim(event)) => {
                stream.wait_event(event);
                Ok(())
            }
        }
    }

    /// Blocks the host until all work issued to the stream so far has finished; returns an
    /// error of that work (a kernel fault) if there was one. Kernel panics and deadlocks found by
    /// the abort protocol are not errors of the stream: they are reported by their launches.
    pub fn synchronize(&self) -> Result<()> {
        match &self.kind {
            StreamKind::Cuda(state) => state.synchronize(),
            StreamKind::Sim(stream) => {
                stream.queue().synchronize();
                Ok(())
            }
        }
    }

    /// The cudarc stream, on the CUDA backend (`None` on the simulator): for issuing cudarc work
    /// ordered with this stream's launches.
    pub fn cudarc_stream(&self) -> Option<Arc<CudaStream>> {
        match &self.kind {
            StreamKind::Cuda(state) => Some(Arc::clone(state.cudarc())),
            StreamKind::Sim(_) => None,
        }
    }

    /// The CUDA device and stream state, on the CUDA backend.
    pub(crate) fn cuda(&self) -> Option<(&CudaDevice, &StreamState)> {
        match (&self.kind, self.device.backend()) {
            (StreamKind::Cuda(state), Backend::Cuda(gpu)) => Some((gpu, state)),
            _ => None,
        }
    }

    /// The simulator stream, on the simulator.
    pub(crate) fn sim(&self) -> Option<&Arc<SimStream>> {
        match &self.kind {
            StreamKind::Sim(stream) => Some(stream),
            StreamKind::Cuda(_) => None,
        }
    }

    /// Whether this is its device's default stream.
    pub fn is_default(&self) -> bool {
        match (&self.kind, self.device.backend()) {
            (StreamKind::Cuda(state), Backend::Cuda(gpu)) => state.is(gpu.default_stream()),
            (StreamKind::Sim(stream), Backend::Sim(sim)) => {
                Arc::ptr_eq(stream, sim.default_stream())
            }
            _ => false,
        }
    }
}

impl fmt::Debug for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stream")
            .field("device", &self.device.name())
            .field("default", &self.is_default())
            .finish()
    }
}

/// A point in a [`Stream`], from [`Stream::record_event`]: it completes when the work issued
/// to the stream before it has finished.
pub struct Event {
    device_id: u64,
    kind: EventKind,
}

enum EventKind {
    Cuda(CudaEvent),
    /// Completes when its stream's worker reaches it, with the host's clock then.
    Sim(Arc<SimEvent>),
}

impl Event {
    /// Blocks the host until the event has completed.
    pub fn synchronize(&self) -> Result<()> {
        match &self.kind {
            EventKind::Cuda(event) => event
                .synchronize()
                .map_err(|e| driver_error("cuEventSynchronize", e)),
            EventKind::Sim(event) => {
                event.wait();
                Ok(())
            }
        }
    }

    /// The milliseconds from this event to the `later` one, waiting for both: on CUDA the GPU
    /// time between the two points (`cuEventElapsedTime`, about half a microsecond resolution),
    /// on the simulator the host's wall-clock time between the moments the streams' workers
    /// reached the two points. Both events must come from the same device.
    pub fn elapsed_ms(&self, later: &Event) -> Result<f32> {
        if self.device_id != later.device_id {
            return Err(Error::InvalidArgument(
                "Event::elapsed_ms: the events were recorded on different devices".to_string(),
            ));
        }
        match (&self.kind, &later.kind) {
            (EventKind::Cuda(start), EventKind::Cuda(end)) => start
                .elapsed_ms(end)
                .map_err(|e| driver_error("cuEventElapsedTime", e)),
            (EventKind::Sim(start), EventKind::Sim(end)) => {
                let (start, end) = (start.wait(), end.wait());
                Ok(end.saturating_duration_since(start).as_secs_f32() * 1e3)
            }
            _ => Err(Error::InvalidArgument(
                "Event::elapsed_ms: the events come from different backends".to_string(),
            )),
        }
    }
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let backend = match self.kind {
            EventKind::Cuda(_) => "cuda",
            EventKind::Sim(_) => "simulator",
        };
        f.debug_struct("Event").field("backend", &backend).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simulator_streams_and_events() -> Result<()> {
        let device = Device::simulator();
        let default = device.default_stream();
        let other = device.new_stream()?;
        assert!(default.is_default());
        assert_eq!(other.device().id(), device.id());
        assert!(other.cudarc_stream().is_none());
        let start = default.record_event()?;
        other.wait_event(&start)?;
        // The stream's worker records the event when it gets to it: wait for that before the
        // host's sleep, which would otherwise not separate the two events on a loaded machine.
        start.synchronize()?;
        std::thread::sleep(std::time::Duration::from_millis(2));
        let end = other.record_event()?;
        end.synchronize()?;
        other.synchronize()?;
        let ms = start.elapsed_ms(&end)?;
        assert!(ms >= 1.0, "{ms}");
        let foreign = Device::simulator().default_stream().record_event()?;
        assert!(matches!(
            start.elapsed_ms(&foreign),
            Err(Error::InvalidArgument(_))
        ));
        assert!(format!("{other:?} {start:?}").contains("simulator"));
        Ok(())
    }

    #[test]
    fn handles_are_send_and_sync() {
        fn check<T: Send + Sync + Clone>() {}
        fn check_event<T: Send + Sync>() {}
        check::<Stream>();
        check_event::<Event>();
    }
}
