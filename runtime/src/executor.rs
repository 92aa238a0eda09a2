//! A minimal executor, so that programs need no async runtime to await launches.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};

/// Wakes the thread blocked in [`block_on`].
struct ThreadWaker(Thread);

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// Runs `fut` to completion on the current thread and returns its output.
///
/// The thread sleeps (parks) while the future is pending and is woken by the future's waker, for
/// instance by the completion callback of a CUDA [`Launch`](crate::Launch).
///
/// ```no_run
/// # async fn work() -> u32 { 7 }
/// assert_eq!(gpu_async::block_on(work()), 7);
/// ```
pub fn block_on<F: Future>(fut: F) -> F::Output {
    let mut fut = pin!(fut);
    let waker = Waker::from(Arc::new(ThreadWaker(thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(output) = fut.as_mut().poll(&mut cx) {
            return output;
        }
        // A wake-up that came before this point leaves the unpark token set, so this returns at
        // once; spurious returns just poll again.
        thread::park();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pending until another thread sets the flag and wakes it.
    struct Flag(Arc<std::sync::Mutex<(bool, Option<Waker>)>>);

    impl Future for Flag {
        type Output = u32;
        fn poll(self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u32> {
            let mut state = self.0.lock().unwrap_or_else(|e| e.into_inner());
            if state.0 {
                Poll::Ready(42)
            } else {
                state.1 = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }

    #[test]
    fn runs_ready_and_woken_futures() {
        assert_eq!(block_on(async { 1 + 1 }), 2);
        let state = Arc::new(std::sync::Mutex::new((false, None::<Waker>)));
        let remote = Arc::clone(&state);
        let setter = thread::spawn(move || {
            thread::sleep(std::time::Duration::from_millis(20));
            let waker = {
                let mut s = remote.lock().unwrap_or_else(|e| e.into_inner());
                s.0 = true;
                s.1.take()
            };
            if let Some(w) = waker {
                w.wake();
            }
        });
        assert_eq!(block_on(Flag(state)), 42);
        assert!(setter.join().is_ok());
    }
}
